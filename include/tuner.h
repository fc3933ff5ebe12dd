/* SPDX-License-Identifier: MIT */
/*
 * Adaptive queue depth: how many reads to keep in flight, found by measuring.
 *
 * A cold EBS volume answers each first read after a fixed latency (50-100 ms) up to a throughput
 * cap, so throughput grows with the depth until depth x request size covers latency x cap, and
 * after that only latency grows. No fixed depth fits every volume: 32 x 1 MiB leaves a 400 MiB/s
 * volume at 90 ms a third idle, and is three times what a 125 MiB/s one needs.
 *
 * The tuner climbs the hill in epochs. Each epoch first lets the reads already in flight drain
 * (one mean latency), then measures throughput over a window of a few latencies and at least one
 * full turn of the queue:
 *   STARTUP  depth x 1.5 per epoch while throughput grows with it (by more than
 *            TUNER_GROWTH_MIN, more than noise); then CRUISE at the knee the last step crossed
 *            (below the knee throughput is proportional to depth: the knee is where the last
 *            paying depth's line meets the throughput just measured).
 *   CRUISE   hold for TUNER_CRUISE_EPOCHS, then probe, alternately (down first)
 *   PROBE_UP    depth x 1.25: paid (the same test) -> STARTUP again; did not -> the knee, CRUISE;
 *   PROBE_DOWN  depth x 0.8: throughput within TUNER_DOWN_TOLERANCE of the last cruise ->
 *            keep the smaller depth (the extra reads only added latency) and go on shrinking;
 *            otherwise back to the last depth that held it, CRUISE.
 * Epochs in which the owner could not keep the depth busy for reasons of its own (rate limit,
 * pause, the plan ran out, retries waiting) are tainted and discarded: they say nothing about
 * the device.
 *
 * Pure arithmetic over the numbers it is given; the caller owns the clock.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define TUNER_GROW_NUM 3 /* STARTUP: x 3/2 */
#define TUNER_GROW_DEN 2
#define TUNER_PROBE_UP_NUM 5 /* x 5/4 */
#define TUNER_PROBE_UP_DEN 4
#define TUNER_PROBE_DOWN_NUM 4 /* x 4/5 */
#define TUNER_PROBE_DOWN_DEN 5
#define TUNER_GROWTH_MIN 0.04     /* a step up pays when throughput grows by 4% or more */
#define TUNER_DOWN_TOLERANCE 0.98 /* a smaller depth may cost up to 2% and still be kept */
#define TUNER_CRUISE_EPOCHS 8
#define TUNER_WINDOW_MIN_USEC (200 * UINT64_C(1000))
#define TUNER_WINDOW_LATENCIES 3                      /* measure over at least 3 mean latencies */
#define TUNER_LATENCY_INIT_USEC (50 * UINT64_C(1000)) /* until the first completion says more */

typedef enum TunerMode {
        TUNER_STARTUP,
        TUNER_CRUISE,
        TUNER_PROBE_UP,
        TUNER_PROBE_DOWN,
} TunerMode;

typedef struct DepthTuner {
        unsigned min, max; /* bounds of depth */
        unsigned depth;    /* reads to keep in flight now */
        bool fixed;        /* tuner_fixed(): measures nothing, never changes */
        TunerMode mode;

        /* the depth that was measured last, to compare the current epoch with */
        unsigned base_depth;
        double base_rate; /* bytes/s at base_depth; 0 = none yet */
        unsigned cruise_epochs;
        bool probe_down; /* the last probe was (or this one is) downwards */

        /* the current epoch */
        uint64_t epoch_usec;   /* when it started (a depth change, a taint) */
        uint64_t measure_usec; /* when its measuring window opens: epoch + one mean latency */
        uint64_t bytes;        /* completed inside the window */
        unsigned completions;  /* inside the window */
        bool tainted;

        double latency_usec; /* mean completion latency, exponentially weighted */
        unsigned changes;    /* depth changes so far (for the log) */
} DepthTuner;

/* tuner_init() - start at @start (clamped to [@min, @max]), in STARTUP. */
void tuner_init(DepthTuner *t, unsigned min, unsigned start, unsigned max, uint64_t now_usec);
/* tuner_fixed() - a tuner that never changes depth (an explicit QueueDepth=). */
void tuner_fixed(DepthTuner *t, unsigned depth, uint64_t now_usec);

/* tuner_complete() - a read of @bytes completed at @now_usec after @latency_usec. */
void tuner_complete(DepthTuner *t, uint64_t bytes, uint64_t latency_usec, uint64_t now_usec);
/* tuner_taint() - the owner could not keep t->depth reads in flight just now. */
void tuner_taint(DepthTuner *t, uint64_t now_usec);
/*
 * tuner_update() - end the epoch if its window is complete, and decide. Call it after
 * completions (cheap when nothing is due). Returns true when t->depth changed.
 */
bool tuner_update(DepthTuner *t, uint64_t now_usec);

/* tuner_bound() - the depth for @inflight_bytes in @request_bytes reads, within [@lo, @hi]. */
unsigned tuner_bound(uint64_t inflight_bytes, uint64_t request_bytes, unsigned lo, unsigned hi);

const char *tuner_mode_to_string(TunerMode m);
