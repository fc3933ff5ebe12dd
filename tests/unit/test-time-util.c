/* SPDX-License-Identifier: MIT */
/* The time units (util.h) and the clock (time-util.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "time-util.h"
#include "util.h"

static void test_time_util_units(void **state) {
        (void)state;
        assert_true(USEC_PER_SEC == 1000 * USEC_PER_MSEC);
        assert_true(NSEC_PER_SEC == USEC_PER_SEC * NSEC_PER_USEC);
        assert_true(NSEC_PER_MSEC == USEC_PER_MSEC * NSEC_PER_USEC);
        assert_true(MSEC_PER_SEC * USEC_PER_MSEC == USEC_PER_SEC);
        /* 64-bit: a week in nanoseconds does not wrap. */
        assert_true(7 * 24 * 3600 * NSEC_PER_SEC / NSEC_PER_SEC == 7 * 24 * 3600);
}

static void test_time_util_now_usec(void **state) {
        uint64_t a, b, wall;

        (void)state;
        a = now_usec(CLOCK_MONOTONIC);
        b = now_usec(CLOCK_MONOTONIC);
        assert_true(a > 0);
        assert_true(b >= a);
        wall = now_usec(CLOCK_REALTIME);
        assert_true(wall / USEC_PER_SEC + 1 >= (uint64_t)time(NULL) &&
                    wall / USEC_PER_SEC <= (uint64_t)time(NULL));
        assert_true(now_usec((clockid_t)-1000) == 0); /* no such clock */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_time_util_units),
                cmocka_unit_test(test_time_util_now_usec),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
