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
 * 1. Throughput (a hill climb in epochs). It starts with SLOW_START (as TCP does): one read
 *    more for each cold read that completes, so the depth doubles every round of reads, until
 *    a round does not pay: its first reads' smallest latency stands more than the target
 *    (rule 2) over the smallest seen (reads have begun to queue), or its throughput grew by
 *    less than a quarter. Beside other hydrators on the host it starts from an equal share of
 *    the depth (of those running as it starts, tuner_start_share(); once more, of those the
 *    first sample shows reading): sixteen started together behind one cap at 32 reads each
 *    queued 4-6 s of reads in front of each other's first ones, the mappings' included. Then
 *    the epochs take over from the depth the round before began with. Each epoch first lets
 *    the reads already in flight drain (one mean latency), then measures over a window of a
 *    few latencies and at least one full turn of the queue:
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
 *    cap are watched through their counters instead (rule 3). The other hydrators on the host
 *    say whether their reads queue (siblings.h): where theirs and ours queue at once, the queue
 *    is likely one cap's, and a depth sized for our own rate would keep whatever split the
 *    start made (the first volume, alone at first, holds a deep queue each newcomer climbs
 *    into). Then a drain sizes for an equal share of what we and they read when we hold over
 *    TUNER_SHARE_HIGH of it (kept whatever our rate does: giving it back is the point); under
 *    TUNER_SHARE_LOW of it we grow toward it (kept only if our rate grew, else none for a
 *    while); and a step up pays only net of what the siblings lost meanwhile.
 *    Every TUNER_RELEARN_USEC, at the same instant in every instance on the machine (at any
 *    moment of a cruise), the depth drops to the minimum for one epoch (RELEARN), so that the
 *    base is measured without our queue, or theirs, in front of it (LEDBAT++'s periodic
 *    slowdown); to one read while the queue was shared lately (TUNER_SHARED_USEC): four
 *    minimum depths at once still queue at a shared cap. Alone, the first is at the next
 *    minute boundary: the start-up epochs measured the base behind our own queue, and a base
 *    too high there only holds off a drain that would cost us throughput. Once someone else
 *    comes (a sibling reads, anyone's I/O on our disk, others' costing TUNER_YIELD_MIN_COST
 *    or more), their reads wait behind that queue and the drain and the yield lean on the
 *    base: the first relearn comes at the next TUNER_RELEARN_FIRST_USEC boundary (in STARTUP
 *    too, at one read beside siblings that read: the start's base may be the whole burst's,
 *    relearn_floor()), and a slow start that is over gives the base meanwhile (its smallest
 *    latency, unless under half the base); for a sibling that comes after the first such
 *    boundary, it alone (a relearn then would measure the newcomer's queue). After a relearn
 *    in the climb whose last epoch took twice the base found, a depth beyond what the rate
 *    needs at that base is drained at once, and beside siblings a queue ends the climb
 *    (end_relearn()). Every relearn first lets a mean latency pass. One of a queue of our
 *    own counts only the reads sent after it began,
 *    and ends once TUNER_RELEARN_READS (or its depth) of them are back; one that began with
 *    the queue shared lately lasts a window of twice the smaller of the base and its own
 *    smallest latency (at least TUNER_WINDOW_MIN_USEC: the siblings' part of the queue drains
 *    as they do). Reads under TUNER_WARM_USEC hit blocks that are warm already and say nothing
 *    of the cold latency: they are left out of the base (an epoch of mostly warm reads decides
 *    no depth, but a relearn's still ends). An epoch three times slower than the base triggers
 *    a relearn at once; if that is still twice the base, the base was learned on something
 *    else (warm blocks that waited in a queue) and starts afresh, unless the queue was shared
 *    lately (the siblings' queue, more likely; a wrong base ages out of the history in a
 *    minute).
 *
 * 3. Other I/O, in proportion (tuner_sample(), every ACTIVITY_SAMPLE_USEC, from the disks'
 *    counters: activity.h, neighbours.h, siblings.h). Each sample gives what the others'
 *    I/O costs over the last second, in bytes/s: on our own disk, and on the other disks of
 *    the family (an EC2 instance's volumes share its EBS bandwidth); and what the other
 *    hydrators on the host read, which is not a workload (siblings.h: they share by the
 *    common delay target of rule 2, as LEDBAT flows do). Against the capacities learned
 *    while nobody else was there (the most delivered in a window of TUNER_WINDOW_SECONDS:
 *    on our disk, ours and theirs; on the family, everyone's, of which we take our share
 *    beside the siblings), the yield leaves the others what they take and TUNER_YIELD_MARGIN
 *    more:
 *      pace_own = cap_own - (1 + margin) x own_cost
 *      pace_all = share x (cap_all - (1 + margin) x (own_cost + other_cost))
 *    and reads at the smaller of the two, paced (the hydrator's token bucket), with the depth
 *    that pace needs. A cut under TUNER_YIELD_MIN_CUT of what we would read with nobody else
 *    there (the smaller of cap_own and share x cap_all) is not worth a yield
 *    (a journal's commits, a log line): only the climb holds our queue to the tighter target
 *    below while it lasts, so that their reads do not wait long behind ours. So a
 *    load that takes 1% of the capacity costs about 1.5%, and a writer of 4 KiB a second
 *    costs nothing. Before TUNER_KNOWN_SECONDS of our reads, only a cut of half or more is
 *    made (the capacities are still what our ramp-up delivered). Their cost is the most of
 *    the last TUNER_YIELD_QUIET_USEC: the cut comes
 *    at once and goes only after a quiet spell (md resync's idle test, ZFS scrub's ramp).
 *    The harm they see is measured too: while yielding, the smallest latency of the last
 *    TUNER_YIELD_QUEUE_SAMPLES samples over the base is the queue they wait in (a tighter
 *    target: a sixteenth of the base, at most 5 ms). When it shows, a quarter less pace for a
 *    moment tells whether it is ours: if it goes (in every sample of the test's second half),
 *    the capacities are lowered to where the pace
 *    is 10% under the one that queued; if it stays (a busy device's latency grows with load of
 *    any kind; a workload's own queue is there whatever we do), the pace comes back and
 *    queues are left alone for TUNER_QUEUE_IGNORE_USEC. Their own latency is watched too,
 *    where only they read (tuner_stalls()): requests of theirs that wait TUNER_STALL_USEC
 *    or more, in flight or done, in TUNER_STALL_SECONDS of the last three seconds (a stall
 *    counts in the second it begins, and again each second it goes on: one of 300 ms across
 *    the turn of a second is not two; ActivityFigures.stall), are harm that may be ours
 *    whatever our reads see (behind a cap we share with siblings, a queue all of us keep is
 *    in every sibling's latency from the start, and a quarter less of one's pace does not
 *    drain it). Each sibling sees the same stalls at once, so all act together: the reads
 *    in flight go down to what the pace needs at the climb's base latency, without slack
 *    (on the rig, three siblings behind one cap cut to a third of their pace and the stalls
 *    stayed: they come from the reads waiting at the cap, not from its rate), and the
 *    capacities are lowered by TUNER_STALL_STEP of the pace at once and each second stalls
 *    last. None for TUNER_STALL_CLEAR_USEC, or the longest wait of two seconds in a row half
 *    of those that began the test (the second longest of the longest of the four seconds
 *    before it and of its first), within TUNER_STALL_TEST_USEC: they were ours, no more
 *    cuts, the capacities stay lowered and the depth short for TUNER_STALL_HOLD_USEC; else
 *    they are not ours: all comes back as it was. Either way stalls are left alone for
 *    TUNER_QUEUE_IGNORE_USEC after (twice as long each time they are found not ours again
 *    in the yield), and the tests of one yield take at most half of the pace the first began
 *    with (a test found not ours gives back what it took).
 *    At the start of a yield the pace is halved until the queue we held before has drained.
 *    Capacities not seen at saturation for TUNER_CAPACITY_TRUST_USEC are believed
 *    TUNER_YIELD_PROBE a second larger while no queue shows, so that one learned low (behind
 *    a sibling's queue, say) recovers; a probe that finds the queue where it was waits twice
 *    as long before the next (up to TUNER_PROBE_WAIT_MAX_USEC). With no capacity learned yet
 *    (busy from the start, or a queue that was never seen as ours), it starts at the depth the
 *    pace needs at the base latency and the yield's target (at least TUNER_YIELD_START reads),
 *    and once the queue it held before has drained adds one a sample in which a read of ours
 *    completed, until reads queue, or until the requests beside us take more than twice what
 *    they did meanwhile and more than the yield's largest target (harm: back to the depth
 *    the growth began at, and one less each two mean latencies while it lasts): the total
 *    over the second after the stop is the capacity, unless the seconds before delivered more
 *    (a cap that stops and goes gives slow seconds).
 *    Not yielding, requests beside us that took long in most samples of the last second may be
 *    a load that wants more than it gets (starved behind a cap we keep full, it costs too
 *    little to yield to): the depth is halved for a moment (TUNER_HIDDEN_USEC) to see
 *    (hidden_demand()).
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

#include "activity.h"
#include "util.h"

#define TUNER_SLOW_START_SAMPLES 8 /* a round's delay: the smallest of its first 8 reads */
#define TUNER_SLOW_START_GAIN 1.25 /* a round pays when its throughput grows by a quarter */
#define TUNER_GROW_NUM 3           /* STARTUP: x 3/2 */
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
#define TUNER_RELEARN_FIRST_USEC (5 * USEC_PER_SEC) /* ... a minute; soon, base in doubt */
#define TUNER_RELEARN_READS 2 /* ... ending once this many reads sent in it are back */

#define TUNER_YIELD_TARGET_DIVISOR 16                   /* yielding: base / 16 ... */
#define TUNER_YIELD_TARGET_MAX_USEC (5 * USEC_PER_MSEC) /* ... at most 5 ms of their wait */
#define TUNER_SAMPLE_USEC (100 * USEC_PER_MSEC)         /* tuner_sample()'s cadence */
#define TUNER_RATE_SAMPLES 10                           /* rates over the last second */
#define TUNER_WINDOW_SECONDS 30                         /* capacities: the most of 30 s ... */
#define TUNER_CAPACITY_SECONDS 3 /* ... of what was delivered over 3 s in a row (not a burst) */
#define TUNER_YIELD_MARGIN 0.5   /* leave the others what they take and half as much again */
#define TUNER_YIELD_MIN_CUT 0.03 /* a cut under 3% of our rate: no yield */
/* ... nor to others who cost less than this in all: under it, what the counters say of them is
 * within what they cannot tell apart (a request of ours counted at other moments) */
#define TUNER_YIELD_MIN_COST (1024.0 * 1024.0)
#define TUNER_YIELD_FLOOR \
        0.05 /* never below 5% of what we read alone: politeness, not starvation */
#define TUNER_YIELD_QUIET_USEC (5 * USEC_PER_SEC)     /* their cost: the most of the last 5 s */
#define TUNER_CAPACITY_TRUST_USEC (60 * USEC_PER_SEC) /* a capacity seen at saturation ... */
#define TUNER_YIELD_PROBE 0.02 /* ... then believed 2% a second larger while no queue shows */
#define TUNER_PROBE_WAIT_MAX_USEC                                      \
        (16 * TUNER_CAPACITY_TRUST_USEC) /* a probe that found nothing \
                                          * more: twice as long */
#define TUNER_YIELD_START 2u /* yielding with no capacity known yet: at least this many reads */
#define TUNER_YIELD_SETTLE_USEC (3 * USEC_PER_SEC) /* our queue from before has drained by then */
#define TUNER_YIELD_QUEUE_SAMPLES 3 /* yielding, a queue: in the last three samples' reads */
#define TUNER_QUEUE_TEST_SCALE 0.75 /* ... ours if it goes when the pace is a quarter less, */
#define TUNER_QUEUE_KEEP 0.9        /* ... then the pace 10% under the one that queued; */
#define TUNER_QUEUE_IGNORE_USEC (30 * USEC_PER_SEC) /* ... not ours: left alone for a while */
/* A request of theirs on a disk beside ours that no sibling reads waited this long (activity.h):
 * a stall; ... */
#define TUNER_STALL_USEC ACTIVITY_STALL_USEC
#define TUNER_STALL_SECONDS 2 /* ... in so many of the last three seconds: harm, maybe ours */
#define TUNER_STALL_STEP 0.1  /* ... the pace 10% less each second stalls last, */
#define TUNER_STALL_CLEAR_USEC (3 * USEC_PER_SEC) /* ... ours if none shows for 3 s, */
#define TUNER_STALL_TEST_USEC (6 * USEC_PER_SEC)  /* ... or less by half within 6 s */
#define TUNER_STALL_HOLD_USEC (60 * USEC_PER_SEC) /* ... then the depth short for a minute */
#define TUNER_KNOWN_SECONDS 3       /* a capacity from fewer seconds than this is not known */
#define TUNER_YIELD_FIRST_SAMPLES 3 /* no yield before three samples of our reads ... */
#define TUNER_YIELD_EARLY_CUT 0.5   /* ... nor before a second of them, but for a cut of half */
/* nor to the volumes beside ours in the two seconds from our first read */
#define TUNER_START_SAMPLES 20
#define TUNER_YIELD_DEPTH_SLACK 1.25 /* paced: reads in flight for 1.25 x pace x latency ... */
#define TUNER_YIELD_LATENCY_MAX 3    /* ... a latency of at most 3 x the base */
#define TUNER_YIELD_BASE_SECONDS 10  /* yielding, the base: the smallest latency of 10 s */
/* The pace goes out in batches this often, each at once, at multiples of it on the monotonic
 * clock (hydrator-rate.c): at least the batches of a latency are in flight. */
#define TUNER_PACE_BATCH_USEC (100 * USEC_PER_MSEC)
/* Not yielding, the requests beside us took over TUNER_YIELD_TARGET_MAX_USEC in this many of
 * the last TUNER_RATE_SAMPLES samples: a load whose demand our reads may hide (hidden_demand()).
 * Then our depth is halved for TUNER_HIDDEN_USEC; if nothing showed, none for
 * TUNER_HIDDEN_WAIT_USEC, twice as long after each such (up to TUNER_PROBE_WAIT_MAX_USEC). */
#define TUNER_HIDDEN_SAMPLES 8
#define TUNER_HIDDEN_USEC (1 * USEC_PER_SEC)
#define TUNER_HIDDEN_WAIT_USEC (30 * USEC_PER_SEC)
/* Behind a queue, with siblings reading: over 120% of an equal share, drain to it; under 80%,
 * take it (closer than that, the siblings' rates over one epoch do not tell). */
#define TUNER_SHARE_HIGH 1.2
#define TUNER_SHARE_LOW 0.8
#define TUNER_SHARED_USEC (10 * USEC_PER_SEC) /* a queue shared with siblings lately: 10 s */

/* A queue seen while yielding, and the test of whether it is ours (tuner-yield.c). */
typedef enum TunerQueueTest {
        TUNER_QUEUE_NONE,
        TUNER_QUEUE_TESTING, /* the pace cut by TUNER_QUEUE_TEST_SCALE: does the queue go? */
        TUNER_QUEUE_IGNORED, /* it did not: not ours */
} TunerQueueTest;

typedef enum TunerMode {
        TUNER_SLOW_START,
        TUNER_STARTUP,
        TUNER_CRUISE,
        TUNER_PROBE_UP,
        TUNER_PROBE_DOWN,
        TUNER_RELEARN,
        TUNER_YIELD,
        _TUNER_MODE_MAX,
} TunerMode;

/* Rates over one second, bytes/s, and the smallest cold latency of that second. */
typedef struct TunerRates {
        double ours;       /* our completed reads */
        double siblings;   /* the other hydrators' reads on the family's disks (siblings.h) */
        double own_cost;   /* what others' I/O on our disk costs */
        double other_cost; /* ... on the other disks of the family */
        uint64_t min_latency_usec; /* UINT64_MAX: no cold read completed */
} TunerRates;

/* One sample: our bytes completed in it, its span, its smallest cold latency. */
typedef struct TunerSlot {
        double bytes;
        uint64_t span_usec;
        uint64_t min_latency_usec; /* UINT64_MAX: no cold read completed */
} TunerSlot;

/* What one epoch measured (tuner.c). */
typedef struct TunerEpoch {
        double rate;      /* bytes/s; 0: no epoch measured */
        double request;   /* bytes per completion */
        uint64_t base;    /* base latency, usec */
        uint64_t queue;   /* queueing delay, usec: its smallest latency less the base */
        uint64_t target;  /* queueing delay worth nothing more */
        double siblings;  /* bytes/s the siblings read meanwhile */
        unsigned readers; /* how many of them read: 0, none (or not known) */
        bool beside;      /* siblings read in the window (readers: at its last look only) */
        bool shared;      /* ... and some said their reads queue too */
        unsigned depth;   /* the depth it measured */
} TunerEpoch;

/* One second of the capacity window: the rates over it, and the most the others cost in it. */
typedef struct TunerSecond {
        double ours, own_total, all_total;
        double siblings;           /* what the siblings read */
        uint64_t min_latency_usec; /* the smallest cold latency in it; UINT64_MAX none */
        double own_cost, other_cost;
        bool queued;  /* our reads queued at some sample of it: those totals were all there was */
        bool stalled; /* a request of theirs beside us stalled in it (tuner_stalls()) */
        uint64_t wait_max; /* ... the longest wait seen in it, usec */
        bool used;         /* has samples */
} TunerSecond;

typedef struct DepthTuner {
        unsigned min, max; /* bounds of the climb (giving way to others, the floor is 1) */
        unsigned depth;    /* reads to keep in flight now */
        bool fixed;        /* tuner_fixed(): climbs and probes nothing; max is the depth */
        TunerMode mode;

        /* the depth that was measured last, to compare the current epoch with */
        unsigned base_depth;
        double base_rate; /* bytes/s at base_depth; 0 = none yet */
        unsigned cruise_epochs;
        unsigned probe_wait;  /* cruise epochs before the next probe */
        bool probe_down;      /* the last probe was (or this one is) downwards */
        bool delay_probe;     /* the current PROBE_DOWN was caused by queueing delay */
        bool delay_hold;      /* queueing paid for itself: no drain for a while ... */
        unsigned hold_left;   /* ... this many more cruise epochs */
        unsigned hold_next;   /* the next hold: doubled each time, up to TUNER_CRUISE_EPOCHS_MAX */
        bool drain_retried;   /* a drain fell short once and is being tried a quarter deeper */
        double base_siblings; /* the siblings' rate at base_depth: a drain judged by both */
        bool share_drain;     /* the current drain gives back more than our share */
        bool taking_share;    /* the current PROBE_UP takes our share of a queue we share */
        bool share_hold;      /* ... and one did not pay (our queue is our own): none for ... */
        unsigned share_left;  /* ... this many more cruise epochs */
        unsigned share_next;  /* the next such hold: doubled, up to TUNER_CRUISE_EPOCHS_MAX */

        /* the siblings (tuner_siblings()) */
        unsigned readers;      /* how many of them read lately */
        bool queueing;         /* our reads queued in the last epoch (tuner_queueing()) */
        bool shared_window;    /* a sibling's reads queued too, in the epoch's window */
        uint64_t shared_usec;  /* when last both ours and a sibling's did; 0 never */
        double sibling_bytes;  /* what they read inside the epoch's window ... */
        uint64_t sibling_usec; /* ... over this long */

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
        double request_bytes;                   /* bytes of the last read completed */
        uint64_t relearn_due_usec;
        unsigned relearn_depth;      /* the depth to return to after RELEARN */
        TunerMode relearn_mode;      /* ... and the mode (CRUISE, or STARTUP it interrupted) */
        bool climb_relearned;        /* a relearn came in this climb (end_relearn()) */
        TunerEpoch last;             /* the last epoch not a relearn's; rate 0: none since the climb
                                      * began */
        uint64_t base_checked_usec;  /* when a relearn last measured the base */
        bool base_doubted;           /* ... none had when others came (tuner_base_doubted()) */
        uint64_t relearn_early_usec; /* the first 5 s boundary after the start */
        bool suspect;                /* this RELEARN checks the base because reads got slow */
        bool relearn_shared;         /* ... began with the queue shared lately (shared_lately()) */
        bool slow_confirmed;         /* ... and found it right: the slowness is a queue */

        /* slow start: the round of reads under way */
        unsigned start_depth;       /* the depth the tuner started at (tuner_init()) */
        bool start_shared;          /* siblings were seen reading (the cut, once) */
        uint64_t start_cut_usec;    /* when the slow start was cut to their share; 0 never */
        unsigned round_depth;       /* the depth when it began: its length in completions */
        unsigned round_prev_depth;  /* ... and the round before's */
        unsigned round_completions; /* cold completions in it so far */
        uint64_t round_start_usec;  /* its first completion */
        double round_bytes;         /* completed in it */
        double round_rate;          /* bytes/s of the round before; 0 none */
        uint64_t round_min_usec;    /* the smallest latency of its first reads; UINT64_MAX none */
        uint64_t start_min_usec;    /* the smallest cold latency since the start */
        unsigned start_completions; /* cold completions since the (re)start of the climb */
        uint64_t start_first_usec;  /* when the first of them came */
        uint64_t start_done_usec[TUNER_SLOW_START_SAMPLES]; /* when the last ones came, a ring */

        /* other I/O (tuner_sample()) */
        bool others; /* someone else's I/O lately, worth a yield or not */
        bool yielding;
        double pace;               /* bytes/s to read at while yielding; 0 = not paced */
        double cut;                /* 1 - pace / fair: the share of what we would read given way */
        bool yield_own;            /* the cut is for I/O on our own disk (else on the others) */
        double sample_bytes;       /* ours completed since the last sample */
        uint64_t sample_min_usec;  /* their smallest cold latency; UINT64_MAX none */
        uint64_t last_sample_usec; /* 0 before the first */
        TunerSlot ring[TUNER_RATE_SAMPLES]; /* the last second's samples */
        unsigned ring_n, ring_next;
        unsigned read_samples; /* samples since the first in which a read of ours completed */
        TunerSecond seconds[TUNER_WINDOW_SECONDS]; /* per second: the most of each rate */
        unsigned second_next;
        uint64_t second_usec;        /* when the current second began */
        TunerRates now;              /* rates over the last second (the latest sample's view) */
        double own_cost, other_cost; /* the most of the last TUNER_YIELD_QUIET_USEC */
        double cap_own;              /* bytes/s our disk delivered at most: ours and theirs */
        double cap_all;              /* bytes/s the family delivered at most: everyone's */
        double share;                /* ... of which ours beside the siblings', 0 to 1 */
        double ref_ours;             /* bytes/s we read at most (the floor is a share of it) */
        double fair;                 /* what we would read with nobody else there */
        unsigned cap_seconds;        /* the seconds of our reads the capacities come from */
        bool cap_known;              /* the capacities were seen at saturation (reads queued) ... */
        uint64_t cap_seen_usec;      /* ... last at this time */
        uint64_t yield_start_usec;   /* when it began to yield */
        bool yield_settled;          /* ... and the queue we held before has drained */
        uint64_t queue_seen_usec;    /* when a queue last cut the capacities, while yielding */
        uint64_t probe_hold_usec;    /* none known: when growth stopped (a queue, harm); 0 not */
        uint64_t grow_wait_min;      /* ... the least their requests waited while it grew */
        unsigned grow_from;          /* ... the depth it began at */
        bool grow_harmed;            /* ... their wait grew: back to it (or one less) */
        uint64_t grow_harm_usec;     /* ... last done then */
        uint64_t probe_wait_usec;    /* trust a capacity this long before probing it */
        TunerQueueTest queue_test;
        uint64_t queue_test_usec;   /* when it began */
        double queue_pace;          /* the pace that queued */
        bool queue_test_seen;       /* a queue in its second half: not gone at the smaller pace */
        double pace_scale;          /* 1, or TUNER_QUEUE_TEST_SCALE while testing */
        bool probing;               /* the capacities grow: probing */
        unsigned yields;            /* times it started yielding (for the log) */
        uint64_t their_wait_usec;   /* a request beside us has waited so long (tuner_stalls()) */
        bool stall_new;             /* ... the last sample saw a new stall (tuner_stalls()) */
        TunerQueueTest stall_test;  /* stalls seen while yielding: ours? */
        uint64_t stall_test_usec;   /* when it began (or ended, with a verdict) */
        uint64_t stall_seen_usec;   /* ... when one showed last */
        uint64_t stall_cut_usec;    /* ... when the pace was last cut for them */
        uint64_t stall_top;         /* ... the longest wait of the seconds that began it, */
        uint64_t stall_wait;        /* ... the second longest: theirs, usec */
        uint64_t stall_window_usec; /* ... the second being watched began then, */
        uint64_t stall_window_max;  /* ... and its longest wait so far */
        bool stall_gone;            /* ... they stopped (ours) */
        unsigned stall_halved;      /* ... seconds in a row whose longest wait was half */
        bool stall_ours;            /* ... two such seconds: ours */
        bool stall_short;           /* ... reads in flight for the pace at the base latency, */
        uint64_t stall_short_usec;  /* ... since they were found ours (TUNER_STALL_HOLD_USEC) */
        uint64_t stall_left_usec;   /* ... ended: left alone this long */
        uint64_t stall_ignore_usec; /* not ours: so long, in this yield (0: not found so yet) */
        double stall_cap_own, stall_cap_all; /* ... the capacities before it */
        double stall_test_cut;               /* ... the pace it took */
        double stall_budget;                 /* what the tests of this yield may take still, */
        bool stall_budget_set;               /* ... set at its first (half its pace) */
        unsigned stall_tests;                /* ... begun (for the log) */

        /* a load beside us whose demand our reads may hide (hidden_demand()) */
        unsigned hidden_bits;      /* the last samples: their requests took long (a bit each) */
        uint64_t hidden_usec;      /* our depth halved since then; 0 not */
        unsigned hidden_depth;     /* ... from this */
        uint64_t hidden_next_usec; /* none before then */
        uint64_t hidden_wait_usec; /* ... the wait after the next that finds nothing */
        unsigned hidden_probes;    /* begun (for the log) */
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
 * tuner_sample() - every TUNER_SAMPLE_USEC: what the others' I/O cost since the last sample
 * (@own_cost on our disk, @other_cost on the other disks of the family; bytes/s over the last
 * second, see hydrator-activity.c) and what the other hydrators on the host read (@siblings,
 * bytes/s). Decides whether to yield and at what pace. Returns true when t->depth changed.
 */
bool tuner_sample(DepthTuner *t, double siblings, double own_cost, double other_cost,
                  uint64_t now_usec);
/*
 * tuner_siblings() - before each tuner_sample(): @readers of the other hydrators on the host
 * read lately, @queued of those say their reads queue, and all of them read @bytes since the
 * last sample (the sampling period, ending at @now_usec). Where they and we queue at once, the
 * queue is likely one cap's: each takes an equal share of it (tuner.c).
 */
void tuner_siblings(DepthTuner *t, unsigned readers, unsigned queued, double bytes,
                    uint64_t now_usec);
/*
 * tuner_stalls() - before each tuner_sample(): on the disks beside ours that no sibling reads,
 * a request has waited @wait_usec (in flight, or done in the last sample: the longer), and
 * @stall: one of them shows a stall that is new or has gone on another second
 * (ActivityFigures.stall). Theirs alone: what such a disk's requests wait is the harm a queue
 * of ours behind a cap we share does them.
 */
void tuner_stalls(DepthTuner *t, uint64_t wait_usec, bool stall);
/*
 * tuner_start_share() - before the first read: @siblings other hydrators on the host are
 * running. The slow start begins at an equal share of the depth it would start at (they may
 * share a cap with us: sixteen starting at 32 each queued 4-6 s of reads at one 125 MiB/s cap
 * on the rig); it doubles from there each round while that pays.
 */
void tuner_start_share(DepthTuner *t, unsigned siblings);
/* tuner_queueing() - our reads queued in the last epoch (for the siblings: siblings.h). */
bool tuner_queueing(const DepthTuner *t);
/* tuner_pace() - bytes/s to read at most while yielding; 0 = no pace. */
double tuner_pace(const DepthTuner *t);
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

/* tuner_mode_to_string() - "slow-start", ..., "yield"; "?" for a value that is none. */
const char *tuner_mode_to_string(TunerMode m);
