/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for parse.c: what sizes, booleans and integers are accepted and rejected, and the
 * exact text of the byte and duration formatters that STATUS= and the CLI show, and of the
 * escaping that makes a file's bytes safe to print.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "parse.h"
#include "util.h"

#define SENTINEL UINT64_C(0xdeadbeef)

static void assert_size(const char *s, uint64_t expected) {
        uint64_t v = SENTINEL;

        assert_int_equal(parse_size(s, &v), 0);
        assert_true(v == expected);
}

static void assert_size_fails(const char *s, int error) {
        uint64_t v = SENTINEL;

        assert_int_equal(parse_size(s, &v), error);
        assert_true(v == SENTINEL); /* untouched on failure */
}

static void test_parse_size_plain(void **state) {
        assert_size("0", 0);
        assert_size("4096", 4096);
        assert_size("007", 7);
        assert_size("18446744073709551615", UINT64_MAX);
}

static void test_parse_size_suffixes(void **state) {
        assert_size("1B", 1);
        assert_size("1K", 1024);
        assert_size("128K", 128 * 1024);
        assert_size("1KiB", 1024);
        assert_size("1M", UINT64_C(1) << 20);
        assert_size("1MiB", UINT64_C(1) << 20);
        assert_size("2G", UINT64_C(2) << 30);
        assert_size("2GiB", UINT64_C(2) << 30);
        assert_size("1T", UINT64_C(1) << 40);
        assert_size("3TiB", UINT64_C(3) << 40);
        assert_size("0M", 0);
}

static void test_parse_size_suffix_case(void **state) {
        assert_size("4k", 4096);
        assert_size("1mib", UINT64_C(1) << 20);
        assert_size("1GIB", UINT64_C(1) << 30);
        assert_size("5b", 5);
}

static void test_parse_size_overflow(void **state) {
        assert_size_fails("18446744073709551616", -ERANGE);
        assert_size_fails("99999999999999999999999", -ERANGE);
        assert_size("16777215T", UINT64_C(16777215) << 40);
        assert_size_fails("16777216T", -ERANGE);
        assert_size("17179869183G", UINT64_C(17179869183) << 30);
        assert_size_fails("17179869184G", -ERANGE);
        assert_size("18014398509481983K", UINT64_C(18014398509481983) << 10);
        assert_size_fails("18014398509481984K", -ERANGE);
}

static void test_parse_size_garbage(void **state) {
        static const char *const bad[] = {
                "",    " 1",    "1 ", "-1",  "+1",  "1.5M", "1KB", "K",   "0x10",
                "1 M", "1MiBs", "1P", "1e3", "one", "1K1",  "\t1", "1\n", "1MB",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                print_message("parse_size(\"%s\")\n", bad[i]);
                assert_size_fails(bad[i], -EINVAL);
        }
        assert_size_fails(NULL, -EINVAL);
}

static void test_parse_boolean_true(void **state) {
        static const char *const yes[] = {"1", "yes", "y", "true", "t", "on", "YES", "True", "ON"};

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                bool b = false;

                assert_int_equal(parse_boolean(yes[i], &b), 0);
                assert_true(b);
        }
}

static void test_parse_boolean_false(void **state) {
        static const char *const no[] = {"0", "no", "n", "false", "f", "off", "NO", "False", "Off"};

        for (size_t i = 0; i < ELEMENTSOF(no); i++) {
                bool b = true;

                assert_int_equal(parse_boolean(no[i], &b), 0);
                assert_false(b);
        }
}

static void test_parse_boolean_garbage(void **state) {
        static const char *const bad[] = {"", "2", "yess", " yes", "yes ", "enabled", "nope", "-1"};
        bool b = true;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(parse_boolean(bad[i], &b), -EINVAL);
        assert_int_equal(parse_boolean(NULL, &b), -EINVAL);
        assert_true(b); /* untouched */
}

static void test_parse_unsigned_range(void **state) {
        uint64_t v = SENTINEL;

        assert_int_equal(parse_unsigned("0", 0, 10, &v), 0);
        assert_true(v == 0);
        assert_int_equal(parse_unsigned("1024", 1, 1024, &v), 0);
        assert_true(v == 1024);
        assert_int_equal(parse_unsigned("18446744073709551615", 0, UINT64_MAX, &v), 0);
        assert_true(v == UINT64_MAX);

        v = SENTINEL;
        assert_int_equal(parse_unsigned("1025", 1, 1024, &v), -ERANGE);
        assert_int_equal(parse_unsigned("0", 1, 1024, &v), -ERANGE);
        assert_int_equal(parse_unsigned("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
        assert_true(v == SENTINEL);
}

static void test_parse_unsigned_garbage(void **state) {
        static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "1k", "0x1", "1.0", "ten"};
        uint64_t v = SENTINEL;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(parse_unsigned(bad[i], 0, UINT64_MAX, &v), -EINVAL);
        assert_int_equal(parse_unsigned(NULL, 0, UINT64_MAX, &v), -EINVAL);
        assert_true(v == SENTINEL);
}

static void assert_bytes(uint64_t bytes, const char *expected) {
        char buf[FORMAT_BYTES_MAX];

        assert_string_equal(format_bytes(buf, sizeof(buf), bytes), expected);
}

static void test_parse_format_bytes(void **state) {
        assert_bytes(0, "0 B");
        assert_bytes(512, "512 B");
        assert_bytes(1023, "1023 B");
        assert_bytes(1024, "1.0 KiB");
        assert_bytes(1536, "1.5 KiB");
        assert_bytes(12595, "12.3 KiB");
        assert_bytes(UINT64_C(187) << 20, "187.0 MiB");
        assert_bytes(UINT64_C(13207024435), "12.3 GiB");
        assert_bytes(UINT64_C(31460378214), "29.3 GiB");
        assert_bytes(UINT64_C(5) << 40, "5.0 TiB");
        assert_bytes(UINT64_C(3) << 50, "3.0 PiB");
        assert_bytes(UINT64_MAX, "16.0 EiB");
}

static void test_parse_format_bytes_rounding(void **state) {
        /* Just below a unit boundary: never "1024.0 KiB". */
        assert_bytes((UINT64_C(1) << 20) - 1, "1.0 MiB");
        assert_bytes((UINT64_C(1) << 30) - 1, "1.0 GiB");
        assert_bytes(UINT64_C(1048524), "1023.9 KiB");
}

static void test_parse_format_bytes_small_buffer(void **state) {
        char buf[4];

        assert_string_equal(format_bytes(buf, sizeof(buf), UINT64_C(187) << 20), "187");
}

static void assert_duration(uint64_t seconds, const char *expected) {
        char buf[FORMAT_DURATION_MAX];

        assert_string_equal(format_duration(buf, sizeof(buf), seconds), expected);
}

static void test_parse_format_duration_seconds(void **state) {
        assert_duration(0, "0s");
        assert_duration(42, "42s");
        assert_duration(59, "59s");
}

static void test_parse_format_duration_minutes(void **state) {
        assert_duration(60, "1 min");
        assert_duration(89, "1 min");
        assert_duration(90, "2 min");
        assert_duration(180, "3 min");
        assert_duration(3569, "59 min");
}

static void test_parse_format_duration_hours(void **state) {
        assert_duration(3570, "1h"); /* rounds to 60 min */
        assert_duration(3600, "1h");
        assert_duration(4320, "1h 12min");
        assert_duration(86369, "23h 59min");
}

static void test_parse_format_duration_days(void **state) {
        assert_duration(86370, "1d"); /* rounds to 24 h */
        assert_duration(2 * 86400 + 3 * 3600, "2d 3h");
        assert_duration(2 * 86400 + 3 * 3600 + 1799, "2d 3h");
        assert_duration(2 * 86400 + 3 * 3600 + 1800, "2d 4h");
        assert_duration(5 * 86400, "5d");
        assert_duration(UINT64_MAX, "213503982334601d 7h");
}

static void assert_cescape(const char *s, size_t n, const char *expected) {
        char buf[CESCAPE_MAX(16)];

        assert_true(n <= 16);
        assert_string_equal(cescape(buf, sizeof(buf), s, n), expected);
}

static void test_parse_cescape(void **state) {
        char all[256], buf[CESCAPE_MAX(255)];

        assert_cescape("", 0, "");
        assert_cescape("nvme1n1 [a-z]*", 14, "nvme1n1 [a-z]*"); /* printable ASCII as is */
        assert_cescape("\x1b[2J\x01", 9, "\\x1b[2J\\x01");
        assert_cescape("\033[31mred", 11, "\\x1b[31mred");
        assert_cescape("a\tb\r\n\a\b\f\v", 15, "a\\tb\\r\\n\\a\\b\\f\\v");
        assert_cescape("back\\slash", 10, "back\\\\slash");
        assert_cescape("caf\xc3\xa9 \x7f\x9b", 9, "caf\\xc3\\xa9 \\x7f\\x9b");
        assert_cescape("abcdef", 3, "abc"); /* @n bytes at most */
        assert_cescape("ab\0cd", 5, "ab");  /* and up to the NUL */

        /* Every byte but NUL comes out as printable ASCII, and CESCAPE_MAX() is enough. */
        for (int i = 1; i < 256; i++)
                all[i - 1] = (char)i;
        cescape(buf, sizeof(buf), all, 255);
        for (size_t i = 0; buf[i]; i++)
                assert_true(buf[i] >= 0x20 && buf[i] < 0x7f);
        assert_true(strlen(buf) < sizeof(buf));
        assert_null(strstr(buf, "..."));
}

static void test_parse_cescape_small_buffer(void **state) {
        char buf[8];

        /* Cut at a whole escape, marked. */
        assert_string_equal(cescape(buf, sizeof(buf), "abcdefgh", 8), "abcd...");
        assert_string_equal(cescape(buf, sizeof(buf), "abcdefg", 7), "abcdefg");
        assert_string_equal(cescape(buf, sizeof(buf), "ab\x1b", 3), "ab\\x1b");
        assert_string_equal(cescape(buf, sizeof(buf), "ab\x1b\x1b", 4), "ab...");
        assert_string_equal(cescape(buf, sizeof(buf), "a\x1b\x1b", 3), "a...");
        assert_string_equal(cescape(buf, sizeof(buf), "\x1b\x1bxx", 4), "\\x1b...");
        assert_string_equal(cescape(buf, 4, "abcd", 4), "...");
        assert_string_equal(cescape(buf, 3, "abcd", 4), "ab");
        assert_string_equal(cescape(buf, 1, "abcd", 4), "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_size_plain),
                cmocka_unit_test(test_parse_size_suffixes),
                cmocka_unit_test(test_parse_size_suffix_case),
                cmocka_unit_test(test_parse_size_overflow),
                cmocka_unit_test(test_parse_size_garbage),
                cmocka_unit_test(test_parse_boolean_true),
                cmocka_unit_test(test_parse_boolean_false),
                cmocka_unit_test(test_parse_boolean_garbage),
                cmocka_unit_test(test_parse_unsigned_range),
                cmocka_unit_test(test_parse_unsigned_garbage),
                cmocka_unit_test(test_parse_format_bytes),
                cmocka_unit_test(test_parse_format_bytes_rounding),
                cmocka_unit_test(test_parse_format_bytes_small_buffer),
                cmocka_unit_test(test_parse_format_duration_seconds),
                cmocka_unit_test(test_parse_format_duration_minutes),
                cmocka_unit_test(test_parse_format_duration_hours),
                cmocka_unit_test(test_parse_format_duration_days),
                cmocka_unit_test(test_parse_cescape),
                cmocka_unit_test(test_parse_cescape_small_buffer),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
