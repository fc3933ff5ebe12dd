/* SPDX-License-Identifier: MIT */
/*
 * The reader control law described in tuner.h: a throughput hill climb, held to a queueing delay
 * target. The slow start before it is tuner-slow-start.c's, the yield to other I/O
 * tuner-yield.c's.
 */
#include <assert.h>

#include "string-table.h"
#include "tuner-internal.h"
#include "tuner.h"
#include "util.h"

unsigned tuner_clamp_depth(const DepthTuner *t, uint64_t depth) {
        return (unsigned)CLAMP(depth, (uint64_t)t->min, (uint64_t)t->max);
}

unsigned tuner_clamp_yield(const DepthTuner *t, uint64_t depth) {
        return (unsigned)CLAMP(depth, UINT64_C(1), (uint64_t)t->max);
}

/* Scales by num/den, and moves by at least one step in that direction (8 x 5/4 is 10, 1 x 3/2
 * must be 2, not 1). */
static unsigned scaled(const DepthTuner *t, unsigned depth, unsigned num, unsigned den) {
        uint64_t d = (uint64_t)depth * num / den;

        if (num > den && d <= depth)
                d = (uint64_t)depth + 1;
        if (num < den && d >= depth && depth > 0)
                d = (uint64_t)depth - 1;
        return tuner_clamp_depth(t, d);
}

void tuner_new_epoch(DepthTuner *t, uint64_t now) {
        t->epoch_usec = now;
        /* Reads submitted before now were planned for another depth (or were held back): let
         * one mean latency pass, so that the window sees the new depth's steady state. */
        t->measure_usec = now + (uint64_t)t->latency_usec;
        t->bytes = 0;
        t->completions = 0;
        t->warm_completions = 0;
        t->min_latency_usec = UINT64_MAX;
        t->tainted = false;
        t->sibling_bytes = 0;
        t->sibling_usec = 0;
        t->shared_window = false;
}

/* The next multiple of @period after @now: every instance on the machine reads the same
 * monotonic clock, so their slowdowns fall together and drain a queue they share. */
static uint64_t next_boundary(uint64_t now, uint64_t period) {
        return (now / period + 1) * period;
}

void tuner_init(DepthTuner *t, unsigned min, unsigned start, unsigned max, uint64_t now_usec) {
        *t = (DepthTuner){
                .min = MAX(min, 1u),
                .max = MAX(max, MAX(min, 1u)),
                .mode = TUNER_SLOW_START,
                .latency_usec = (double)TUNER_LATENCY_INIT_USEC,
                .round_min_usec = UINT64_MAX,
                .start_min_usec = UINT64_MAX,
                .sample_min_usec = UINT64_MAX,
                .base_bucket_usec = now_usec,
                /* Sooner once the base is in doubt (tuner_base_doubted()). */
                .relearn_due_usec = next_boundary(now_usec, TUNER_RELEARN_USEC),
                .relearn_early_usec = next_boundary(now_usec, TUNER_RELEARN_FIRST_USEC),
                .probe_wait = TUNER_CRUISE_EPOCHS,
                .hidden_wait_usec = TUNER_HIDDEN_WAIT_USEC,
                .hold_next = TUNER_CRUISE_EPOCHS,
                .share_next = TUNER_CRUISE_EPOCHS,
        };
        for (unsigned i = 0; i < TUNER_BASE_BUCKETS; i++)
                t->base_hist[i] = UINT64_MAX;
        for (unsigned i = 0; i < TUNER_WINDOW_SECONDS; i++)
                t->seconds[i].min_latency_usec = UINT64_MAX;
        t->depth = tuner_clamp_depth(t, start);
        t->round_depth = t->round_prev_depth = t->start_depth = t->depth;
        if (t->depth == t->max) /* nothing to start slowly towards */
                t->mode = TUNER_STARTUP;
        tuner_new_epoch(t, now_usec);
}

void tuner_fixed(DepthTuner *t, unsigned depth, uint64_t now_usec) {
        tuner_init(t, depth, depth, depth, now_usec);
        t->fixed = true;
        t->mode = TUNER_CRUISE;
}

/* A queue shared with siblings in the last TUNER_SHARED_USEC. */
static bool shared_lately(const DepthTuner *t, uint64_t now) {
        return t->shared_usec > 0 && now - t->shared_usec < TUNER_SHARED_USEC;
}

void tuner_complete(DepthTuner *t, uint64_t bytes, uint64_t latency_usec, uint64_t now_usec) {
        bool cold = latency_usec >= TUNER_WARM_USEC; /* a warm block says nothing of cold ones */

        /* Weight 1/8: smooth over a queue's worth of completions, quick enough to follow a
         * change from cold to warm blocks. */
        t->latency_usec += ((double)latency_usec - t->latency_usec) / 8.0;
        t->request_bytes = (double)bytes;
        t->sample_bytes += (double)bytes;
        if (cold)
                t->sample_min_usec = MIN(t->sample_min_usec, latency_usec);
        if (t->mode == TUNER_SLOW_START && cold && !t->yielding)
                tuner_slow_start(t, bytes, latency_usec, now_usec);
        /* What completes once a mean latency has passed; in a relearn of a queue of our own, of
         * the reads sent since it began (which found no more of ours in flight than its depth)
         * only: a couple of them end it (tuner_update()). */
        if (now_usec < t->measure_usec || (t->mode == TUNER_RELEARN && !t->relearn_shared &&
                                           now_usec < t->epoch_usec + latency_usec))
                return;
        t->bytes += bytes;
        t->completions++;
        if (cold)
                t->min_latency_usec = MIN(t->min_latency_usec, latency_usec);
        else
                t->warm_completions++;
}

void tuner_siblings(DepthTuner *t, unsigned readers, unsigned queued, double bytes,
                    uint64_t now_usec) {
        uint64_t span = t->last_sample_usec > 0 && now_usec > t->last_sample_usec
                                ? now_usec - t->last_sample_usec
                                : TUNER_SAMPLE_USEC;

        t->readers = readers;
        if (readers > 0) {
                tuner_base_doubted(t, true, now_usec);
                tuner_slow_start_siblings(t, readers, now_usec);
        }
        if (queued > 0 && t->queueing)
                t->shared_usec = now_usec;
        /* A sample counts for the epoch's window if most of it falls inside. */
        if (now_usec >= t->measure_usec + span / 2) {
                t->sibling_bytes += bytes;
                t->sibling_usec += span;
                t->shared_window |= queued > 0;
        }
}

void tuner_stalls(DepthTuner *t, uint64_t wait_usec, bool stall) {
        t->their_wait_usec = wait_usec;
        t->stall_new = stall;
}

bool tuner_queueing(const DepthTuner *t) {
        return t->queueing && !t->yielding;
}

void tuner_taint(DepthTuner *t, uint64_t now_usec) {
        t->tainted = true;
        t->queueing = false; /* not measured meanwhile: the siblings must not go on believing it */
        t->epoch_usec = now_usec; /* the cause must clear for a mean latency from now */
}

void tuner_forget_probe(DepthTuner *t) {
        t->delay_probe = t->drain_retried = t->taking_share = t->share_drain = false;
}

bool tuner_set_depth(DepthTuner *t, unsigned depth, TunerMode mode) {
        bool changed = depth != t->depth;

        assert(depth >= 1 && depth <= t->max); /* below the minimum only to yield; never none */
        t->mode = mode;
        t->depth = depth;
        t->changes += changed;
        return changed;
}

/* ---- base latency and queueing delay ---- */

void tuner_base_note(DepthTuner *t, uint64_t latency, uint64_t now) {
        for (unsigned i = 0; now - t->base_bucket_usec >= TUNER_BASE_BUCKET_USEC; i++) {
                if (i == TUNER_BASE_BUCKETS) { /* a long gap: everything has aged out */
                        t->base_bucket_usec = now;
                        break;
                }
                t->base_bucket = (t->base_bucket + 1) % TUNER_BASE_BUCKETS;
                t->base_hist[t->base_bucket] = UINT64_MAX;
                t->base_bucket_usec += TUNER_BASE_BUCKET_USEC;
        }
        t->base_hist[t->base_bucket] = MIN(t->base_hist[t->base_bucket], latency);
}

/*
 * The start-up epochs measured the base at the depth they climbed to, behind a queue of our own
 * (or of siblings that started with us): too high by that queue. Alone on the device that costs
 * nobody anything: a base too high only holds off a drain, which would cost us throughput (a
 * relearn 0-5 s after the start cost a 1 GiB run 3-5%), and a relearn comes at the next minute
 * boundary anyway. Once someone else is there, their reads wait behind that queue, and the
 * drain and the yield's queue test lean on the base: the first relearn comes at the next
 * TUNER_RELEARN_FIRST_USEC boundary, as it did after every start before (the same boundary in
 * every instance that started about when we did, so that they drain together), and where the
 * slow start is over, its smallest latency goes into the history meanwhile (a queue of ours
 * was at most the start's depth then; one under half the base is more likely a warm read that
 * waited behind the others, and is left out). For a sibling that comes after that boundary,
 * while the slow start's latency serves, no relearn: one now would fall out of step with the
 * newcomer's own and measure its queue (a base of 392 ms on a 90 ms volume in unit/tuner's
 * model of late siblings).
 */
void tuner_base_doubted(DepthTuner *t, bool sibling, uint64_t now) {
        bool noted = false;

        /* Called every sample while someone else is there: once only. */
        if (t->base_checked_usec > 0 || t->base_doubted)
                return;
        t->base_doubted = true;
        if (t->mode != TUNER_SLOW_START && t->start_min_usec != UINT64_MAX &&
            2 * t->start_min_usec >= tuner_base_latency(t)) {
                tuner_base_note(t, t->start_min_usec, now);
                noted = true;
        }
        if (!sibling || !noted || now < t->relearn_early_usec)
                t->relearn_due_usec =
                        MIN(t->relearn_due_usec, next_boundary(now, TUNER_RELEARN_FIRST_USEC));
}

uint64_t tuner_base_latency(const DepthTuner *t) {
        uint64_t base = UINT64_MAX;

        for (unsigned i = 0; i < TUNER_BASE_BUCKETS; i++)
                base = MIN(base, t->base_hist[i]);
        return base == UINT64_MAX ? 0 : base;
}

uint64_t tuner_target(uint64_t base_usec) {
        return CLAMP(base_usec / TUNER_TARGET_DIVISOR, TUNER_TARGET_MIN_USEC,
                     TUNER_TARGET_MAX_USEC);
}

uint64_t tuner_yield_target(uint64_t base_usec) {
        return CLAMP(base_usec / TUNER_YIELD_TARGET_DIVISOR, TUNER_TARGET_MIN_USEC,
                     TUNER_YIELD_TARGET_MAX_USEC);
}

typedef TunerEpoch Sample;

/* Reads in flight that carry @rate at the base latency plus the target (Little's law). Below the
 * climb's minimum if need be: a queue is a queue, however few reads we have in it. */
static unsigned depth_for(const DepthTuner *t, const Sample *s, double rate) {
        double d = rate * (double)(s->base + s->target) / (double)USEC_PER_SEC / s->request;

        return tuner_clamp_yield(t, (uint64_t)(d + 0.5));
}

/* An equal share of what we and the siblings read. */
static double fair_share(const Sample *s) {
        return (s->rate + s->siblings) / (s->readers + 1);
}

/* What a drain sizes the depth for: our rate; with siblings behind the queue (it may be theirs
 * too), no more than an equal share. A climb that only ever drained to its own rate would keep
 * the split its start made: the first volume, alone at first, held a deep queue that each
 * sibling then climbed into. */
static double drain_rate(const Sample *s) {
        return s->shared && s->rate > TUNER_SHARE_HIGH * fair_share(s) ? fair_share(s) : s->rate;
}

/* Twice the target: worth draining. Between the two the depth stays (a whole number of reads
 * rarely lands on the target, and a few milliseconds of jitter are no reason to act). */
static bool queueing(const Sample *s) {
        return s->queue > 2 * s->target;
}

/* ---- the climb ---- */

/* The measure a step is judged against: @depth, and what we and the siblings read there. */
static void set_base(DepthTuner *t, unsigned depth, const Sample *s) {
        t->base_depth = depth;
        t->base_rate = s->rate;
        t->base_siblings = s->siblings;
}

/* What we gained since the base, less what the siblings lost meanwhile, if our reads queued:
 * behind a cap we share, reads we add take a share from theirs, which looks like growth from
 * here. (Without a queue they cannot have: the siblings' own ups and downs are not counted.) */
static double net_rate(const DepthTuner *t, const Sample *s) {
        double lost = s->shared && s->queue > s->target ? t->base_siblings - s->siblings : 0;

        return s->rate - MAX(lost, 0.0);
}

/* Did going from base to the current depth pay: more throughput than noise could explain, and
 * at least half of what the depth grew? */
static bool growth_paid(const DepthTuner *t, double rate) {
        double grew = t->base_depth > 0 ? (double)t->depth / t->base_depth - 1.0 : 0.0;

        return rate >= t->base_rate * (1.0 + MAX(TUNER_GROWTH_MIN, TUNER_GROWTH_SHARE * grew));
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

/* Queueing delay over the target: probe down to the depth the throughput needs (our share of
 * it, drain_rate()), at once. False when that is no smaller than @from; else *@changed says
 * whether the depth changed. */
static bool drain(DepthTuner *t, const Sample *s, unsigned from, bool *changed) {
        unsigned d = depth_for(t, s, drain_rate(s));

        if (d >= from)
                return false;
        set_base(t, from, s);
        t->delay_probe = true;
        t->share_drain = drain_rate(s) < s->rate;
        *changed = tuner_set_depth(t, d, TUNER_PROBE_DOWN);
        return true;
}

/* The climb is over at @depth: cruise there, or drain first if reads queue. */
static bool cruise_at(DepthTuner *t, const Sample *s, unsigned depth) {
        bool changed;

        if (queueing(s) && drain(t, s, depth, &changed))
                return changed;
        return tuner_set_depth(t, depth, TUNER_CRUISE);
}

/*
 * Behind a queue, with siblings reading: under TUNER_SHARE_LOW of an equal share, the depth
 * that carries that share (at most half as deep again at once). Where the queue is shared
 * (one cap for the instance), the reads we add take a share from those who hold more than
 * theirs, and they drain (drain_rate()); where it is our own, more reads buy nothing, and
 * growth_paid() says so: then none for a while, twice as long each time.
 */
static bool take_share(DepthTuner *t, const Sample *s) {
        unsigned d;

        if (!s->shared || s->queue <= s->target || t->share_hold || t->depth >= t->max ||
            s->rate >= TUNER_SHARE_LOW * fair_share(s))
                return false;
        d = MIN(depth_for(t, s, fair_share(s)),
                scaled(t, t->depth, TUNER_GROW_NUM, TUNER_GROW_DEN));
        if (d <= t->depth)
                return false;
        set_base(t, t->depth, s);
        t->taking_share = true;
        return tuner_set_depth(t, tuner_clamp_depth(t, d), TUNER_PROBE_UP);
}

/* Did a drain lose nothing: our rate held, or, behind a queue the siblings share, what we gave
 * up they took (our reads only queued in front of theirs)? A drain to our share is meant to give
 * up, and is kept: the siblings drain at the same moments, so what they took cannot be told from
 * one epoch (judged by it, such drains were undone back to 45 reads in flight on the rig, and
 * held there). Where the queue only looked shared (volumes with caps of their own, unequal,
 * queueing at once), a climb takes back what was given up, at the pace of its probes. */
static bool drain_held(const DepthTuner *t, const Sample *s) {
        double lost = MAX(t->base_rate - s->rate, 0.0);
        double gained = s->shared ? CLAMP(s->siblings - t->base_siblings, 0.0, lost) : 0;

        if (t->share_drain)
                return true;
        return s->rate + gained >= t->base_rate * TUNER_DOWN_TOLERANCE;
}

static bool decide_probe_down(DepthTuner *t, const Sample *s) {
        unsigned base = t->base_depth;
        bool delay = t->delay_probe;

        t->delay_probe = false;
        if (delay) {
                /* If throughput held, the reads had only queued. If it fell, Little's law
                 * with the smallest latency cut a little short (reads do not all take the
                 * smallest): a quarter more, once. If that is still short, the reads paid for
                 * their delay (a device that gets faster the deeper it is driven): back, and
                 * no drain for a while. (Whether the queue was ours or someone else's behind
                 * the same cap, a drain cannot tell: a device whose latency grows with load
                 * looks the same. The volumes that share the cap are watched instead:
                 * neighbours.h.) */
                if (drain_held(t, s)) {
                        t->drain_retried = false;
                        t->hold_next = TUNER_CRUISE_EPOCHS;
                        return tuner_set_depth(t, t->depth, TUNER_CRUISE);
                }
                if (!t->drain_retried && t->depth < base) {
                        t->drain_retried = true;
                        t->delay_probe = true;
                        return tuner_set_depth(t,
                                               MIN(base, scaled(t, t->depth, TUNER_PROBE_UP_NUM,
                                                                TUNER_PROBE_UP_DEN)),
                                               TUNER_PROBE_DOWN);
                }
                t->drain_retried = false;
                /* Each time it turns out so, wait twice as long before draining again. */
                t->delay_hold = true;
                t->hold_left = t->hold_next;
                t->hold_next = MIN(t->hold_next * 2, TUNER_CRUISE_EPOCHS_MAX);
                return tuner_set_depth(t, base, TUNER_CRUISE);
        }
        if (s->rate < t->base_rate * TUNER_DOWN_TOLERANCE)
                return tuner_set_depth(t, base, TUNER_CRUISE);
        /* As fast with fewer: the rest only queued. Keep shrinking while that holds; the base
         * stays the rate to defend, so small losses cannot add up. */
        t->base_depth = t->depth;
        if (t->depth == t->min)
                return tuner_set_depth(t, t->depth, TUNER_CRUISE);
        return tuner_set_depth(t, scaled(t, t->depth, TUNER_PROBE_DOWN_NUM, TUNER_PROBE_DOWN_DEN),
                               TUNER_PROBE_DOWN);
}

static bool decide_cruise(DepthTuner *t, const Sample *s) {
        bool changed;

        t->climb_relearned = false; /* the climb is over (a later one has no relearn of its own) */
        /* Follow the device while cruising: the base is the latest measure. */
        set_base(t, t->depth, s);
        if (t->delay_hold && --t->hold_left == 0)
                t->delay_hold = false;
        if (t->share_hold && --t->share_left == 0)
                t->share_hold = false;
        if (queueing(s) && !t->delay_hold && drain(t, s, t->depth, &changed))
                return changed;
        if (take_share(t, s))
                return true;
        if (++t->cruise_epochs < t->probe_wait)
                return false;
        t->cruise_epochs = 0;
        /* Alternate. Down only where reads queue (the delay paid for itself): without a queue,
         * fewer reads can only be slower. */
        t->probe_down = !t->probe_down;
        if (t->probe_down && s->queue > s->target && t->depth > t->min)
                return tuner_set_depth(
                        t, scaled(t, t->depth, TUNER_PROBE_DOWN_NUM, TUNER_PROBE_DOWN_DEN),
                        TUNER_PROBE_DOWN);
        /* Up only without a queue: into one, more reads take a share from whoever else is
         * in it, which looks like growth from here. */
        if (t->depth < t->max && s->queue <= s->target)
                return tuner_set_depth(t,
                                       scaled(t, t->depth, TUNER_PROBE_UP_NUM, TUNER_PROBE_UP_DEN),
                                       TUNER_PROBE_UP);
        return false;
}

/*
 * The relearn is over: back to the depth and mode it interrupted. A relearn in the climb
 * (relearn_floor()) measured the base the start could not; where the climb's last epoch took at
 * least twice that base (a queue as long as the device's own latency: the start's burst, the
 * rig's 250-690 ms on a 90 ms volume) and held more reads than its rate needs at it, a drain to
 * what the rate needs follows at once, and beside siblings it is kept whatever our rate does,
 * as a drain to our share is (the siblings drain at the same moment, and what one gives up
 * another takes). Back at the old depth, the queue would stand until an epoch measured it (a
 * second or two, and a workload that comes meanwhile waits behind it). A climb below the knee
 * still needs what it held (its rate grew with its depth) and goes on; so does one on a device
 * that gets faster the deeper it is driven, whose latency grows a little with its depth
 * (unit/tuner's curve, 121 ms at 32 reads against 94 at one, lost 477 -> 392 MiB/s beside
 * siblings on caps of their own to a drain after any relearn in the climb, and 477 -> 278 to
 * one after every relearn). Not after the minute's relearns in a cruise: the epochs judge the
 * depth there, as before.
 */
static bool end_relearn(DepthTuner *t, const Sample *s) {
        Sample before = *s;
        bool changed;

        if (t->relearn_mode != TUNER_STARTUP)
                return tuner_set_depth(t, t->relearn_depth, t->relearn_mode);
        t->climb_relearned = true;
        /* its rate and siblings, at the base and target just measured */
        before.rate = t->last.rate;
        before.siblings = t->last.siblings;
        before.readers = t->last.readers;
        before.shared = t->last.shared;
        if (t->last.rate > 0 && t->last.base + t->last.queue >= 2 * s->base &&
            depth_for(t, &before, drain_rate(&before)) < t->last.depth &&
            drain(t, &before, t->relearn_depth, &changed)) {
                t->share_drain |= t->last.beside;
                return changed;
        }
        return tuner_set_depth(t, t->relearn_depth, TUNER_STARTUP);
}

static bool decide(DepthTuner *t, const Sample *s) {
        switch (t->mode) {
        case TUNER_STARTUP:
                /* After the climb's relearn, beside siblings, reads that queue end it where
                 * they say theirs queue too, or where the queue is as long as the base: behind
                 * a cap we share, what we add takes from theirs and looks like growth from
                 * here (net_rate() sees it only once they say so, and their bases hid it until
                 * that relearn). A device that gets faster the deeper it is driven queues less
                 * than that, and climbs on. */
                if (s->beside && t->climb_relearned && queueing(s) &&
                    (s->shared || s->queue >= s->base))
                        return cruise_at(t, s, t->depth);
                if (t->base_rate > 0 && t->depth > t->base_depth && !growth_paid(t, net_rate(t, s)))
                        return cruise_at(t, s, knee(t, net_rate(t, s))); /* the plateau */
                set_base(t, t->depth, s);
                if (t->depth == t->max)
                        return cruise_at(t, s, t->depth);
                return tuner_set_depth(t, scaled(t, t->depth, TUNER_GROW_NUM, TUNER_GROW_DEN),
                                       TUNER_STARTUP);
        case TUNER_PROBE_UP:
                if (t->taking_share) {
                        /* Our share taken: cruise there. Or it was our own queue: back. */
                        t->taking_share = false;
                        if (growth_paid(t, s->rate)) {
                                t->share_next = TUNER_CRUISE_EPOCHS;
                                return tuner_set_depth(t, t->depth, TUNER_CRUISE);
                        }
                        t->share_hold = true;
                        t->share_left = t->share_next;
                        t->share_next = MIN(t->share_next * 2, TUNER_CRUISE_EPOCHS_MAX);
                        return tuner_set_depth(t, t->base_depth, TUNER_CRUISE);
                }
                if (!growth_paid(t, net_rate(t, s))) {
                        /* The volume is what it was: look again less often. */
                        t->probe_wait = MIN(t->probe_wait * 2, TUNER_CRUISE_EPOCHS_MAX);
                        return cruise_at(t, s, knee(t, net_rate(t, s)));
                }
                t->probe_wait = TUNER_CRUISE_EPOCHS;
                set_base(t, t->depth, s);
                return tuner_set_depth(t, scaled(t, t->depth, TUNER_GROW_NUM, TUNER_GROW_DEN),
                                       TUNER_STARTUP);
        case TUNER_PROBE_DOWN:
                return decide_probe_down(t, s);
        case TUNER_CRUISE:
                return decide_cruise(t, s);
        case TUNER_RELEARN: /* the slowdown's throughput says nothing; its latency was noted */
                return end_relearn(t, s);
        case TUNER_SLOW_START: /* decided read by read */
        case TUNER_YIELD:      /* decided sample by sample */
        case _TUNER_MODE_MAX:
                break;
        }
        return false;
}

/*
 * Once a minute, one epoch at the smallest depth: the base without our own queue. At the same
 * time as every other instance (next_boundary()), at whatever moment of a cruise (a relearn that
 * waited for the end of an epoch fell at another moment in each; one in a probe, or the slow
 * start, waits for the cruise after it), so that a queue we share drains too. With someone else
 * there (tuner_base_doubted()), the first does not wait for the climb's STARTUP to end: its
 * base is the slow start's, and where the device answers a burst of reads all at once (the
 * rig's FUSE export, unit/tuner's served model with pieces), the start's smallest latency is
 * the whole burst's (250-690 ms on a 90 ms rig volume), no queue shows against it, and three
 * siblings climbed to 24 reads each until a cruise let the relearn in. After it, the climb
 * goes on, or drains where it held more than its rate needs behind a queue as long as the
 * base (end_relearn()). With siblings reading, one read each: four
 * volumes' minimum depths at once would still keep a queue at a shared cap (16 MiB in flight
 * where 150 MiB/s x 90 ms is 13.5), and a base learned behind it hides every queue after; so
 * does a climb's relearn beside siblings that read in its last epoch (or, before its first, as
 * it started), whatever they said of their queue (none had a base that showed one).
 */
static unsigned relearn_floor(const DepthTuner *t, uint64_t now) {
        /* before the climb's first epoch, whether siblings read as we started */
        bool climbing_beside =
                t->mode == TUNER_STARTUP &&
                (t->last.rate > 0 ? t->last.beside : t->readers > 0 || t->start_shared);

        return shared_lately(t, now) || climbing_beside ? 1 : t->min;
}

static bool start_relearn(DepthTuner *t, uint64_t now) {
        unsigned d = relearn_floor(t, now);

        t->relearn_due_usec = next_boundary(now, TUNER_RELEARN_USEC);
        if (t->depth <= d)
                return false;
        t->relearn_depth = t->depth;
        t->relearn_mode = t->mode;
        t->relearn_shared = shared_lately(t, now); /* for the whole epoch (tuner_update()) */
        tuner_forget_probe(t);
        tuner_new_epoch(t, now);
        return tuner_set_depth(t, d, TUNER_RELEARN);
}

/* After yielding, the climb starts again from the depth it had: a new slow start, from the base
 * it knows. */
bool tuner_restart_climb(DepthTuner *t, uint64_t now) {
        t->base_rate = 0;
        t->last = (TunerEpoch){0}; /* the epochs before the yield measured another device */
        t->climb_relearned = false;
        t->cruise_epochs = 0;
        t->delay_hold = false;
        tuner_forget_probe(t);
        t->queueing = false;
        tuner_new_epoch(t, now);
        if (t->fixed)
                return tuner_set_depth(t, t->max, TUNER_CRUISE);
        /* what came before the yield says nothing of the device now */
        tuner_new_round(t, MAX(t->depth, t->min));
        if (tuner_base_latency(t) > 0)
                t->start_min_usec = tuner_base_latency(t);
        return tuner_set_depth(t, tuner_clamp_depth(t, t->depth), TUNER_SLOW_START);
}

/* ---- the epoch ---- */

/*
 * Reads that take three times the base are either deeply queued or of another kind than the
 * base was learned on (cold blocks after warm ones that waited in a queue). A relearn epoch at
 * the smallest depth tells which (at once, unless one did lately); if even that takes twice
 * the base, the base starts afresh from it. Returns true when it changed the depth.
 */
static bool new_population(DepthTuner *t, uint64_t base, uint64_t now) {
        uint64_t lat = t->min_latency_usec;

        if (t->mode == TUNER_RELEARN) {
                t->base_checked_usec = now;
                /* With siblings reading, a slow relearn is their queue more likely than a new
                 * kind of block: a base learned on it would hide every queue after. It ages
                 * out of the history in a minute if it was wrong. */
                if (base > 0 && lat >= TUNER_NEW_BASE_FACTOR * base && !t->relearn_shared) {
                        for (unsigned i = 0; i < TUNER_BASE_BUCKETS; i++)
                                t->base_hist[i] = UINT64_MAX;
                        t->base_bucket_usec = now;
                } else if (t->suspect)
                        t->slow_confirmed = true; /* the base is right: the slowness is a queue */
                t->suspect = false;
                return false;
        }
        if (base == 0 || lat < TUNER_SUSPECT_FACTOR * base) {
                t->slow_confirmed = false;
                return false;
        }
        /* Found a queue, for the drain to handle; or measured lately. */
        if (t->slow_confirmed || t->yielding || t->fixed || t->depth <= relearn_floor(t, now) ||
            (t->base_checked_usec > 0 && now - t->base_checked_usec < TUNER_RECHECK_USEC))
                return false;
        t->suspect = true;
        t->relearn_depth = t->depth;
        t->relearn_mode = TUNER_CRUISE;
        /* The relearn returns to CRUISE: a share taken or given up is not judged after it.
         * (A drain's own flags stay, as they always did: cleared too, sixteen siblings in
         * unit/tuner's model lost 1% of the cap.) */
        t->taking_share = t->share_drain = false;
        t->relearn_shared = shared_lately(t, now);
        tuner_new_epoch(t, now);
        return tuner_set_depth(t, relearn_floor(t, now), TUNER_RELEARN);
}

bool tuner_update(DepthTuner *t, uint64_t now_usec) {
        uint64_t window =
                MAX(TUNER_WINDOW_MIN_USEC, (uint64_t)(TUNER_WINDOW_LATENCIES * t->latency_usec));
        Sample s = {0};
        TunerMode was;
        bool changed;

        if (t->yielding) /* tuner_sample() decides, on the sampling clock */
                return false;
        /* A probe for a hidden load holds the depth down (hidden_demand()): no epoch judges
         * that depth, and a relearn due waits for it to end (one begun now would go back to
         * the halved depth after). */
        if (t->hidden_usec > 0)
                return false;
        if (t->tainted) {
                /* Start over once the cause has had a mean latency to clear. */
                if (now_usec >= t->epoch_usec + (uint64_t)t->latency_usec)
                        tuner_new_epoch(t, now_usec);
                return false;
        }
        if (t->mode == TUNER_SLOW_START) /* decided read by read (tuner_complete()) */
                return false;
        if (!t->fixed && now_usec >= t->relearn_due_usec &&
            (t->mode == TUNER_CRUISE ||
             (t->mode == TUNER_STARTUP && t->base_doubted && t->base_checked_usec == 0)))
                return start_relearn(t, now_usec);
        /* A relearn wants the smallest latency, not a throughput, and each moment of it costs.
         * Where the queue was ours alone, a couple of reads sent after it drained will do: a
         * window of twice a base learned behind the start's own queue (180 ms on a 120 ms rig
         * volume) kept four reads in flight for about 0.6 s of a 6 s run. A queue shared with
         * siblings drains as theirs do: a couple of base latencies, or of the relearn's smallest
         * latency if that is less (a start on the rig learned 400 ms behind the queue of four
         * siblings, each with a cap of its own: 0.8 s at one read). */
        if (t->mode == TUNER_RELEARN && !t->relearn_shared) {
                if (t->completions < MAX(TUNER_RELEARN_READS, t->depth))
                        return false;
        } else {
                if (t->mode == TUNER_RELEARN && tuner_base_latency(t) > 0)
                        window = MAX(TUNER_WINDOW_MIN_USEC,
                                     2 * MIN(tuner_base_latency(t), t->min_latency_usec));
                if (now_usec < t->measure_usec + window || t->completions < t->depth ||
                    t->completions == 0)
                        return false;
        }

        s.rate = (double)t->bytes * (double)USEC_PER_SEC / (double)(now_usec - t->measure_usec);
        s.request = (double)t->bytes / t->completions;
        s.base = tuner_base_latency(t);
        /* The siblings' rate over the same window; none sampled in it: as if none read. */
        s.readers = t->sibling_usec > 0 ? t->readers : 0;
        s.beside = t->sibling_usec > 0 && t->sibling_bytes > 0;
        s.shared = s.readers > 0 && t->shared_window;
        s.siblings = s.readers > 0
                             ? t->sibling_bytes * (double)USEC_PER_SEC / (double)t->sibling_usec
                             : 0;
        if (t->min_latency_usec == UINT64_MAX) /* only warm reads: no word on queueing */
                s.queue = 0;
        else if (new_population(t, s.base, now_usec))
                return true;
        else {
                uint64_t before = s.base;

                tuner_base_note(t, t->min_latency_usec, now_usec);
                s.base = tuner_base_latency(t);
                s.queue = t->min_latency_usec - s.base;
                /* A base that fell by more than the target (a relearn saw through a queue)
                 * makes "the delay paid for itself" a judgement on wrong figures. */
                if (before > 0 && s.base + tuner_target(s.base) < before) {
                        t->delay_hold = false;
                        t->hold_next = TUNER_CRUISE_EPOCHS;
                }
        }
        /* Others use the device (too little to yield to): their reads must not wait long
         * behind ours either; a queue on a cap buys nothing anyway. */
        s.target = t->others ? tuner_yield_target(s.base) : tuner_target(s.base);
        t->queue_delay_usec = s.queue;
        t->queueing = queueing(&s);
        was = t->mode;
        s.depth = t->depth;
        if (t->fixed)
                changed = false;
        else if (t->mode != TUNER_RELEARN &&
                 t->warm_completions * TUNER_WARM_SHARE_DEN > t->completions)
                changed = false; /* blocks warm already (a resumed run): nothing to climb on */
        else {
                changed = decide(t, &s);
        }
        if (was != TUNER_RELEARN && s.rate > 0) /* a relearn's rate is its slowdown's */
                t->last = s;
        tuner_new_epoch(t, now_usec);
        return changed;
}

static const char *const tuner_mode_table[_TUNER_MODE_MAX] = {
        [TUNER_SLOW_START] = "slow-start", [TUNER_STARTUP] = "startup",
        [TUNER_CRUISE] = "cruise",         [TUNER_PROBE_UP] = "probe-up",
        [TUNER_PROBE_DOWN] = "probe-down", [TUNER_RELEARN] = "relearn",
        [TUNER_YIELD] = "yield",
};

const char *tuner_mode_to_string(TunerMode m) {
        const char *s = string_table_get(tuner_mode_table, ELEMENTSOF(tuner_mode_table), m);

        return s ? s : "?"; /* for log lines */
}
