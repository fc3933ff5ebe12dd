/* SPDX-License-Identifier: MIT */
/*
 * The reader control law against an in-process device model, deterministically: a first-touch
 * latency, a throughput cap on every read (processor sharing: whoever has more reads queued
 * gets more of it), an optional workload (a fixed rate of small reads on the same cap, seen on
 * the tuner's own device or not), several tuners behind one cap, and the rig's measured curve
 * (a device that gets faster the deeper it is driven, with its latency rising as it does). The
 * model is the simple one the rules were written for; the rig benchmark (tests/lab/ebs-bench)
 * measures the real thing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tuner.h"
#include "util.h"

#define MSEC UINT64_C(1000)
#define SEC UINT64_C(1000000)
#define MiB (UINT64_C(1) << 20)
#define STEP (10 * MSEC)
#define SAMPLE (100 * MSEC) /* the hydrator's look at the disk's counters */
#define MAX_TUNERS 4
#define FOREGROUND (2000.0 * 16384) /* 2000 random 16 KiB reads a second */

/* fio --bs=1M on a fresh 1 GiB rig volume (90 ms, no cap), 2026-11-25: depth -> MiB/s. */
static const double rig_curve[][2] = {
        {1, 10.6},    {8, 80.4},    {16, 152.9},  {32, 264.3},
        {64, 450.1},  {128, 556.5}, {256, 600.0},
};

typedef struct Device {
        double latency_usec;   /* first-touch latency */
        double cap;            /* bytes/s on every read, 0 = none */
        bool curve;            /* the rig's measured curve instead of latency and cap */
        double jitter;         /* each read's latency is up to this fraction longer */
        double foreground;     /* bytes/s of a workload behind the same cap */
        bool visible[MAX_TUNERS]; /* the workload is on tuner i's device: its counters show it */
        bool neighbours;          /* each tuner sees the others' and the workload's I/O on the
                                   * volumes beside it (neighbours.h) */
} Device;

typedef struct Run {
        double rate[MAX_TUNERS]; /* bytes/s over the run, per tuner */
        double total;            /* of all tuners */
        double depth;            /* mean depth of tuner 0 (it moves while probing) */
        double queue_mean;       /* queueing delay every read saw, usec: mean over the run */
        double queue_max;        /* and the largest */
        double queue_p999;       /* 99.9th percentile over the steps, weighted by time */
} Run;

static double curve_rate(unsigned depth) {
        size_t n = sizeof(rig_curve) / sizeof(rig_curve[0]);

        if (depth >= rig_curve[n - 1][0])
                return rig_curve[n - 1][1] * MiB;
        for (size_t i = 1; i < n; i++)
                if (depth <= rig_curve[i][0]) {
                        double f = (depth - rig_curve[i - 1][0]) /
                                   (rig_curve[i][0] - rig_curve[i - 1][0]);

                        return (rig_curve[i - 1][1] + f * (rig_curve[i][1] - rig_curve[i - 1][1])) *
                               MiB;
                }
        return 0;
}

/* Each tuner's throughput, and the latency every read sees now. */
static double device_step(const Device *v, DepthTuner **t, unsigned n, double *rate) {
        double inflight = 0, latency = v->latency_usec;

        for (unsigned i = 0; i < n; i++)
                inflight += (double)t[i]->depth * MiB;
        if (v->curve) {
                rate[0] = curve_rate(t[0]->depth);
                return inflight * 1e6 / rate[0];
        }
        /* Over the cap: the reads queue until everyone's share of it is what they get. */
        if (v->cap > 0 && inflight * 1e6 / latency + v->foreground > v->cap)
                latency = inflight * 1e6 / (v->cap - v->foreground);
        for (unsigned i = 0; i < n; i++)
                rate[i] = (double)t[i]->depth * MiB * 1e6 / latency;
        return latency;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/* Runs @n tuners on @v for @usec in 10 ms steps. */
static Run drive_all(DepthTuner **t, unsigned n, const Device *v, uint64_t *now, uint64_t usec) {
        double carry[MAX_TUNERS] = {0}, bytes[MAX_TUNERS] = {0}, depth_sum = 0, queue_sum = 0;
        size_t steps = usec / STEP, k = 0;
        double *queue = calloc(steps + 1, sizeof(double));
        Run run = {0};

        assert_non_null(queue);
        for (uint64_t end = *now + usec; *now < end; *now += STEP, k++) {
                double rate[MAX_TUNERS], latency = device_step(v, t, n, rate);
                /* The curve's latency is the device's own: nobody else waits behind it. */
                queue[k] = v->curve ? 0 : MAX(0.0, latency - v->latency_usec);
                queue_sum += queue[k];
                run.queue_max = MAX(run.queue_max, queue[k]);
                depth_sum += t[0]->depth;
                for (unsigned i = 0; i < n; i++) {
                        if (*now % SAMPLE == 0 && v->neighbours) {
                                double others = v->foreground;

                                for (unsigned j = 0; j < n; j++)
                                        others += j == i ? 0 : rate[j];
                                (void)tuner_foreign(t[i], others > 0, others, *now);
                        } else if (*now % SAMPLE == 0)
                                (void)tuner_foreign(t[i], v->visible[i] && v->foreground > 0,
                                                    v->foreground, *now);
                        carry[i] += rate[i] * (double)STEP / 1e6;
                        for (; carry[i] >= (double)MiB; carry[i] -= (double)MiB) {
                                double extra = v->jitter * (double)rand() / RAND_MAX;

                                tuner_complete(t[i], MiB, (uint64_t)(latency * (1 + extra)),
                                               *now);
                                bytes[i] += (double)MiB;
                        }
                        if (tuner_update(t[i], *now) && getenv("TUNER_TRACE"))
                                fprintf(stderr,
                                        "%7.2f s: tuner %u depth %3u (%s), base %.1f ms, "
                                        "queue %.1f ms\n",
                                        (double)*now / 1e6, i, t[i]->depth,
                                        tuner_mode_to_string(t[i]->mode),
                                        tuner_base_latency(t[i]) / 1000.0,
                                        t[i]->queue_delay_usec / 1000.0);
                }
        }
        for (unsigned i = 0; i < n; i++) {
                run.rate[i] = bytes[i] * 1e6 / (double)usec;
                run.total += run.rate[i];
        }
        run.depth = depth_sum / (double)k;
        run.queue_mean = queue_sum / (double)k;
        qsort(queue, k, sizeof(double), cmp_double);
        run.queue_p999 = queue[(size_t)((double)(k - 1) * 0.999)];
        free(queue);
        if (getenv("TUNER_TRACE"))
                fprintf(stderr,
                        "run: %.1f MiB/s in all (tuner 0: %.1f), depth %.1f, queue mean %.1f "
                        "p99.9 %.1f max %.1f ms\n",
                        run.total / MiB, run.rate[0] / MiB, run.depth, run.queue_mean / 1000,
                        run.queue_p999 / 1000, run.queue_max / 1000);
        return run;
}

static Run drive(DepthTuner *t, const Device *v, uint64_t *now, uint64_t usec) {
        return drive_all(&t, 1, v, now, usec);
}

/* ---- an idle volume: as fast as it goes, with a short queue ---- */

static void test_tuner_rig_curve_beats_fio(void **state) {
        /* The rig without a cap gets faster the deeper it is driven: 264 MiB/s at 32 reads
         * (the AWS fio command), 450 at 64, 556 at 128, while every read waits longer. */
        Device v = {.curve = true};
        DepthTuner t, fio;
        uint64_t now = 0, now_fio = 0;
        Run a, f;

        tuner_init(&t, 4, 32, 256, now);
        tuner_fixed(&fio, 32, now_fio);
        (void)drive(&t, &v, &now, 10 * SEC);
        a = drive(&t, &v, &now, 60 * SEC);
        f = drive(&fio, &v, &now_fio, 60 * SEC);
        assert_true(a.rate[0] >= 1.5 * f.rate[0]);
        /* It stops where a step buys less than half of what it costs: not at 256. */
        assert_in_range((unsigned)a.depth, 60, 110);
}

static void test_tuner_fast_beats_fixed_32(void **state) {
        /* 400 MiB/s at 90 ms needs 36 MiB in flight: 32 leaves throughput on the table. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 400.0 * MiB};
        DepthTuner t, fixed;
        uint64_t now = 0, now_fixed = 0;
        Run a, f;

        tuner_init(&t, 4, 32, 256, now);
        tuner_fixed(&fixed, 32, now_fixed);
        a = drive(&t, &v, &now, 30 * SEC);
        f = drive(&fixed, &v, &now_fixed, 30 * SEC);
        assert_int_equal(fixed.depth, 32);
        assert_true(a.rate[0] > 1.08 * f.rate[0]);
        assert_true(a.rate[0] >= 0.95 * 400.0 * MiB);
}

static void test_tuner_gp3_holds_the_queue_short(void **state) {
        /* 125 MiB/s at 90 ms: 11.25 reads suffice; anything more only queues, in front of
         * everyone else's reads. Started at 32 (28 reads of queue), it comes down at once. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        run = drive(&t, &v, &now, 10 * SEC); /* within ten seconds (after the first relearn) */
        assert_in_range((unsigned)run.depth, 10, 15);
        run = drive(&t, &v, &now, 60 * SEC);
        assert_in_range((unsigned)run.depth, 10, 14);
        assert_true(run.rate[0] >= 0.95 * 125.0 * MiB);
        /* Drained when over twice the target (90 ms / 8), to the target: the depth is a whole
         * number, and one read is 8 ms at 125 MiB/s. The old tuner held 45 ms. */
        assert_true(run.queue_mean <= 20.0 * MSEC);
        assert_in_range(tuner_base_latency(&t), 89 * MSEC, 91 * MSEC);
}

static void test_tuner_relearns_an_inflated_base(void **state) {
        /* The first reads all queued (a cap with no burst), so the first base is 256 ms; the
         * relearn epoch and the probes find the real 90 ms. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 30 * SEC);
        assert_in_range(tuner_base_latency(&t), 89 * MSEC, 91 * MSEC);
        /* The volume's latency rises for good (a slower region): the old minimum ages out
         * within the history (one minute) and the depth follows. */
        v.latency_usec = 150 * MSEC;
        (void)drive(&t, &v, &now, 90 * SEC);
        assert_in_range(tuner_base_latency(&t), 149 * MSEC, 151 * MSEC);
        run = drive(&t, &v, &now, 30 * SEC);
        assert_true(run.rate[0] >= 0.95 * 125.0 * MiB);
        assert_in_range((unsigned)run.depth, 18, 23); /* 125 MiB/s x 150 ms = 18.75 */
}

static void test_tuner_warm_blocks_do_not_set_the_base(void **state) {
        /* A resumed run starts on blocks that are warm already: 1 ms reads are left out of
         * the base, and 25 ms ones (warm, but behind a queue) are replaced as soon as cold
         * reads show that they were something else. */
        Device v = {.latency_usec = 1 * MSEC};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 5 * SEC);
        assert_int_equal(tuner_base_latency(&t), 0);
        v.latency_usec = 25 * MSEC;
        (void)drive(&t, &v, &now, 5 * SEC);
        assert_in_range(tuner_base_latency(&t), 24 * MSEC, 26 * MSEC);
        v.latency_usec = 90 * MSEC; /* the cold part */
        v.cap = 125.0 * MiB;
        (void)drive(&t, &v, &now, 20 * SEC);
        assert_in_range(tuner_base_latency(&t), 89 * MSEC, 91 * MSEC);
        (void)drive(&t, &v, &now, 40 * SEC); /* 256 reads had 2 s of queue to drain */
        run = drive(&t, &v, &now, 30 * SEC);
        assert_true(run.rate[0] >= 0.95 * 125.0 * MiB);
        assert_in_range((unsigned)run.depth, 10, 15);
}

static void test_tuner_follows_a_changing_volume(void **state) {
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 16, 256, now);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_in_range((unsigned)run.depth, 10, 17);
        v.cap = 400.0 * MiB; /* e.g. a neighbour finished: more throughput to be had */
        (void)drive(&t, &v, &now, 20 * SEC);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_in_range((unsigned)run.depth, 34, 56);
        assert_true(run.rate[0] >= 0.9 * 400.0 * MiB);
        v.cap = 125.0 * MiB; /* and back */
        (void)drive(&t, &v, &now, 10 * SEC);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_in_range((unsigned)run.depth, 10, 15);
        assert_true(run.queue_mean <= 20.0 * MSEC);
}

static void test_tuner_tolerates_jitter(void **state) {
        /* Each first-touch read up to 50% slower than the fastest: the smallest latency of an
         * epoch still tells queueing from jitter. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 400.0 * MiB, .jitter = 0.5};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        srand(7);
        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        run = drive(&t, &v, &now, 60 * SEC);
        assert_true(run.rate[0] >= 0.9 * 400.0 * MiB);
        assert_in_range((unsigned)run.depth, 34, 80);
}

/* ---- other I/O ---- */

static void test_tuner_yields_at_once_and_comes_back(void **state) {
        /* gp3 with its cap on every read; a database starts 2000 x 16 KiB reads/s on it. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .visible = {true}};
        const double spare = 125.0 * MiB - FOREGROUND;
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        assert_false(t.yielding);
        v.foreground = FOREGROUND;
        (void)drive(&t, &v, &now, SAMPLE + STEP); /* the next look at the counters */
        assert_true(t.yielding);
        assert_int_equal(t.mode, TUNER_YIELD);
        assert_true(t.depth * MiB * 1e6 / (90 * MSEC) <= 0.8 * spare); /* cut at once */
        run = drive(&t, &v, &now, 60 * SEC);
        /* The workload hardly waits for us (a read's worth, now and then, when the share is
         * probed), and we still hydrate. */
        assert_true(run.queue_mean <= 1.0 * MSEC);
        assert_true(run.queue_p999 <= 10.0 * MSEC);
        assert_true(run.rate[0] >= 0.6 * spare);
        assert_int_equal(t.yields, 1);

        v.foreground = 0; /* the workload stops */
        (void)drive(&t, &v, &now, TUNER_YIELD_QUIET_USEC - SAMPLE);
        assert_true(t.yielding); /* not before a quiet spell */
        (void)drive(&t, &v, &now, 10 * SEC);
        assert_false(t.yielding);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_true(run.rate[0] >= 0.95 * 125.0 * MiB);
}

static void test_tuner_capacity_learned_low_recovers(void **state) {
        /* The capacity was taken while another volume's reads filled the instance's cap (or
         * in an epoch that was slow for its own reasons): far too low. Yielding at three
         * quarters of that would starve the hydration for as long as the workload runs; the
         * share grows back while no queue shows. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .visible = {true}};
        const double spare = 125.0 * MiB - FOREGROUND;
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        t.capacity = 20.0 * MiB;
        v.foreground = FOREGROUND;
        (void)drive(&t, &v, &now, 20 * SEC);
        run = drive(&t, &v, &now, 30 * SEC);
        assert_true(t.yielding);
        assert_true(run.rate[0] >= 0.6 * spare);
        assert_true(run.queue_p999 <= 10.0 * MSEC);
}

static void test_tuner_yields_from_the_start(void **state) {
        /* Started on a busy volume: no capacity known yet, so it starts small and grows one
         * read per epoch until reads queue, then holds its share. */
        Device v = {.latency_usec = 90 * MSEC,
                    .cap = 125.0 * MiB,
                    .foreground = FOREGROUND,
                    .visible = {true}};
        const double spare = 125.0 * MiB - FOREGROUND;
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)tuner_foreign(&t, true, FOREGROUND, now); /* the look before the first read */
        assert_int_equal(t.depth, TUNER_YIELD_START);
        (void)drive(&t, &v, &now, 20 * SEC);
        run = drive(&t, &v, &now, 60 * SEC);
        assert_true(run.rate[0] >= 0.6 * spare);
        assert_true(run.queue_p999 <= 10.0 * MSEC);
        assert_true(run.queue_mean <= 1.0 * MSEC);
}

static void test_tuner_fixed_depth_yields_too(void **state) {
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .visible = {true}};
        DepthTuner t;
        uint64_t now = 0;

        tuner_fixed(&t, 32, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        assert_int_equal(t.depth, 32);
        v.foreground = FOREGROUND;
        (void)drive(&t, &v, &now, 20 * SEC);
        assert_true(t.yielding);
        assert_true(t.depth < 12);
        v.foreground = 0;
        (void)drive(&t, &v, &now, TUNER_YIELD_QUIET_USEC + SEC);
        assert_false(t.yielding);
        assert_int_equal(t.depth, 32);
}

static void test_tuner_shared_cap_yields_to_each_other(void **state) {
        /* An instance's EBS bandwidth (125 MiB/s) behind three hydrating volumes and a
         * database on a fourth. Each tuner sees the I/O of the other volumes in their
         * counters (neighbours.h), the others' hydration as much as the database. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .neighbours = true};
        const double spare = 125.0 * MiB - FOREGROUND;
        DepthTuner a, b, c, *all[] = {&a, &b, &c};
        uint64_t now = 0;
        Run run;

        tuner_init(&a, 4, 32, 256, now);
        tuner_init(&b, 4, 32, 256, now);
        tuner_init(&c, 4, 32, 256, now);
        (void)drive_all(all, 3, &v, &now, 90 * SEC);
        run = drive_all(all, 3, &v, &now, 30 * SEC);
        /* Yielding to each other, they leave some of the cap unused, and hardly queue (three
         * readers of 32 would hold 830 ms). */
        assert_true(run.total >= 0.75 * 125.0 * MiB);
        assert_true(run.queue_mean <= 5.0 * MSEC);

        v.foreground = FOREGROUND; /* the database on the fourth volume */
        (void)drive_all(all, 3, &v, &now, 20 * SEC);
        run = drive_all(all, 3, &v, &now, 60 * SEC);
        /* The database's reads hardly wait (the issue: p99.9 within 10 ms) and the three
         * still get most of what it leaves. */
        assert_true(run.queue_mean <= 5.0 * MSEC);
        assert_true(run.queue_p999 <= 10.0 * MSEC);
        assert_true(run.total >= 0.6 * spare);
        for (unsigned i = 0; i < 3; i++) /* and no volume starves */
                assert_true(run.rate[i] >= run.total / 6);
}

static void test_tuner_gives_way_to_a_greedy_reader(void **state) {
        /* Behind the same cap as a reader that starts keeping 32 reads in flight whatever
         * happens (the AWS fio command on another volume). Its queue alone cannot tell us: a
         * queue that never drains looks like the volume's own latency to any delay-based
         * scavenger (LEDBAT's latecomer problem). Its volume's counters can (neighbours.h):
         * fed as other I/O, we give way. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t, fio, *both[] = {&t, &fio};
        uint64_t now = 0;
        double ours = 0, total = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        tuner_fixed(&fio, 32, now);
        for (unsigned i = 0; i < 600; i++) { /* 60 s in samples of 100 ms; the last 10 count */
                double rate[2];

                (void)device_step(&v, both, 2, rate);
                (void)tuner_foreign(&t, true, rate[1], now);
                run = drive_all(both, 2, &v, &now, SAMPLE);
                if (i >= 500) {
                        ours += run.rate[0];
                        total += run.total;
                }
        }
        assert_true(t.yielding);
        assert_true(ours <= 0.25 * total);
}

/* ---- mechanics ---- */

static void test_tuner_stays_within_bounds(void **state) {
        Device v = {.latency_usec = 90 * MSEC}; /* no cap at all: every extra read pays */
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 16, 40, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        assert_int_equal(t.depth, 40);

        v.latency_usec = 1 * MSEC; /* warm and capped: one read in flight would do */
        v.cap = 100.0 * MiB;
        (void)drive(&t, &v, &now, 90 * SEC);
        assert_in_range(t.depth, 4, 5); /* the floor holds */

        tuner_init(&t, 4, 1000, 40, now);
        assert_int_equal(t.depth, 40);
        tuner_init(&t, 4, 1, 40, now);
        assert_int_equal(t.depth, 4);
}

static void test_tuner_tainted_epochs_decide_nothing(void **state) {
        Device v = {.latency_usec = 90 * MSEC};
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
        assert_int_equal(tuner_base_latency(&t), 0);
}

static void test_tuner_fixed_never_changes(void **state) {
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;

        tuner_fixed(&t, 32, now);
        (void)drive(&t, &v, &now, 90 * SEC);
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
        assert_int_equal(tuner_base_latency(&t), 50 * MSEC);
}

static void test_tuner_steps_at_least_one(void **state) {
        Device v = {.latency_usec = 90 * MSEC};
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 1, 1, 8, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        assert_int_equal(t.depth, 8); /* 1 x 3/2 rounds to 1: it must still grow */
}

static void test_tuner_base_history_ages_out(void **state) {
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 4, 4, now);
        /* One epoch at 50 ms, then only 80 ms: the 50 ms minimum counts for one minute. */
        for (unsigned e = 0; e < 200; e++) {
                uint64_t lat = e == 0 ? 50 * MSEC : 80 * MSEC;

                now += 200 * MSEC;
                for (unsigned i = 0; i < 8; i++)
                        tuner_complete(&t, MiB, lat, now);
                now += 400 * MSEC;
                (void)tuner_update(&t, now);
                if (now < TUNER_BASE_BUCKETS * TUNER_BASE_BUCKET_USEC - TUNER_BASE_BUCKET_USEC)
                        assert_int_equal(tuner_base_latency(&t), 50 * MSEC);
        }
        assert_int_equal(tuner_base_latency(&t), 80 * MSEC);
        assert_int_equal(tuner_target(90 * MSEC), 11250);
        assert_int_equal(tuner_target(400 * MSEC), 25 * MSEC);
        assert_int_equal(tuner_target(1 * MSEC), 1 * MSEC);
        assert_int_equal(tuner_yield_target(90 * MSEC), 5 * MSEC);
        assert_int_equal(tuner_yield_target(48 * MSEC), 3 * MSEC);
        assert_int_equal(tuner_yield_target(1 * MSEC), 1 * MSEC);
        assert_string_equal(tuner_mode_to_string(TUNER_YIELD), "yield");
        assert_string_equal(tuner_mode_to_string((TunerMode)42), "?");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_tuner_rig_curve_beats_fio),
                cmocka_unit_test(test_tuner_fast_beats_fixed_32),
                cmocka_unit_test(test_tuner_gp3_holds_the_queue_short),
                cmocka_unit_test(test_tuner_relearns_an_inflated_base),
                cmocka_unit_test(test_tuner_warm_blocks_do_not_set_the_base),
                cmocka_unit_test(test_tuner_follows_a_changing_volume),
                cmocka_unit_test(test_tuner_tolerates_jitter),
                cmocka_unit_test(test_tuner_yields_at_once_and_comes_back),
                cmocka_unit_test(test_tuner_capacity_learned_low_recovers),
                cmocka_unit_test(test_tuner_yields_from_the_start),
                cmocka_unit_test(test_tuner_fixed_depth_yields_too),
                cmocka_unit_test(test_tuner_shared_cap_yields_to_each_other),
                cmocka_unit_test(test_tuner_gives_way_to_a_greedy_reader),
                cmocka_unit_test(test_tuner_stays_within_bounds),
                cmocka_unit_test(test_tuner_tainted_epochs_decide_nothing),
                cmocka_unit_test(test_tuner_fixed_never_changes),
                cmocka_unit_test(test_tuner_waits_for_a_full_window),
                cmocka_unit_test(test_tuner_steps_at_least_one),
                cmocka_unit_test(test_tuner_base_history_ages_out),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
