/* SPDX-License-Identifier: MIT */
/* Progress in flight in words: the STATUS= line and the terminal bar (daemon/report-progress.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "report.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static void test_progress_status_line(void **state) {
        char buf[256];
        uint64_t total = (uint64_t)(29.3 * GiB), done = (uint64_t)(0.421 * total) + 1;

        report_format_status(buf, sizeof(buf), "vol-0123456789abcdef0", done, total, 0, 187 * MiB);
        assert_true(strncmp(buf,
                            "vol-0123456789abcdef0: 42.1% hydrated (12.3 GiB of 29.3 GiB), 187 "
                            "MiB/s, about ",
                            strlen("vol-0123456789abcdef0: 42.1% hydrated (12.3 GiB of 29.3 GiB), "
                                   "187 MiB/s, about ")) == 0);
        assert_non_null(strstr(buf, " left"));
        report_format_status(buf, sizeof(buf), "k", 0, GiB, 0, 0);
        assert_string_equal(buf, "k: 0.0% hydrated (0 B of 1.0 GiB), measuring rate");
        /* the snapshot's block list: of what it stores, and the volume's size beside */
        report_format_status(buf, sizeof(buf), "k", (uint64_t)(24.6 * GiB), 60 * GiB, 500 * GiB, 0);
        assert_string_equal(buf, "k: 40.9% hydrated (24.6 GiB of 60.0 GiB stored in the "
                                 "snapshot; 500.0 GiB volume), measuring rate");
}

static void test_progress_bar_fits_width(void **state) {
        char buf[256];

        for (unsigned width = 40; width <= 200; width += 7) {
                report_format_bar(buf, sizeof(buf), width, 3 * GiB, 10 * GiB, 150 * MiB);
                assert_true(strlen(buf) <= width);
                assert_non_null(strstr(buf, " 30.0%"));
                assert_non_null(strstr(buf, "3.0/10.0 GiB"));
                if (width >= 56) /* narrower, the rate and the ETA make room for the bar */
                        assert_non_null(strstr(buf, "150 MiB/s"));
        }
        report_format_bar(buf, sizeof(buf), 80, 5 * GiB, 10 * GiB, 0);
        assert_non_null(strstr(buf, "ETA ?"));
        assert_true(buf[0] == '[');
}

/* A narrow terminal: never wider than it (a wrapped line leaves garbage behind "\r"), and the
 * percentage always there. */
static void test_progress_format_bar_narrow(void **state) {
        char buf[256];

        for (unsigned width = 1; width <= 120; width++) {
                report_format_bar(buf, sizeof(buf), width, 3 * GiB, 10 * GiB, 150 * MiB);
                assert_true(strlen(buf) <= width);
                if (width >= 6)
                        assert_non_null(strstr(buf, "30.0%"));
        }
        report_format_bar(buf, sizeof(buf), 18, 3 * GiB, 10 * GiB, 150 * MiB);
        assert_string_equal(buf, "  30.0%");
        report_format_bar(buf, sizeof(buf), 19, 3 * GiB, 10 * GiB, 150 * MiB);
        assert_string_equal(buf, "[###.......]  30.0%");
        report_format_bar(buf, sizeof(buf), 33, 3 * GiB, 10 * GiB, 150 * MiB);
        assert_string_equal(buf, "[###.......]  30.0%  3.0/10.0 GiB");
        report_format_bar(buf, sizeof(buf), 5, 10 * GiB, 10 * GiB, 150 * MiB);
        assert_string_equal(buf, "100.0");
}

/* Amounts in the unit of the total: 256 MiB is not "0.0/0.2 GiB". */
static void test_progress_format_bar_units(void **state) {
        char buf[256];

        report_format_bar(buf, sizeof(buf), 100, 64 * MiB, 256 * MiB, 150 * MiB);
        assert_non_null(strstr(buf, "64.0/256.0 MiB"));
        report_format_bar(buf, sizeof(buf), 100, 512 * 1024, 1024 * 1024, 150 * MiB);
        assert_non_null(strstr(buf, "0.5/1.0 MiB"));
        report_format_bar(buf, sizeof(buf), 100, 100 * 1024, 512 * 1024, 150 * MiB);
        assert_non_null(strstr(buf, "100.0/512.0 KiB"));
        report_format_bar(buf, sizeof(buf), 100, 3 * GiB, 2048 * GiB, 150 * MiB);
        assert_non_null(strstr(buf, "0.0/2.0 TiB"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_progress_status_line),
                cmocka_unit_test(test_progress_bar_fits_width),
                cmocka_unit_test(test_progress_format_bar_narrow),
                cmocka_unit_test(test_progress_format_bar_units),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
