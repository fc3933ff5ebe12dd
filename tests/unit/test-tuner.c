/* SPDX-License-Identifier: MIT */
/*
 * The queue-depth tuner against simulated volumes: a first-touch latency, a throughput cap,
 * and the queueing that follows from the cap (Little's law). The model is deliberately the
 * simple one the tuner's rules were written for; the rig benchmark (tests/lab/ebs-bench)
 * measures the real thing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tuner.h"

#define MSEC UINT64_C(1000)
#define SEC UINT64_C(1000000)
#define MiB (UINT64_C(1) << 20)

typedef struct Volume {
        double latency_usec; /* first-touch latency */
        double cap;          /* bytes/s, 0 = none */
        double noise;        /* +- fraction applied to each step's throughput */
        double half_depth;   /* > 0: no knee, throughput = cap x d / (d + half_depth) */
} Volume;

/* Throughput and latency of @v with @depth reads of @req bytes in flight. */
static double volume_rate(const Volume *v, unsigned depth, uint64_t req, double *latency) {
        double rate = (double)depth * (double)req * 1e6 / v->latency_usec;

        if (v->half_depth > 0) /* a device that saturates gradually, as the rig does */
                rate = v->cap * depth / (depth + v->half_depth);
        else if (v->cap > 0 && rate > v->cap)
                rate = v->cap;
        *latency = (double)depth * (double)req * 1e6 / rate; /* Little: L = N / X */
        return rate;
}

typedef struct Run {
        double rate;  /* bytes/s over the run */
        double depth; /* mean depth over the run (it moves while probing) */
} Run;

/* Runs @t against @v for @usec in 10 ms steps. */
static Run drive(DepthTuner *t, const Volume *v, uint64_t *now, uint64_t usec) {
        const uint64_t step = 10 * MSEC, req = MiB;
        double carry = 0, total = 0, depth_sum = 0;
        unsigned steps = 0;

        for (uint64_t end = *now + usec; *now < end; *now += step) {
                double latency, rate = volume_rate(v, t->depth, req, &latency);

                if (v->noise > 0)
                        rate *= 1.0 + v->noise * (2.0 * (double)rand() / RAND_MAX - 1.0);
                depth_sum += t->depth;
                steps++;
                carry += rate * (double)step / 1e6;
                for (; carry >= (double)req; carry -= (double)req) {
                        tuner_complete(t, req, (uint64_t)latency, *now);
                        total += (double)req;
                }
                if (tuner_update(t, *now) && getenv("TUNER_TRACE"))
                        fprintf(stderr, "%6.2f s: depth %u (%s), mean latency %.0f ms\n",
                                (double)*now / 1e6, t->depth, tuner_mode_to_string(t->mode),
                                t->latency_usec / 1000);
        }
        return (Run){total * 1e6 / (double)usec, depth_sum / steps};
}

static void test_tuner_seed_finds_the_rigs_limit(void **state) {
        /* 90 ms, no cap of its own, but the rig tops out near 460 MiB/s: the knee is at
         * 460 MiB/s x 90 ms = 41.4 reads of 1 MiB. */
        Volume v = {90 * MSEC, 460.0 * MiB, 0, 0};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 16, 256, now);
        run = drive(&t, &v, &now, 3 * SEC); /* the climb is quick */
        assert_true(run.rate >= 0.8 * 460.0 * MiB);
        run = drive(&t, &v, &now, 30 * SEC);
        assert_true(run.rate >= 0.95 * 460.0 * MiB);  /* it delivers the limit */
        assert_in_range((unsigned)run.depth, 40, 62); /* near the knee, far from 256 */
}

static void test_tuner_fast_beats_fixed_32(void **state) {
        /* 400 MiB/s at 90 ms needs 36 MiB in flight: 32 leaves throughput on the table. */
        Volume v = {90 * MSEC, 400.0 * MiB, 0, 0};
        DepthTuner t, fixed;
        uint64_t now = 0, now_fixed = 0;
        Run a, f;

        tuner_init(&t, 4, 16, 256, now);
        tuner_fixed(&fixed, 32, now_fixed);
        a = drive(&t, &v, &now, 30 * SEC);
        f = drive(&fixed, &v, &now_fixed, 30 * SEC);
        assert_int_equal(fixed.depth, 32);
        assert_true(a.rate > 1.08 * f.rate);
        assert_true(a.rate >= 0.95 * 400.0 * MiB);
}

static void test_tuner_gp3_backs_off_when_only_latency_grows(void **state) {
        /* 125 MiB/s at 90 ms: 11.25 reads suffice; anything more only queues. Started too
         * deep, it comes down. */
        Volume v = {90 * MSEC, 125.0 * MiB, 0, 0};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        run = drive(&t, &v, &now, 30 * SEC);
        assert_in_range((unsigned)run.depth, 10, 16);
        assert_true(run.rate >= 0.95 * 125.0 * MiB);
        assert_true(t.latency_usec < 1.3 * 90 * MSEC); /* little queueing left */
}

static void test_tuner_follows_a_changing_volume(void **state) {
        Volume v = {90 * MSEC, 125.0 * MiB, 0, 0};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 16, 256, now);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_in_range((unsigned)run.depth, 10, 17);
        v.cap = 400.0 * MiB; /* e.g. a neighbour finished: more throughput to be had */
        (void)drive(&t, &v, &now, 10 * SEC);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_in_range((unsigned)run.depth, 34, 56);
        assert_true(run.rate >= 0.9 * 400.0 * MiB);
        v.cap = 125.0 * MiB; /* and back */
        (void)drive(&t, &v, &now, 20 * SEC);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_in_range((unsigned)run.depth, 10, 17);
}

static void test_tuner_tolerates_noise(void **state) {
        Volume v = {90 * MSEC, 400.0 * MiB, 0.05, 0};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        srand(7);
        tuner_init(&t, 4, 16, 256, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        run = drive(&t, &v, &now, 30 * SEC);
        assert_true(run.rate >= 0.9 * 400.0 * MiB);
        assert_in_range((unsigned)run.depth, 34, 80);
}

static void test_tuner_keeps_growing_while_it_pays(void **state) {
        /* No knee: each step of depth buys a little less (x1.5 from 32 buys 19%, from 108 8%,
         * from 162 5%). Growth is worth it as long as it beats noise. */
        Volume v = {90 * MSEC, 460.0 * MiB, 0, 30};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_true(run.depth >= 150);
        assert_true(run.rate >= 0.8 * 460.0 * MiB);
}

static void test_tuner_stays_within_bounds(void **state) {
        Volume v = {90 * MSEC, 0, 0, 0}; /* no cap at all: every extra read pays */
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 16, 40, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        assert_int_equal(t.depth, 40);
        assert_int_equal(t.base_depth, 40);

        v.latency_usec = 1 * MSEC; /* warm and capped: one read in flight would do */
        v.cap = 100.0 * MiB;
        (void)drive(&t, &v, &now, 60 * SEC);
        assert_int_equal(t.base_depth, 4); /* the floor holds */
        assert_in_range(t.depth, 4, 5);

        tuner_init(&t, 4, 1000, 40, now);
        assert_int_equal(t.depth, 40);
        tuner_init(&t, 4, 1, 40, now);
        assert_int_equal(t.depth, 4);
}

static void test_tuner_tainted_epochs_decide_nothing(void **state) {
        Volume v = {90 * MSEC, 0, 0, 0};
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 16, 256, now);
        /* Rate-limited all along: the owner taints every epoch, nothing is learned. */
        for (int i = 0; i < 1000; i++) {
                uint64_t end = now + 20 * MSEC;

                tuner_taint(&t, now);
                (void)drive(&t, &v, &now, end - now);
                assert_true(t.tainted);
        }
        assert_int_equal(t.depth, 16);
        assert_int_equal(t.changes, 0);
}

static void test_tuner_fixed_never_changes(void **state) {
        Volume v = {90 * MSEC, 125.0 * MiB, 0, 0};
        DepthTuner t;
        uint64_t now = 0;

        tuner_fixed(&t, 32, now);
        (void)drive(&t, &v, &now, 30 * SEC);
        assert_int_equal(t.depth, 32);
        assert_int_equal(t.changes, 0);
}

static void test_tuner_waits_for_a_full_window(void **state) {
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 16, 256, now);
        /* Completions inside the first mean latency belong to the previous depth: not counted. */
        tuner_complete(&t, MiB, 50 * MSEC, 10 * MSEC);
        assert_int_equal(t.completions, 0);
        /* A window needs its time and a queue's worth of completions. */
        for (unsigned i = 0; i < 15; i++)
                tuner_complete(&t, MiB, 50 * MSEC, 100 * MSEC);
        assert_false(tuner_update(&t, 10 * SEC));
        assert_int_equal(t.depth, 16);
        tuner_complete(&t, MiB, 50 * MSEC, 100 * MSEC);
        assert_false(tuner_update(&t, 100 * MSEC)); /* enough reads, too soon */
        assert_true(tuner_update(&t, 10 * SEC));
        assert_int_equal(t.depth, 24); /* the first epoch only sets the base, then x 1.5 */
}

static void test_tuner_steps_at_least_one(void **state) {
        Volume v = {90 * MSEC, 0, 0, 0};
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 1, 1, 8, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        assert_int_equal(t.depth, 8); /* 1 x 3/2 rounds to 1: it must still grow */
}

static void test_tuner_bound(void **state) {
        assert_int_equal(tuner_bound(64 * MiB, MiB, 4, 256), 64);
        assert_int_equal(tuner_bound(2 * MiB, MiB, 4, 256), 4);
        assert_int_equal(tuner_bound(UINT64_C(1) << 40, MiB, 4, 256), 256);
        assert_int_equal(tuner_bound(64 * MiB, 0, 4, 256), 256);
        assert_string_equal(tuner_mode_to_string(TUNER_PROBE_DOWN), "probe-down");
        assert_string_equal(tuner_mode_to_string((TunerMode)42), "?");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_tuner_seed_finds_the_rigs_limit),
                cmocka_unit_test(test_tuner_fast_beats_fixed_32),
                cmocka_unit_test(test_tuner_gp3_backs_off_when_only_latency_grows),
                cmocka_unit_test(test_tuner_follows_a_changing_volume),
                cmocka_unit_test(test_tuner_tolerates_noise),
                cmocka_unit_test(test_tuner_keeps_growing_while_it_pays),
                cmocka_unit_test(test_tuner_stays_within_bounds),
                cmocka_unit_test(test_tuner_tainted_epochs_decide_nothing),
                cmocka_unit_test(test_tuner_fixed_never_changes),
                cmocka_unit_test(test_tuner_waits_for_a_full_window),
                cmocka_unit_test(test_tuner_steps_at_least_one),
                cmocka_unit_test(test_tuner_bound),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
