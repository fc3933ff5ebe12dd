/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for config-match.c: [Match] with its VolumeId=, DeviceName= and KernelName= globs,
 * which devices a file applies to, the spellings of a mapping name, and the patterns refused
 * because fnmatch(3) would never match what was meant.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "fixtures-config.h"
#include "test-util.h"
#include "util.h"

static void test_config_match_skips_other_device(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/50-g.conf",
                   "[Match]\nVolumeId=vol-0fedcba9876543210\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_volume_id_glob(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/50-f.conf",
                   "[Match]\nVolumeId=vol-0123*\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
}

static void test_config_match_kernel_name(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/50-k.conf",
                   "[Match]\nKernelName=nvme2n?\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_device_name_spellings(void **state) {
        static const char *const spellings[] = {"sdf", "/dev/sdf", "xvdf", "/dev/xvdf"};
        Fixture *f = *state;

        for (size_t i = 0; i < ELEMENTSOF(spellings); i++) {
                _cleanup_free_ char *content = xasprintf(
                        "[Match]\nDeviceName=%s\n[Hydrate]\nQueueDepth=5\n", spellings[i]);

                write_file(f, ETC "/hydrate.conf", content);
                for (size_t j = 0; j < ELEMENTSOF(spellings); j++) {
                        MatchTarget t = dev_f;

                        t.device_name = spellings[j];
                        assert_int_equal(queue_depth_for(f, &t), 5);
                }
                assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
        }
}

static void test_config_device_name_matches(void **state) {
        static const struct {
                const char *pattern;
                const char *name;
                bool match;
        } cases[] = {
                {"sdf", "sdf", true},       {"sdf", "/dev/sdf", true}, {"/dev/sdf", "xvdf", true},
                {"xvdf", "/dev/sdf", true}, {"xvd*", "sdf", true},     {"sd*", "/dev/xvdf", true},
                {"/dev/xvd?", "sdg", true}, {"sd[f-h]", "xvdg", true}, {"*f", "xvdf", true},
                {"/dev/*", "sdb", true},    {"sdg", "sdf", false},     {"sdf", "sdf1", false},
                {"nvme*", "sdf", false},    {"xvd*", "hdf", false},    {"sdf", NULL, false},
                {"sdf", "", false},         {"*", "/dev/", false},     {"", "sdf", false},
                {NULL, "sdf", false},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                print_message("%s vs %s\n", strempty(cases[i].pattern), strempty(cases[i].name));
                assert_int_equal(device_name_matches(cases[i].pattern, cases[i].name),
                                 cases[i].match);
        }
}

static void test_config_match_list_is_or(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nVolumeId=vol-0aaa  \t vol-0123456789abcdef0 vol-0bbb\n"
                   "[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
}

static void test_config_match_keys_are_and(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nVolumeId=vol-0*\nKernelName=nvme9n1\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), HYDRATE_DEFAULT_QUEUE_DEPTH);
        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nVolumeId=vol-0*\nKernelName=nvme1n1\nDeviceName=sdf\n"
                   "[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
}

static void test_config_match_repeated_lines_append(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nKernelName=nvme9n1\nKernelName=nvme1n1\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
}

static void test_config_match_empty_value_clears(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nKernelName=nvme9n1\nKernelName=\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_after_hydrate(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=5\n[Match]\nDeviceName=xvdg\n");
        assert_int_equal(queue_depth_for(f, &dev_f), HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_empty_section_applies(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Match]\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_unknown_target_fields(void **state) {
        const MatchTarget unknown = {.volume_id = "vol-0123456789abcdef0", .kernel_name = ""};
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Match]\nDeviceName=*\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &unknown), HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_int_equal(queue_depth_for(f, NULL), HYDRATE_DEFAULT_QUEUE_DEPTH);
        write_file(f, ETC "/hydrate.conf", "[Match]\nKernelName=*\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &unknown), HYDRATE_DEFAULT_QUEUE_DEPTH);
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, NULL), 5); /* no [Match]: every device */
}

static void test_config_error_unknown_match_key(void **state) {
        Fixture *f = *state;

        write_file(f, USR "/hydrate.conf", "[Match]\nVolumeID=vol-*\n");
        assert_load_fails(f, -EINVAL, USR "/hydrate.conf",
                          ":2: unknown key 'VolumeID' in section [Match]");
}

#define UNCLOSED "'[' without a closing ']' (a literal '[' is written \\[)"

static void test_config_error_invalid_pattern(void **state) {
        static const struct {
                const char *line;
                const char *why;
        } cases[] = {
                {"KernelName=[", UNCLOSED},
                {"KernelName=nvme[0-9n1", UNCLOSED},
                {"KernelName=[]", UNCLOSED},
                {"KernelName=[!]", UNCLOSED},
                {"KernelName=nvme\\", "a '\\' at the end escapes nothing"}, /* echoed as \\ */
                {"KernelName=[[:digits:]]", "unknown character class"},
                {"KernelName=[[:alpha:]", UNCLOSED},
                {"KernelName=[[:alpha]", "'[:' without its ':]'"},
                {"KernelName=nvme[9-0]n1", "a reversed range matches nothing"},
                {"KernelName=[[:digit:]-9]", "a character class cannot bound a range"},
                {"KernelName=[[.ab.]]", "a collating element must be a single character"},
                {"VolumeId=vol-[0-9", UNCLOSED},
                {"DeviceName=/dev/sd[f", UNCLOSED},
                {"KernelName=/dev/nvme1n1",
                 "kernel names contain no '/': nvme1n1, not /dev/nvme1n1"},
                {"VolumeId=*/vol-0123", "volume ids contain no '/'"},
                {"DeviceName=/dev/disk/by-id/x",
                 "mapping names contain no '/' after a leading /dev/"},
        };
        Fixture *f = *state;

        /* fnmatch() would take each silently, and never match what was meant. */
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *content =
                        xasprintf("[Match]\nKernelName=nvme*\n%s nvme1n1\n", cases[i].line);
                const char *eq = strchr(cases[i].line, '=');
                const char *shown = streq_ptr(eq + 1, "nvme\\") ? "nvme\\\\" : eq + 1;
                _cleanup_free_ char *expected =
                        xasprintf(":3: invalid pattern '%s' in %.*s (%s)", shown,
                                  (int)(eq + 1 - cases[i].line), cases[i].line, cases[i].why);

                print_message("%s\n", cases[i].line);
                write_file(f, ETC "/hydrate.conf.d/10-m.conf", content);
                assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/10-m.conf", expected);
        }
}

static void test_config_valid_patterns(void **state) {
        static const char *const patterns[] = {
                "nvme[0-9]n1",
                "nvme?n*",
                "[]n]vme1n1",
                "[!a-m]vme1n1",
                "nvme[[:digit:]]n1",
                "\\nvme1n1",
                "nvme1n[1-]",
                "[[.n.]]vme1n1",
                "[[=n=]]vme1n1",
                "nvme1n[\\]1]",
                "*[[:alpha:][:digit:]]",
        };
        Fixture *f = *state;

        for (size_t i = 0; i < ELEMENTSOF(patterns); i++) {
                _cleanup_free_ char *content =
                        xasprintf("[Match]\nKernelName=%s\n[Hydrate]\nQueueDepth=5\n", patterns[i]);

                print_message("%s\n", patterns[i]);
                write_file(f, ETC "/hydrate.conf", content);
                assert_int_equal(queue_depth_for(f, &dev_f), 5);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_config_match_skips_other_device),
                fixture_test(test_config_match_volume_id_glob),
                fixture_test(test_config_match_kernel_name),
                fixture_test(test_config_match_device_name_spellings),
                cmocka_unit_test(test_config_device_name_matches),
                fixture_test(test_config_match_list_is_or),
                fixture_test(test_config_match_keys_are_and),
                fixture_test(test_config_match_repeated_lines_append),
                fixture_test(test_config_match_empty_value_clears),
                fixture_test(test_config_match_after_hydrate),
                fixture_test(test_config_match_empty_section_applies),
                fixture_test(test_config_match_unknown_target_fields),
                fixture_test(test_config_error_unknown_match_key),
                fixture_test(test_config_error_invalid_pattern),
                fixture_test(test_config_valid_patterns),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
