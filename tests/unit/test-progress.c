/* SPDX-License-Identifier: MIT */
/* Progress arithmetic: sliding-window rate, ETA, honest percent, and the rendered lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "progress.h"

#define SEC UINT64_C(1000000)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static void test_progress_rate_steady(void **state) {
        Progress p;

        progress_init(&p, 0, 0);
        assert_int_equal(progress_rate(&p), 0); /* one sample: no rate yet */
        for (uint64_t t = 1; t <= 5; t++)
                progress_sample(&p, t * SEC, t * 100 * MiB);
        assert_int_equal(progress_rate(&p), 100 * MiB);
}

static void test_progress_rate_follows_recent_window(void **state) {
        Progress p;
        uint64_t bytes = 0, t;

        /* 20 s at 200 MiB/s, then 12 s at 10 MiB/s: the window (10 s) sees only the slow part. */
        progress_init(&p, 0, 0);
        for (t = 1; t <= 20; t++)
                progress_sample(&p, t * SEC, bytes += 200 * MiB);
        for (; t <= 32; t++)
                progress_sample(&p, t * SEC, bytes += 10 * MiB);
        assert_int_equal(progress_rate(&p), 10 * MiB);
}

static void test_progress_rate_ring_wraps(void **state) {
        Progress p;

        progress_init(&p, 0, 0);
        for (uint64_t i = 1; i <= 3 * PROGRESS_SAMPLES; i++)
                progress_sample(&p, i * SEC / 2, i * MiB);
        assert_int_equal(p.n, PROGRESS_SAMPLES);
        assert_int_equal(progress_rate(&p), 2 * MiB);
}

static void test_progress_eta(void **state) {
        assert_int_equal(progress_eta(0, 100 * MiB, 10 * MiB), 10);
        assert_int_equal(progress_eta(95 * MiB, 100 * MiB, 10 * MiB), 1); /* rounds up */
        assert_int_equal(progress_eta(100 * MiB, 100 * MiB, 0), 0);
        assert_true(progress_eta(0, 100 * MiB, 0) == PROGRESS_ETA_UNKNOWN);
}

static void test_progress_permille_never_early_100(void **state) {
        assert_int_equal(progress_permille(0, 1000), 0);
        assert_int_equal(progress_permille(421, 1000), 421);
        assert_int_equal(progress_permille(99999, 100000), 999);
        assert_int_equal(progress_permille(100000, 100000), 1000);
}

static void test_progress_status_line(void **state) {
        char buf[256];
        uint64_t total = (uint64_t)(29.3 * GiB), done = (uint64_t)(0.421 * total) + 1;

        progress_format_status(buf, sizeof(buf), "vol-0123456789abcdef0", done, total, 187 * MiB);
        assert_true(strncmp(buf,
                            "vol-0123456789abcdef0: 42.1% hydrated (12.3 GiB of 29.3 GiB), 187 "
                            "MiB/s, about ",
                            strlen("vol-0123456789abcdef0: 42.1% hydrated (12.3 GiB of 29.3 GiB), "
                                   "187 MiB/s, about ")) == 0);
        assert_non_null(strstr(buf, " left"));
        progress_format_status(buf, sizeof(buf), "k", 0, GiB, 0);
        assert_string_equal(buf, "k: 0.0% hydrated (0 B of 1.0 GiB), measuring rate");
}

static void test_progress_bar_fits_width(void **state) {
        char buf[256];

        for (unsigned width = 40; width <= 200; width += 7) {
                progress_format_bar(buf, sizeof(buf), width, 3 * GiB, 10 * GiB, 150 * MiB);
                assert_true(strlen(buf) <= width);
                assert_non_null(strstr(buf, " 30.0%"));
                assert_non_null(strstr(buf, "3.0/10.0 GiB"));
                if (width >= 56) /* narrower, the rate and the ETA make room for the bar */
                        assert_non_null(strstr(buf, "150 MiB/s"));
        }
        progress_format_bar(buf, sizeof(buf), 80, 5 * GiB, 10 * GiB, 0);
        assert_non_null(strstr(buf, "ETA ?"));
        assert_true(buf[0] == '[');
}

/* A narrow terminal: never wider than it (a wrapped line leaves garbage behind "\r"), and the
 * percentage always there. */
static void test_progress_format_bar_narrow(void **state) {
        char buf[256];

        for (unsigned width = 1; width <= 120; width++) {
                progress_format_bar(buf, sizeof(buf), width, 3 * GiB, 10 * GiB, 150 * MiB);
                assert_true(strlen(buf) <= width);
                if (width >= 6)
                        assert_non_null(strstr(buf, "30.0%"));
        }
        progress_format_bar(buf, sizeof(buf), 18, 3 * GiB, 10 * GiB, 150 * MiB);
        assert_string_equal(buf, "  30.0%");
        progress_format_bar(buf, sizeof(buf), 19, 3 * GiB, 10 * GiB, 150 * MiB);
        assert_string_equal(buf, "[###.......]  30.0%");
        progress_format_bar(buf, sizeof(buf), 33, 3 * GiB, 10 * GiB, 150 * MiB);
        assert_string_equal(buf, "[###.......]  30.0%  3.0/10.0 GiB");
        progress_format_bar(buf, sizeof(buf), 5, 10 * GiB, 10 * GiB, 150 * MiB);
        assert_string_equal(buf, "100.0");
}

/* Amounts in the unit of the total: 256 MiB is not "0.0/0.2 GiB". */
static void test_progress_format_bar_units(void **state) {
        char buf[256];

        progress_format_bar(buf, sizeof(buf), 100, 64 * MiB, 256 * MiB, 150 * MiB);
        assert_non_null(strstr(buf, "64.0/256.0 MiB"));
        progress_format_bar(buf, sizeof(buf), 100, 512 * 1024, 1024 * 1024, 150 * MiB);
        assert_non_null(strstr(buf, "0.5/1.0 MiB"));
        progress_format_bar(buf, sizeof(buf), 100, 100 * 1024, 512 * 1024, 150 * MiB);
        assert_non_null(strstr(buf, "100.0/512.0 KiB"));
        progress_format_bar(buf, sizeof(buf), 100, 3 * GiB, 2048 * GiB, 150 * MiB);
        assert_non_null(strstr(buf, "0.0/2.0 TiB"));
}

static void test_progress_format_rate(void **state) {
        char buf[32];

        assert_string_equal(format_rate(buf, sizeof(buf), 187 * MiB), "187 MiB/s");
        assert_string_equal(format_rate(buf, sizeof(buf), 4 * MiB + MiB / 5), "4.2 MiB/s");
        assert_string_equal(format_rate(buf, sizeof(buf), 512 * 1024), "512 KiB/s");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_progress_rate_steady),
                cmocka_unit_test(test_progress_rate_follows_recent_window),
                cmocka_unit_test(test_progress_rate_ring_wraps),
                cmocka_unit_test(test_progress_eta),
                cmocka_unit_test(test_progress_permille_never_early_100),
                cmocka_unit_test(test_progress_status_line),
                cmocka_unit_test(test_progress_bar_fits_width),
                cmocka_unit_test(test_progress_format_bar_narrow),
                cmocka_unit_test(test_progress_format_bar_units),
                cmocka_unit_test(test_progress_format_rate),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
