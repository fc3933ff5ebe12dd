/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for config-parse.c: one file from its bytes to its settings, with sections, lines
 * and comments as systemd has them, exact line numbers, the first error of a file as
 * "FILE:LINE: ...", bytes of the file escaped in messages, and config_parse_buffer() on memory.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "fixtures-config.h"
#include "test-util.h"
#include "util.h"

static void test_config_later_wins_within_file(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Hydrate]\nQueueDepth=4\nQueueDepth=6\n[Match]\n[Hydrate]\nQueueDepth=12\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 12);
}

static void test_config_indented_and_crlf_lines(void **state) {
        Fixture *f = *state;
        HydrateSettings e;

        /* Indentation is not an inih continuation line; CRLF files and a BOM work. */
        write_file(
                f, ETC "/hydrate.conf",
                "\xef\xbb\xbf[Hydrate]\r\n  QueueDepth=4\r\n\tRateLimit = 1M\r\n   Enabled=no\r\n");
        hydrate_settings_init(&e);
        e.queue_depth = 4;
        e.rate_limit = 1 << 20;
        e.enabled = false;
        assert_loads(f, &dev_f, &e);
}

static void test_config_error_unknown_section(void **state) {
        Fixture *f = *state;

        /* An empty section never reaches inih's handler: still an error, at its header. */
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=4\n\n[Hydrat]\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":4: unknown section [Hydrat]");
        write_file(f, ETC "/hydrate.conf", "[Network]\nQueueDepth=4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":1: unknown section [Network]");
}

static void test_config_error_malformed_section(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate\nQueueDepth=4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":1: malformed section header '[Hydrate'");
}

static void test_config_error_missing_equals(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth 4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":2: expected 'Key=Value', '[Section]' or a comment, got 'QueueDepth 4'");
}

static void test_config_error_colon_separator(void **state) {
        Fixture *f = *state;

        /* inih would take "Key: value" silently; systemd does not. */
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nEnabled=yes\nQueueDepth: 4\n");
        assert_load_fails(
                f, -EINVAL, ETC "/hydrate.conf",
                ":3: expected 'Key=Value', '[Section]' or a comment, got 'QueueDepth: 4'");
}

static void test_config_error_key_before_section(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "QueueDepth=4\n[Hydrate]\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":1: key 'QueueDepth' before any section header");
}

static char *line_of(size_t length, char c) {
        char *s = malloc(length + 1);

        assert_non_null(s);
        memset(s, c, length);
        s[length] = '\0';
        return s;
}

static void test_config_error_line_too_long(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *pad = line_of(200 - strlen("VolumeId="), '*');
        _cleanup_free_ char *content = xasprintf("[Match]\n# long\nVolumeId=%s\n", pad);

        write_file(f, ETC "/hydrate.conf.d/30-long.conf", content);
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/30-long.conf",
                          ":3: line too long (200 characters, at most 199)");
}

static void test_config_longest_line_keeps_line_numbers(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *comment = line_of(CONFIG_LINE_MAX, '#');
        _cleanup_free_ char *content = xasprintf("[Hydrate]\n%s\nQueueDepth=5\nOops\n", comment);

        /* inih's own string reader would count a 199-character line as two. */
        write_file(f, ETC "/hydrate.conf", content);
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":4: expected 'Key=Value', '[Section]' or a comment, got 'Oops'");
}

static void test_config_error_nul_byte(void **state) {
        static const char content[] = "[Hydrate]\nQueueDepth=4\0garbage\n";
        Fixture *f = *state;
        _cleanup_free_ char *path = fixture_path(f, ETC "/hydrate.conf");
        FILE *fp;

        mkdir_parents(path);
        fp = fopen(path, "we");
        assert_non_null(fp);
        assert_int_equal(fwrite(content, 1, sizeof(content) - 1, fp), sizeof(content) - 1);
        assert_int_equal(fclose(fp), 0);
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":2: line contains a NUL byte");
}

#define COMMENT_ERROR \
        ": comments must be on a line of their own ('#' or ';' at the start of the line)"

static void test_config_error_inline_comment_after_hydrate_value(void **state) {
        static const char *const lines[] = {
                "RateLimit=100M ; note", "RateLimit=100M\t;note", "RateLimit=100M ;",
                "QueueDepth=4 # four",   "Enabled=no ;",          "BlockSize= ; default",
        };
        Fixture *f = *state;

        /* inih would strip " ; note" silently, and hand over "100M" as if nothing followed. */
        for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
                _cleanup_free_ char *content = xasprintf("[Hydrate]\n%s\n", lines[i]);

                print_message("%s\n", lines[i]);
                write_file(f, ETC "/hydrate.conf.d/60-data.conf", content);
                assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf",
                                  ":2" COMMENT_ERROR);
        }
        write_file(f, ETC "/hydrate.conf.d/60-data.conf", "[Hydrate] ; main\nQueueDepth=4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf", ":1" COMMENT_ERROR);
}

static void test_config_error_inline_comment_after_match_pattern(void **state) {
        Fixture *f = *state;

        /* Not the three patterns "sdf", "#" and "data". */
        write_file(f, ETC "/hydrate.conf.d/60-data.conf",
                   "# data volume\n[Match]\nDeviceName=sdf # data\n[Hydrate]\nQueueDepth=5\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf", ":3" COMMENT_ERROR);
        write_file(f, ETC "/hydrate.conf.d/60-data.conf",
                   "[Match]\nVolumeId=vol-0123456789abcdef0 ; data\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf", ":2" COMMENT_ERROR);
        write_file(f, ETC "/hydrate.conf.d/60-data.conf", "[Match]\nKernelName=nvme1n1\t#x\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf", ":2" COMMENT_ERROR);
}

static void test_config_error_comment_character_in_value(void **state) {
        static const struct {
                const char *line;
                char c;
        } cases[] = {
                {"RateLimit=100M#x", '#'}, {"QueueDepth=4;x", ';'}, {"Enabled=yes#", '#'},
                {"BlockSize=#4K", '#'},    {"Queue#Depth=4", '#'},  {"[Hydr;ate]", ';'},
        };
        Fixture *f = *state;

        /* No key or value can hold '#' or ';', so one glued to a value is a mistake too. */
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *content = xasprintf("[Hydrate]\n%s\n", cases[i].line);
                _cleanup_free_ char *expected =
                        xasprintf(":2: invalid character '%c' in '%s' "
                                  "('#' and ';' may only start a comment line)",
                                  cases[i].c, cases[i].line);

                print_message("%s\n", cases[i].line);
                write_file(f, ETC "/hydrate.conf", content);
                assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", expected);
        }
        write_file(f, ETC "/hydrate.conf", "[Match]\nDeviceName=sdf;sdg\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":2: invalid character ';' in 'DeviceName=sdf;sdg' "
                          "('#' and ';' may only start a comment line)");
}

static void test_config_indented_comment_lines(void **state) {
        Fixture *f = *state;
        HydrateSettings e;

        write_file(f, ETC "/hydrate.conf",
                   "   # leading spaces\n\t; a tab\n[Match]\n  #DeviceName=sdg\n"
                   "DeviceName=sdf\n[Hydrate]\n    ;QueueDepth=9\r\n  \t # RateLimit=1M ; x\n"
                   "QueueDepth=5\n  #\n  ;\n");
        hydrate_settings_init(&e);
        e.queue_depth = 5;
        assert_loads(f, &dev_f, &e);
}

static void test_config_error_comment_names_first_line(void **state) {
        Fixture *f = *state;

        /* The first mistake wins, whichever kind: line 2 here, then line 3. */
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=4 ; x\nBlockSize=3\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":2" COMMENT_ERROR);
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nNope=1\nQueueDepth=4 ; x\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":2: unknown key 'Nope' in section [Hydrate]");
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\r\nQueueDepth=4\r\n\r\nRateLimit=1M ;x\r\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":4" COMMENT_ERROR);
}

static void test_config_error_first_one_wins(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nRateLimit=lots\nNope=1\n[Bad]\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":2: invalid value 'lots' for RateLimit= "
                          "(expected bytes per second such as 200M, or 0, off or none)");
}

static void test_config_error_in_file_that_does_not_match(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/40-other.conf",
                   "[Match]\nVolumeId=vol-nothing-matches-this\n[Hydrate]\nEnabled=perhaps\n");
        assert_load_fails(
                f, -EINVAL, ETC "/hydrate.conf.d/40-other.conf",
                ":4: invalid value 'perhaps' for Enabled= (expected a boolean: yes or no)");
}

static void test_config_error_control_bytes_escaped(void **state) {
        static const struct {
                const char *content;
                const char *expected;
        } cases[] = {
                {"[Hydrate]\nQueueDepth=\x1b[2J\n",
                 ":2: invalid value '\\x1b[2J' for QueueDepth= (expected auto or an integer from "
                 "1 to 1024)"},
                {"[Hydrate]\nQueue\x1b]0;x\x07"
                 "Depth=1\n",
                 ":2: invalid character ';' in 'Queue\\x1b]0;x\\aDepth=1' ('#' and ';' may only "
                 "start a comment line)"},
                {"[Hydrate]\n\x1b[31mQueueDepth=1\n",
                 ":2: unknown key '\\x1b[31mQueueDepth' in section [Hydrate]"},
                {"[Match]\nVolume\rId=x\n", ":2: unknown key 'Volume\\rId' in section [Match]"},
                {"\x1b[1m=1\n", ":1: key '\\x1b[1m' before any section header"},
                {"[Hydrate\x08\x08]\n", ":1: unknown section [Hydrate\\b\\b]"},
                {"[\x1b\n", ":1: malformed section header '[\\x1b'"},
                {"[Hydrate]\n\x9b"
                 "2J\n",
                 ":2: expected 'Key=Value', '[Section]' or a comment, got '\\x9b2J'"},
                {"[Hydrate]\nHotPaths=/a \x1b[2J\n",
                 ":2: invalid path '\\x1b[2J' in HotPaths= (expected absolute paths separated "
                 "by spaces)"},
                {"[Match]\nKernelName=\x1b[\n",
                 ":2: invalid pattern '\\x1b[' in KernelName= ('[' without a closing ']' (a "
                 "literal '[' is written \\[))"},
        };
        Fixture *f = *state;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                print_message("case %zu\n", i);
                write_file(f, ETC "/hydrate.conf", cases[i].content);
                assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", cases[i].expected);
        }
}

static void test_config_error_file_name_escaped(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *err = NULL, *expected = NULL;
        HydrateSettings s;

        write_file(f, ETC "/hydrate.conf.d/\x1b[2J.conf", "[Hydrate]\nQueueDepth=0\n");
        hydrate_settings_init(&s);
        assert_int_equal(load(f, &dev_f, &s, &err), -EINVAL);
        expected = xasprintf("%s/" ETC "/hydrate.conf.d/\\x1b[2J.conf:2: invalid value '0' for "
                             "QueueDepth= (expected auto or an integer from 1 to 1024)",
                             f->root);
        assert_string_equal(err, expected);
}

static void test_config_parse_buffer(void **state) {
        static const char data[] = "[Hydrate]\nQueueDepth=5\nRateLimit=1M-and-more";
        _cleanup_free_ char *err = NULL;
        HydrateSettings s;

        /* Not NUL-terminated, and named as the caller likes. */
        hydrate_settings_init(&s);
        assert_int_equal(config_parse_buffer("mem.conf", data, strlen("[Hydrate]\nQueueDepth=5"),
                                             &dev_f, &s, &err),
                         0);
        assert_null(err);
        assert_int_equal(s.queue_depth, 5);
        assert_int_equal(config_parse_buffer("mem.conf", data, strlen(data), &dev_f, &s, &err),
                         -EINVAL);
        assert_string_equal(err, "mem.conf:3: invalid value '1M-and-more' for RateLimit= "
                                 "(expected bytes per second such as 200M, or 0, off or none)");
        assert_int_equal(s.queue_depth, 5); /* untouched */
        free(err);
        err = NULL;
        assert_int_equal(config_parse_buffer("empty", NULL, 0, NULL, &s, &err), 0);
        assert_null(err);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_config_later_wins_within_file),
                fixture_test(test_config_indented_and_crlf_lines),
                fixture_test(test_config_error_unknown_section),
                fixture_test(test_config_error_malformed_section),
                fixture_test(test_config_error_missing_equals),
                fixture_test(test_config_error_colon_separator),
                fixture_test(test_config_error_key_before_section),
                fixture_test(test_config_error_line_too_long),
                fixture_test(test_config_longest_line_keeps_line_numbers),
                fixture_test(test_config_error_nul_byte),
                fixture_test(test_config_error_inline_comment_after_hydrate_value),
                fixture_test(test_config_error_inline_comment_after_match_pattern),
                fixture_test(test_config_error_comment_character_in_value),
                fixture_test(test_config_indented_comment_lines),
                fixture_test(test_config_error_comment_names_first_line),
                fixture_test(test_config_error_first_one_wins),
                fixture_test(test_config_error_in_file_that_does_not_match),
                fixture_test(test_config_error_control_bytes_escaped),
                fixture_test(test_config_error_file_name_escaped),
                fixture_test(test_config_parse_buffer),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
