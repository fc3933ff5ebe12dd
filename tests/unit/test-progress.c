/* SPDX-License-Identifier: MIT */
/* Progress arithmetic: sliding-window rate, ETA, honest percent, a rate in words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "progress.h"

#define SEC UINT64_C(1000000)
#define MiB (UINT64_C(1) << 20)

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
                cmocka_unit_test(test_progress_format_rate),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
