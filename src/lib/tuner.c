/* SPDX-License-Identifier: MIT */
/*
 * The queue-depth hill climber described in tuner.h.
 */
#include "tuner.h"
#include "util.h"

static unsigned clamp_depth(const DepthTuner *t, uint64_t depth) {
        return (unsigned)CLAMP(depth, (uint64_t)t->min, (uint64_t)t->max);
}

/* Scales by num/den, and moves by at least one step in that direction (8 x 5/4 is 10, 1 x 3/2
 * must be 2, not 1). */
static unsigned scaled(const DepthTuner *t, unsigned depth, unsigned num, unsigned den) {
        uint64_t d = (uint64_t)depth * num / den;

        if (num > den && d <= depth)
                d = (uint64_t)depth + 1;
        if (num < den && d >= depth && depth > 0)
                d = (uint64_t)depth - 1;
        return clamp_depth(t, d);
}

static void new_epoch(DepthTuner *t, uint64_t now) {
        t->epoch_usec = now;
        /* Reads submitted before now were planned for another depth (or were held back): let
         * one mean latency pass, so that the window sees the new depth's steady state. */
        t->measure_usec = now + (uint64_t)t->latency_usec;
        t->bytes = 0;
        t->completions = 0;
        t->tainted = false;
}

void tuner_init(DepthTuner *t, unsigned min, unsigned start, unsigned max, uint64_t now_usec) {
        *t = (DepthTuner){
                .min = MAX(min, 1u),
                .max = MAX(max, MAX(min, 1u)),
                .mode = TUNER_STARTUP,
                .latency_usec = (double)TUNER_LATENCY_INIT_USEC,
        };
        t->depth = clamp_depth(t, start);
        new_epoch(t, now_usec);
}

void tuner_fixed(DepthTuner *t, unsigned depth, uint64_t now_usec) {
        tuner_init(t, depth, depth, depth, now_usec);
        t->fixed = true;
        t->mode = TUNER_CRUISE;
}

void tuner_complete(DepthTuner *t, uint64_t bytes, uint64_t latency_usec, uint64_t now_usec) {
        /* Weight 1/8: smooth over a queue's worth of completions, quick enough to follow a
         * change from cold to warm blocks. */
        t->latency_usec += ((double)latency_usec - t->latency_usec) / 8.0;
        if (now_usec < t->measure_usec)
                return;
        t->bytes += bytes;
        t->completions++;
}

void tuner_taint(DepthTuner *t, uint64_t now_usec) {
        if (t->fixed)
                return;
        t->tainted = true;
        t->epoch_usec = now_usec; /* the cause must clear for a mean latency from now */
}

static bool set_depth(DepthTuner *t, unsigned depth, TunerMode mode) {
        bool changed = depth != t->depth;

        t->mode = mode;
        t->depth = depth;
        t->changes += changed;
        return changed;
}

/* Did going from base to the current depth pay: more throughput than noise could explain? */
static bool growth_paid(const DepthTuner *t, double rate) {
        return rate >= t->base_rate * (1.0 + TUNER_GROWTH_MIN);
}

/*
 * A growth step that did not pay in full crossed the knee: below it, throughput grows in
 * proportion to depth, so the knee is where the base's line reaches the rate just measured.
 * Between the base and the step's depth.
 */
static unsigned knee(const DepthTuner *t, double rate) {
        double d = (double)t->base_depth * rate / t->base_rate;

        if (!(d > (double)t->base_depth)) /* no gain (or no base): the base it is */
                return t->base_depth;
        return (unsigned)MIN((double)t->depth, d + 0.999);
}

static bool decide(DepthTuner *t, double rate) {
        unsigned base = t->base_depth;

        switch (t->mode) {
        case TUNER_STARTUP:
                if (t->base_rate > 0 && t->depth > base && !growth_paid(t, rate))
                        return set_depth(t, knee(t, rate), TUNER_CRUISE); /* the plateau */
                t->base_depth = t->depth;
                t->base_rate = rate;
                if (t->depth == t->max)
                        return set_depth(t, t->depth, TUNER_CRUISE);
                return set_depth(t, scaled(t, t->depth, TUNER_GROW_NUM, TUNER_GROW_DEN),
                                 TUNER_STARTUP);
        case TUNER_CRUISE:
                /* Follow the device while cruising: the base is the latest measure. */
                t->base_depth = t->depth;
                t->base_rate = rate;
                if (++t->cruise_epochs < TUNER_CRUISE_EPOCHS)
                        return false;
                t->cruise_epochs = 0;
                /* Alternate, down first: the climb's last step may have overshot. */
                t->probe_down = !t->probe_down;
                if (t->probe_down && t->depth > t->min)
                        return set_depth(
                                t, scaled(t, t->depth, TUNER_PROBE_DOWN_NUM, TUNER_PROBE_DOWN_DEN),
                                TUNER_PROBE_DOWN);
                if (t->depth < t->max)
                        return set_depth(
                                t, scaled(t, t->depth, TUNER_PROBE_UP_NUM, TUNER_PROBE_UP_DEN),
                                TUNER_PROBE_UP);
                return false;
        case TUNER_PROBE_UP:
                if (!growth_paid(t, rate))
                        return set_depth(t, knee(t, rate), TUNER_CRUISE);
                t->base_depth = t->depth;
                t->base_rate = rate;
                return set_depth(t, scaled(t, t->depth, TUNER_GROW_NUM, TUNER_GROW_DEN),
                                 TUNER_STARTUP);
        case TUNER_PROBE_DOWN:
                if (rate < t->base_rate * TUNER_DOWN_TOLERANCE)
                        return set_depth(t, base, TUNER_CRUISE);
                /* As fast with fewer: the rest only queued. Keep shrinking while that holds;
                 * the base stays the rate to defend, so small losses cannot add up. */
                t->base_depth = t->depth;
                if (t->depth == t->min)
                        return set_depth(t, t->depth, TUNER_CRUISE);
                return set_depth(t, scaled(t, t->depth, TUNER_PROBE_DOWN_NUM, TUNER_PROBE_DOWN_DEN),
                                 TUNER_PROBE_DOWN);
        }
        return false;
}

bool tuner_update(DepthTuner *t, uint64_t now_usec) {
        uint64_t window =
                MAX(TUNER_WINDOW_MIN_USEC, (uint64_t)(TUNER_WINDOW_LATENCIES * t->latency_usec));
        bool changed;

        if (t->fixed)
                return false;
        if (t->tainted) {
                /* Start over once the cause has had a mean latency to clear. */
                if (now_usec >= t->epoch_usec + (uint64_t)t->latency_usec)
                        new_epoch(t, now_usec);
                return false;
        }
        if (now_usec < t->measure_usec + window || t->completions < t->depth)
                return false;
        changed = decide(t, (double)t->bytes * 1e6 / (double)(now_usec - t->measure_usec));
        new_epoch(t, now_usec);
        return changed;
}

unsigned tuner_bound(uint64_t inflight_bytes, uint64_t request_bytes, unsigned lo, unsigned hi) {
        uint64_t d = request_bytes > 0 ? inflight_bytes / request_bytes : hi;

        return (unsigned)CLAMP(d, (uint64_t)lo, (uint64_t)hi);
}

const char *tuner_mode_to_string(TunerMode m) {
        static const char *const names[] = {
                [TUNER_STARTUP] = "startup",
                [TUNER_CRUISE] = "cruise",
                [TUNER_PROBE_UP] = "probe-up",
                [TUNER_PROBE_DOWN] = "probe-down",
        };

        return (unsigned)m < ELEMENTSOF(names) ? names[m] : "?";
}
