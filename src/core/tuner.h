/* SPDX-License-Identifier: MIT */
/*
 * Reader control: how many reads to keep in flight, found by measuring, and how much of the
 * volume to leave to everyone else.
 *
 * A cold EBS volume answers each first read after a fixed latency (50-100 ms) up to a throughput
 * cap, so throughput grows with the depth until depth x request size covers latency x cap, and
 * after that only latency grows: the extra reads wait in a queue, in front of everyone else's.
 * No fixed depth fits every volume: 32 x 1 MiB leaves a 400 MiB/s volume at 90 ms a third idle,
 * and is three times what a 125 MiB/s one needs. Nor does the size of the volume say anything
 * about it, so nothing here depends on it.
 *
 * Three signals, three rules:
 *
 * 1. Throughput (a hill climb in epochs). Each epoch first lets the reads already in flight
 *    drain (one mean latency), then measures over a window of a few latencies and at least one
 *    full turn of the queue:
 *      STARTUP  depth x 1.5 per epoch while the step pays; then CRUISE at the knee
 *      CRUISE   hold for TUNER_CRUISE_EPOCHS (twice as long after each probe up that did not
 *               pay, up to TUNER_CRUISE_EPOCHS_MAX), then probe: up, or down (alternately)
 *               where reads queue
 *      PROBE_UP    depth x 1.25: paid -> STARTUP again; did not -> the knee, CRUISE
 *      PROBE_DOWN  a smaller depth: throughput within TUNER_DOWN_TOLERANCE -> keep it (the
 *               extra reads only queued); otherwise back to the depth that held it, CRUISE.
 *    A step pays when throughput grows by at least half of what the depth grew (and by more
 *    than noise): a step that buys less mostly made reads wait, ours and everyone's.
 *
 * 2. Queueing delay (LEDBAT-style). The base latency is the smallest latency of recent epochs
 *    (a history of TUNER_BASE_BUCKETS minima, so an old one ages out); an epoch's own smallest
 *    latency minus the base is the queueing delay, which jitter does not inflate (the smallest
 *    of many reads is the one that did not wait). When it exceeds twice the target (an eighth
 *    of the base, at most TUNER_TARGET_MAX_USEC), the depth the measured throughput needs is
 *    rate x (base + target) / request (Little's law): CRUISE probes down to it at once. If
 *    throughput fell there, a quarter deeper once; if it still falls short, the queue paid
 *    for itself (a device that gets faster the deeper it is driven): back, and no drain for
 *    8, 16 ... 64 epochs. Whether a queue is ours or someone else's behind the same cap the
 *    delay cannot tell (a device whose latency grows with its load looks the same, and a
 *    queue that never drains looks like the volume's own latency): the volumes that share the
 *    cap are watched through their counters instead (rule 3). Every TUNER_RELEARN_USEC, at
 *    the same instant in every instance on the machine, the depth drops to the minimum for
 *    one epoch (RELEARN), so that the base is measured without our queue, or theirs, in front
 *    of it (LEDBAT++'s periodic slowdown). Reads under TUNER_WARM_USEC hit blocks that are
 *    warm already and say nothing of the cold latency: they are left out of the base. An
 *    epoch three times slower than the base triggers a relearn at once; if that is still
 *    twice the base, the base was learned on something else (warm blocks that waited in a
 *    queue) and starts afresh.
 *
 * 3. Other I/O on the device or on the volumes beside it (tuner_foreign(), from the disks'
 *    counters: activity.h, neighbours.h). While it lasts the tuner YIELDS: at once down to
 *    what takes TUNER_YIELD_SHARE of the spare capacity (capacity = what the device
 *    delivered, ours and theirs together, when reads last queued; spare = capacity minus
 *    their rate now), and from there one read more per epoch while no queueing delay appears
 *    (over a tighter target: a sixteenth of the base, at most 5 ms), a quarter less when it
 *    does. With no capacity known yet it starts at TUNER_YIELD_START and grows until reads
 *    queue; at its share without a queue, it believes the capacity a little larger each
 *    epoch (TUNER_YIELD_PROBE), since a capacity measured while others filled the cap is too
 *    small. Only after TUNER_YIELD_QUIET_USEC without other I/O does the climb start again
 *    (md resync's idle test, ZFS scrub's ramp after quiet).
 *
 * Epochs in which the owner could not keep the depth busy for reasons of its own (rate limit,
 * pause, the plan ran out, retries waiting) are tainted and discarded: they say nothing about
 * the device. A fixed depth (QueueDepth=N) climbs and probes nothing, but still yields.
 *
 * Pure arithmetic over the numbers it is given; the caller owns the clock.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

#define TUNER_GROW_NUM 3 /* STARTUP: x 3/2 */
#define TUNER_GROW_DEN 2
#define TUNER_PROBE_UP_NUM 5 /* x 5/4 */
#define TUNER_PROBE_UP_DEN 4
#define TUNER_PROBE_DOWN_NUM 4 /* x 4/5 */
#define TUNER_PROBE_DOWN_DEN 5
#define TUNER_GROWTH_MIN 0.04      /* a step up pays only if throughput grows by 4% or more */
#define TUNER_GROWTH_SHARE 0.5     /* ... and by half of what the depth grew, or more */
#define TUNER_DOWN_TOLERANCE 0.98  /* a smaller depth may cost up to 2% and still be kept */
#define TUNER_CRUISE_EPOCHS 8      /* epochs between probes, doubled after each ... */
#define TUNER_CRUISE_EPOCHS_MAX 64 /* ... probe up that did not pay, up to this */
#define TUNER_WINDOW_MIN_USEC (200 * USEC_PER_MSEC)
#define TUNER_WINDOW_LATENCIES 3                     /* measure over at least 3 mean latencies */
#define TUNER_LATENCY_INIT_USEC (50 * USEC_PER_MSEC) /* until the first completion says more */

#define TUNER_TARGET_DIVISOR 8                     /* queueing delay target: base / 8 ... */
#define TUNER_TARGET_MIN_USEC (1 * USEC_PER_MSEC)  /* ... but at least 1 ms */
#define TUNER_TARGET_MAX_USEC (25 * USEC_PER_MSEC) /* ... and at most 25 ms */
#define TUNER_BASE_BUCKETS 6                       /* base latency: minimum of 6 ... */
#define TUNER_BASE_BUCKET_USEC (10 * USEC_PER_SEC) /* ... 10 s periods: 1 min of history */
#define TUNER_WARM_USEC (20 * USEC_PER_MSEC)       /* faster reads hit warm blocks: not the base */
#define TUNER_WARM_SHARE_DEN 10 /* an epoch with over a tenth warm reads decides no depth */
#define TUNER_SUSPECT_FACTOR 3  /* an epoch this many times slower than the base: relearn now */
#define TUNER_NEW_BASE_FACTOR 2 /* ... and if the relearn epoch is this much slower, new base */
#define TUNER_RECHECK_USEC (5 * USEC_PER_SEC)       /* ... not within 5 s of another relearn */
#define TUNER_RELEARN_USEC (60 * USEC_PER_SEC)      /* one epoch at the minimum depth ... */
#define TUNER_RELEARN_FIRST_USEC (5 * USEC_PER_SEC) /* ... a minute, and soon after start */
#define TUNER_CONTENTION_NUM 3                      /* yielding, and reads queue: x 3/4 per epoch */
#define TUNER_CONTENTION_DEN 4

#define TUNER_YIELD_TARGET_DIVISOR 16                   /* yielding: base / 16 ... */
#define TUNER_YIELD_TARGET_MAX_USEC (5 * USEC_PER_MSEC) /* ... at most 5 ms of our queue */
#define TUNER_YIELD_SHARE 0.75                          /* of the spare capacity, while yielding */
#define TUNER_YIELD_QUIET_USEC (5 * USEC_PER_SEC)       /* other I/O gone this long: climb again */
#define TUNER_YIELD_PROBE 1.05 /* at the share without a queue: capacity + 5% per epoch */
#define TUNER_YIELD_START 2u   /* reads in flight when yielding with no capacity known yet */

typedef enum TunerMode {
        TUNER_STARTUP,
        TUNER_CRUISE,
        TUNER_PROBE_UP,
        TUNER_PROBE_DOWN,
        TUNER_RELEARN,
        TUNER_YIELD,
} TunerMode;

typedef struct DepthTuner {
        unsigned min, max; /* bounds of the climb (giving way to others, the floor is 1) */
        unsigned depth;    /* reads to keep in flight now */
        bool fixed;        /* tuner_fixed(): climbs and probes nothing; max is the depth */
        TunerMode mode;

        /* the depth that was measured last, to compare the current epoch with */
        unsigned base_depth;
        double base_rate; /* bytes/s at base_depth; 0 = none yet */
        unsigned cruise_epochs;
        unsigned probe_wait; /* cruise epochs before the next probe */
        bool probe_down;     /* the last probe was (or this one is) downwards */
        bool delay_probe;    /* the current PROBE_DOWN was caused by queueing delay */
        bool delay_hold;     /* queueing paid for itself: no drain for a while ... */
        unsigned hold_left;  /* ... this many more cruise epochs */
        unsigned hold_next;  /* the next hold: doubled each time, up to TUNER_CRUISE_EPOCHS_MAX */
        bool drain_retried;  /* a drain fell short once and is being tried a quarter deeper */

        /* the current epoch */
        uint64_t epoch_usec;       /* when it started (a depth change, a taint) */
        uint64_t measure_usec;     /* when its measuring window opens: epoch + one mean latency */
        uint64_t bytes;            /* completed inside the window */
        unsigned completions;      /* inside the window */
        unsigned warm_completions; /* ... of which under TUNER_WARM_USEC */
        uint64_t min_latency_usec; /* the smallest latency inside the window; UINT64_MAX none */
        bool tainted;

        double latency_usec; /* mean completion latency, exponentially weighted */
        unsigned changes;    /* depth changes so far (for the log) */

        /* queueing delay */
        uint64_t base_hist[TUNER_BASE_BUCKETS]; /* per-bucket minimum latency, UINT64_MAX none */
        unsigned base_bucket;                   /* the bucket being filled */
        uint64_t base_bucket_usec;              /* when it started */
        uint64_t queue_delay_usec;              /* of the last epoch */
        double request_bytes;                   /* mean bytes per read, of the last epoch */
        uint64_t relearn_due_usec;
        unsigned relearn_depth;     /* the depth to return to after RELEARN */
        uint64_t base_checked_usec; /* when a relearn last measured the base */
        bool suspect;               /* this RELEARN checks the base because reads got slow */
        bool slow_confirmed;        /* ... and found it right: the slowness is a queue */

        /* other I/O on the device */
        bool yielding;
        uint64_t foreign_usec; /* the last time other I/O was seen */
        double foreign_rate;   /* its bytes/s, from the last sample */
        double capacity;       /* bytes/s the device delivered at most, ours and theirs */
        bool capacity_known;   /* ... measured while reads queued: all it could deliver */
        unsigned yields;       /* times it started yielding (for the log) */
} DepthTuner;

/* tuner_init() - start at @start (clamped to [@min, @max]), in STARTUP. */
void tuner_init(DepthTuner *t, unsigned min, unsigned start, unsigned max, uint64_t now_usec);
/* tuner_fixed() - a tuner that keeps @depth, except while yielding (an explicit QueueDepth=). */
void tuner_fixed(DepthTuner *t, unsigned depth, uint64_t now_usec);

/* tuner_complete() - a read of @bytes completed at @now_usec after @latency_usec. */
void tuner_complete(DepthTuner *t, uint64_t bytes, uint64_t latency_usec, uint64_t now_usec);
/* tuner_taint() - the owner could not keep t->depth reads in flight just now. */
void tuner_taint(DepthTuner *t, uint64_t now_usec);
/*
 * tuner_foreign() - a sample of the device's other I/O: @active when anything not ours was
 * read or written since the last sample, at @rate bytes/s. Starts yielding at once (returns
 * true when t->depth changed); the end of yielding is decided by tuner_update().
 */
bool tuner_foreign(DepthTuner *t, bool active, double rate, uint64_t now_usec);
/*
 * tuner_update() - end the epoch if its window is complete, and decide. Call it after
 * completions (cheap when nothing is due). Returns true when t->depth changed.
 */
bool tuner_update(DepthTuner *t, uint64_t now_usec);

/* tuner_base_latency() - the smallest recent latency, in usec; 0 before any. */
uint64_t tuner_base_latency(const DepthTuner *t);
/* tuner_target() - the queueing delay the tuner holds the device to, for @base_usec. */
uint64_t tuner_target(uint64_t base_usec);
/* tuner_yield_target() - the same while yielding to a workload: tighter. */
uint64_t tuner_yield_target(uint64_t base_usec);

const char *tuner_mode_to_string(TunerMode m);
