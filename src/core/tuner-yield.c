/* SPDX-License-Identifier: MIT */
/*
 * The yield of tuner.h, rule 3: in proportion to what the others' I/O costs, on the sampling
 * clock. A ring of the last second's samples gives the rates; a ring of seconds gives the most
 * each rate reached, from which the capacities are learned while nobody else is there.
 */
#include <math.h>

#include "tuner-internal.h"
#include "tuner.h"
#include "util.h"

/* The rates of the last second, from the ring of samples. */
static TunerRates last_second(const DepthTuner *t, double siblings, double own_cost,
                              double other_cost) {
        TunerRates r = {.siblings = siblings,
                        .own_cost = own_cost,
                        .other_cost = other_cost,
                        .min_latency_usec = UINT64_MAX};
        double bytes = 0, usec = 0;

        for (unsigned i = 0; i < t->ring_n; i++) {
                bytes += t->ring[i].bytes;
                usec += (double)t->ring[i].span_usec;
                r.min_latency_usec = MIN(r.min_latency_usec, t->ring[i].min_latency_usec);
        }
        r.ours = usec > 0 ? bytes * (double)USEC_PER_SEC / usec : 0;
        return r;
}

static void push_sample(DepthTuner *t, uint64_t now) {
        uint64_t span = t->last_sample_usec > 0 ? now - t->last_sample_usec : TUNER_SAMPLE_USEC;

        t->ring[t->ring_next] = (TunerSlot){.bytes = t->sample_bytes,
                                            .span_usec = MAX(span, UINT64_C(1)),
                                            .min_latency_usec = t->sample_min_usec};
        t->ring_next = (t->ring_next + 1) % TUNER_RATE_SAMPLES;
        t->ring_n = MIN(t->ring_n + 1, (unsigned)TUNER_RATE_SAMPLES);
        if (t->read_samples > 0 || t->sample_bytes > 0)
                t->read_samples = MIN(t->read_samples + 1, 1000u);
        /* While yielding, the epochs decide nothing (the pace holds the rate): the base is
         * kept up from the samples. */
        if (t->yielding && t->sample_min_usec != UINT64_MAX)
                tuner_base_note(t, t->sample_min_usec, now);
        t->sample_bytes = 0;
        t->sample_min_usec = UINT64_MAX;
        t->last_sample_usec = now;
}

/* The latest sample in the ring (push_sample() has run at least once). */
static const TunerSlot *last_slot(const DepthTuner *t) {
        return &t->ring[(t->ring_next + TUNER_RATE_SAMPLES - 1) % TUNER_RATE_SAMPLES];
}

/* Moves the ring of seconds on to the one @now falls in, clearing those passed. */
static TunerSecond *current_second(DepthTuner *t, uint64_t now) {
        if (t->second_usec == 0)
                t->second_usec = now;
        for (unsigned i = 0; now - t->second_usec >= USEC_PER_SEC; i++) {
                t->second_next = (t->second_next + 1) % TUNER_WINDOW_SECONDS;
                t->seconds[t->second_next] = (TunerSecond){.min_latency_usec = UINT64_MAX};
                t->second_usec = i < TUNER_WINDOW_SECONDS ? t->second_usec + USEC_PER_SEC : now;
        }
        return &t->seconds[t->second_next];
}

/* A second of the window, counting back from the current one (0); NULL if it has no samples. */
static const TunerSecond *second_back(const DepthTuner *t, unsigned k) {
        const TunerSecond *s =
                &t->seconds[(t->second_next + TUNER_WINDOW_SECONDS - k) % TUNER_WINDOW_SECONDS];

        return k < TUNER_WINDOW_SECONDS && s->used ? s : NULL;
}

/*
 * While yielding, the latency a read takes without our queue in front of it: the smallest of
 * the last TUNER_YIELD_BASE_SECONDS seconds. Not the climb's base: that one may have been
 * learned on other reads (warm blocks before the cold ones, a quieter device), and a busy
 * device's reads all take longer while the others' load lasts. 0 while none completed.
 */
static uint64_t yield_base(const DepthTuner *t) {
        uint64_t base = UINT64_MAX;

        for (unsigned k = 0; k < TUNER_YIELD_BASE_SECONDS && second_back(t, k); k++)
                base = MIN(base, second_back(t, k)->min_latency_usec);
        return base == UINT64_MAX ? tuner_base_latency(t) : base;
}

/* Our reads waited in a queue lately: the smallest latency of the last @samples samples over
 * @base by more than @target. */
static bool queued(const DepthTuner *t, unsigned samples, uint64_t base, uint64_t target) {
        uint64_t lat = UINT64_MAX;

        for (unsigned k = 1; k <= MIN(samples, t->ring_n); k++)
                lat = MIN(lat, t->ring[(t->ring_next + TUNER_RATE_SAMPLES - k) % TUNER_RATE_SAMPLES]
                                       .min_latency_usec);
        return base > 0 && lat != UINT64_MAX && lat > base + target;
}

/*
 * The capacities from the window: the most each total delivered over TUNER_CAPACITY_SECONDS
 * seconds in a row (a token bucket lets a burst through for a second or so: not what the
 * device gives), but the current second, whose rates mix what was before the others came with
 * what is now (unless it is all there is). Over fewer seconds only where fewer are all there
 * is: the windows that began at the window's oldest seconds once counted over the one or two
 * left, and the oldest is the first second of a run (the rig's cap passes 134 MiB/s of 125
 * in it) or, later, any second about to leave the window. On the rig, one of three siblings
 * took its capacity and its share of the family from its first second (113 MiB/s, a share of
 * 0.20 where its last three seconds gave it 0.46): the three shares added up to 0.74, and
 * they read 53% of the spare a database left them.
 */
static void learn_capacities(DepthTuner *t, uint64_t now) {
        bool queued = false;
        double most = -1;
        unsigned used = 0, from = second_back(t, 1) ? 1 : 0, span;

        t->cap_own = t->cap_all = t->ref_ours = 0;
        t->share = 1;
        while (second_back(t, from + used)) {
                queued = queued || second_back(t, from + used)->queued;
                used++;
        }
        span = MIN(used, (unsigned)TUNER_CAPACITY_SECONDS);
        for (unsigned k = from; span > 0 && k + span <= from + used; k++) {
                double own = 0, all = 0, ours = 0, siblings = 0;

                for (unsigned n = 0; n < span; n++) {
                        own += second_back(t, k + n)->own_total;
                        all += second_back(t, k + n)->all_total;
                        ours += second_back(t, k + n)->ours;
                        siblings += second_back(t, k + n)->siblings;
                }
                t->cap_own = MAX(t->cap_own, own / span);
                t->ref_ours = MAX(t->ref_ours, ours / span);
                if (all / span > most) { /* our share of the family: when it gave most */
                        most = all / span;
                        t->share = ours + siblings > 0 ? ours / (ours + siblings) : 1;
                }
                t->cap_all = MAX(t->cap_all, all / span);
        }
        /* Saturated at some second, and not only in the first ones (our reads ramping up
         * behind a queue of their own say little of what the device gives). */
        t->cap_seconds = used;
        t->cap_known = queued && used >= TUNER_KNOWN_SECONDS;
        if (t->cap_known)
                t->cap_seen_usec = now;
}

/* The most the others' I/O cost lately: the current second and the ones before, up to
 * TUNER_YIELD_QUIET_USEC back. */
static void recent_costs(DepthTuner *t) {
        unsigned n = (unsigned)MIN(TUNER_YIELD_QUIET_USEC / USEC_PER_SEC,
                                   (uint64_t)TUNER_WINDOW_SECONDS);

        t->own_cost = t->other_cost = 0;
        for (unsigned k = 0; k <= n; k++) {
                const TunerSecond *s = &t->seconds[(t->second_next + TUNER_WINDOW_SECONDS - k) %
                                                   TUNER_WINDOW_SECONDS];

                t->own_cost = MAX(t->own_cost, s->own_cost);
                t->other_cost = MAX(t->other_cost, s->other_cost);
        }
}

/*
 * The pace that leaves the others what they take and TUNER_YIELD_MARGIN more (tuner.h): on our
 * disk, of its capacity; on the family, of its capacity, of which we take our share beside our
 * siblings. t->fair is what we would read with nobody else there; the cut is a share of it.
 */
static double pace_for(DepthTuner *t) {
        double m = 1.0 + TUNER_YIELD_MARGIN, pace_own, pace_all, pace;

        t->fair = MIN(t->cap_own, t->share * t->cap_all);
        pace_own = t->cap_own - m * t->own_cost;
        pace_all = t->share * (t->cap_all - m * (t->own_cost + t->other_cost));
        pace = MAX(MIN(pace_own, pace_all), TUNER_YIELD_FLOOR * MIN(t->ref_ours, t->fair));
        t->yield_own = t->own_cost >= t->other_cost;
        t->cut = t->fair > 0 ? 1.0 - pace / t->fair : 0;
        return pace;
}

/*
 * Reads in flight that carry @pace at the latency reads see now (Little's law), with some
 * slack: the pace, not the depth, holds the rate, and a device whose latency grows with the
 * others' load (a busy one) must not hold us under it. The latency counted is at least the
 * base's and the yield's target, and at most TUNER_YIELD_LATENCY_MAX times the base: a depth
 * that followed a latency of its own making would only make it longer. @unpaced: the depth
 * alone holds the rate (no capacity known): no slack, and, once a base is known, the base's
 * latency with the target, not the latency now (which may be our own queue's).
 */
static unsigned depth_for_pace(const DepthTuner *t, double pace, bool unpaced) {
        uint64_t base = yield_base(t);
        double request = t->request_bytes > 0 ? t->request_bytes : 1.0, latency = t->latency_usec,
               d, batches;

        /* Stalls beside us that may be ours (test_stalls()): no reads in flight beyond what
         * the pace needs without a queue, so that one of ours at a cap they wait behind
         * drains, whatever our latency says; at the climb's base if that is less (a queue
         * standing since the yield began is in every latency of the yield's). */
        if (t->stall_short && tuner_base_latency(t) > 0)
                base = MIN(base, tuner_base_latency(t));
        if (base > 0 && (unpaced || t->stall_short))
                latency = (double)(base + tuner_yield_target(base));
        else if (base > 0)
                latency = CLAMP(latency, (double)(base + tuner_yield_target(base)),
                                (double)(TUNER_YIELD_LATENCY_MAX * base));
        d = pace * latency / (double)USEC_PER_SEC / request;
        if (unpaced || t->stall_short)
                return tuner_clamp_yield(t, (uint64_t)ceil(d));
        /* The pace goes out in batches, one a period (hydrator-rate.c): right after one, the
         * batches of the latency before it are in flight too. */
        batches = ceil(latency / (double)TUNER_PACE_BATCH_USEC) * pace *
                  (double)TUNER_PACE_BATCH_USEC / (double)USEC_PER_SEC / request;
        return tuner_clamp_yield(t, (uint64_t)ceil(MAX(d * TUNER_YIELD_DEPTH_SLACK + 1, batches)));
}

static bool start_yielding(DepthTuner *t, double pace, uint64_t now) {
        t->yielding = true;
        t->queueing = false; /* the pace holds the rate now, not a queue of ours */
        t->yields++;
        t->yield_start_usec = t->queue_seen_usec = now;
        t->yield_settled = false;
        t->probing = false;
        t->queue_test = TUNER_QUEUE_NONE;
        t->pace_scale = 1;
        t->probe_hold_usec = 0;
        t->grow_wait_min = UINT64_MAX;
        t->grow_harmed = false;
        t->grow_harm_usec = 0;
        t->probe_wait_usec = TUNER_CAPACITY_TRUST_USEC;
        if (!t->cap_known) {
                /* What the device can do is not known: grow until reads queue, from the depth
                 * that carries the pace the capacities seen so far leave (they are what was
                 * delivered, so at most what the device gives: the cut is at least the one
                 * due). Not from TUNER_YIELD_START reads whatever the cut: sixteen hydrators
                 * behind one cap, each cut by 3-5% for a reader beside them, each fell from
                 * several reads to two. */
                t->pace = 0;
                (void)tuner_set_depth(t,
                                      MIN(t->depth, MAX(depth_for_pace(t, pace, true),
                                                        tuner_clamp_yield(t, TUNER_YIELD_START))),
                                      TUNER_YIELD);
                t->grow_from = t->depth;
                return true;
        }
        t->pace = pace / 2; /* until our queue from before has drained (decide_yield()) */
        return tuner_set_depth(t, MIN(t->depth, depth_for_pace(t, pace, false)), TUNER_YIELD);
}

static bool stop_yielding(DepthTuner *t, uint64_t now) {
        /* A test under way ends with the yield (its cut is forgotten with the pace), and
         * the next yield's tests have their budget afresh, and find who waits anew. */
        t->stall_test = TUNER_QUEUE_NONE;
        t->stall_short = false;
        t->stall_budget_set = false;
        t->stall_ignore_usec = 0;
        t->yielding = false;
        t->pace = 0;
        t->cut = 0;
        return tuner_restart_climb(t, now);
}

/*
 * While yielding: more delivered than believed means more capacity; a queue means the device
 * gives no more than it delivers now (once a second at most, so that one queue counts once);
 * a capacity not seen at saturation for long is believed a little larger while no queue shows.
 */
/* Lowers both capacities by what makes the pace @by less. */
static void lower_capacities(DepthTuner *t, double by) {
        if (by <= 0)
                return;
        t->cap_own = MAX(t->cap_own - by, 0.0);
        t->cap_all = MAX(t->cap_all - by / MAX(t->share, 0.01), 0.0);
}

/*
 * A queue while we yield is ours (our pace is more than the device gives beside the others: it
 * gives less than we believed, or a probe found its limit) or not (a busy device's latency grows
 * with load of any kind; a workload's own queue is there whatever we do). A test tells: a
 * quarter less pace for a while. If the queue goes, it was ours: the capacities are lowered to
 * where the pace is TUNER_QUEUE_KEEP of the one that queued. If not, the pace comes back, and
 * queues are left alone for TUNER_QUEUE_IGNORE_USEC. Gone means gone in every sample of the
 * test's second half, not only in its last: where latency jitters by more than the target at
 * any pace (the rig's cap answers in bursts), a verdict from one sample said "ours" about every
 * other test, and each lowered the capacities by a tenth more: a 4 MiB/s reader on the disk
 * beside, a cut of 3%, took the pace from 91 to 31 MiB/s in 20 s.
 */
static void test_queue(DepthTuner *t, bool queue, uint64_t now) {
        uint64_t length = MAX(USEC_PER_SEC, 4 * yield_base(t));

        switch (t->queue_test) {
        case TUNER_QUEUE_NONE:
                if (!queue || t->pace <= 0)
                        return;
                t->queue_test = TUNER_QUEUE_TESTING;
                t->queue_test_usec = now;
                t->queue_test_seen = false;
                t->queue_pace = t->pace;
                t->pace_scale = TUNER_QUEUE_TEST_SCALE;
                return;
        case TUNER_QUEUE_TESTING:
                if (queue && now - t->queue_test_usec >= length / 2)
                        t->queue_test_seen = true;
                if (now - t->queue_test_usec < length)
                        return;
                t->pace_scale = 1;
                if (t->queue_test_seen) { /* not ours */
                        t->queue_test = TUNER_QUEUE_IGNORED;
                        t->queue_test_usec = now;
                        return;
                }
                lower_capacities(t, pace_for(t) - TUNER_QUEUE_KEEP * t->queue_pace);
                t->cap_seen_usec = now;
                /* A probe that found the capacity where it was: the next one waits longer. */
                if (t->probing)
                        t->probe_wait_usec = MIN(2 * t->probe_wait_usec, TUNER_PROBE_WAIT_MAX_USEC);
                t->probing = false;
                t->queue_test = TUNER_QUEUE_NONE;
                return;
        case TUNER_QUEUE_IGNORED:
                if (now - t->queue_test_usec >= TUNER_QUEUE_IGNORE_USEC)
                        t->queue_test = TUNER_QUEUE_NONE;
                return;
        }
}

/* Stalls beside us in TUNER_STALL_SECONDS of the last three seconds (the current one too). */
static bool stalls_last(const DepthTuner *t) {
        unsigned n = 0;

        for (unsigned k = 0; k < 3; k++)
                n += second_back(t, k) && second_back(t, k)->stalled;
        return n >= TUNER_STALL_SECONDS;
}

/* Keeps the two longest of the waits @w a test begins for (stall_top, stall_wait). */
static void stall_wait_add(DepthTuner *t, uint64_t w) {
        if (w > t->stall_top) {
                t->stall_wait = t->stall_top;
                t->stall_top = w;
        } else if (w > t->stall_wait)
                t->stall_wait = w;
}

/* TUNER_STALL_STEP less pace, out of a budget of half the pace the yield's first test began
 * with: waits that come and go of their own, each test finding them "ours", never take us
 * down to the floor (the probes give back what they took). A test that finds them not ours
 * gives back what it took. */
static void cut_for_stalls(DepthTuner *t, uint64_t now) {
        double by = MIN(TUNER_STALL_STEP * pace_for(t), t->stall_budget);

        if (by > 0) {
                lower_capacities(t, by);
                t->stall_budget -= by;
                t->stall_test_cut += by;
        }
        t->stall_cut_usec = now;
}

/* The end of a test: left alone @usec. */
static void end_stall_test(DepthTuner *t, uint64_t usec, uint64_t now) {
        t->stall_test = TUNER_QUEUE_IGNORED;
        t->stall_test_usec = now;
        t->stall_left_usec = usec;
}

/*
 * Stalls beside us while we yield (tuner.h, rule 3): a disk only they read, whose requests
 * wait TUNER_STALL_USEC or more, again and again. A queue of ours behind a cap we share with
 * them does that, and so does one all the siblings keep, which none of them sees as a queue
 * (it stands in their latencies from the start) and none can drain alone. Every sibling reads
 * the same counters, so all act at once: the depth short (depth_for_pace()), and
 * TUNER_STALL_STEP less pace now and each second they go on. If they stop, or the longest
 * wait of two seconds in a row falls to half of those that began the test (a queue drains
 * for seconds after the cut that ends it), they were ours: no more cuts, the capacities stay
 * lowered, the depth short for a while (hold_stalls()). If neither happens within
 * TUNER_STALL_TEST_USEC (a workload's own queue, its own volume's cap), they are not ours:
 * all comes back as it was. Either way stalls are left alone for TUNER_QUEUE_IGNORE_USEC
 * after, twice as long each time they are found not ours again (up to
 * TUNER_PROBE_WAIT_MAX_USEC; afresh in each yield), so that a neighbour slow on its own costs
 * little; and however often they look ours, the tests of one yield cut at most half its pace
 * (cut_for_stalls()).
 */
static void test_stalls(DepthTuner *t, uint64_t now) {
        bool stalled = t->their_wait_usec >= TUNER_STALL_USEC;

        switch (t->stall_test) {
        case TUNER_QUEUE_NONE:
                if (!stalled || !stalls_last(t) || t->pace <= 0)
                        return;
                t->stall_test = TUNER_QUEUE_TESTING;
                t->stall_test_usec = t->stall_seen_usec = t->stall_window_usec = now;
                /* How long the waits it begins for are: the second longest of the longest
                 * of the last four seconds and of its first (the wait that begins it is read
                 * as it passes TUNER_STALL_USEC, and goes on), so that one long hang among
                 * them is not what "half" is measured against. */
                t->stall_top = t->stall_wait = 0;
                for (unsigned k = 0; k < 4; k++)
                        stall_wait_add(t, second_back(t, k) ? second_back(t, k)->wait_max : 0);
                t->stall_test_cut = 0;
                t->stall_window_max = 0;
                t->stall_ours = false;
                t->stall_halved = 0;
                t->stall_gone = false;
                t->stall_short = true;
                t->stall_cap_own = t->cap_own;
                t->stall_cap_all = t->cap_all;
                if (!t->stall_budget_set) {
                        t->stall_budget = pace_for(t) / 2;
                        t->stall_budget_set = true;
                }
                t->stall_tests++;
                /* a queue test under way would judge a pace that is not the one it cut */
                if (t->queue_test == TUNER_QUEUE_TESTING) {
                        t->queue_test = TUNER_QUEUE_NONE;
                        t->pace_scale = 1;
                }
                t->probing = false;
                cut_for_stalls(t, now);
                return;
        case TUNER_QUEUE_TESTING:
                if (stalled)
                        t->stall_seen_usec = now;
                /* Over each second: the longest wait, against those that began the test. */
                t->stall_window_max = MAX(t->stall_window_max, t->their_wait_usec);
                if (now - t->stall_window_usec >= USEC_PER_SEC &&
                    t->stall_window_usec == t->stall_test_usec) {
                        stall_wait_add(t, t->stall_window_max); /* its first second */
                        t->stall_window_max = 0;
                        t->stall_window_usec = now;
                } else if (now - t->stall_window_usec >= USEC_PER_SEC) {
                        /* two seconds in a row: one quiet second is no trend */
                        t->stall_halved =
                                t->stall_window_max <= t->stall_wait / 2 ? t->stall_halved + 1 : 0;
                        t->stall_ours |= t->stall_halved >= 2;
                        t->stall_window_max = 0;
                        t->stall_window_usec = now;
                }
                if (now - t->stall_seen_usec >= TUNER_STALL_CLEAR_USEC) {
                        /* ours: gone. The depth stays short a while, and waits are left
                         * alone TUNER_QUEUE_IGNORE_USEC: a neighbour whose waits come and go
                         * of their own cannot cut again at once. */
                        end_stall_test(t, TUNER_QUEUE_IGNORE_USEC, now);
                        t->stall_gone = true;
                        t->stall_short_usec = now;
                        t->cap_seen_usec = now;
                        return;
                }
                if (!t->stall_ours && now - t->stall_test_usec >= TUNER_STALL_TEST_USEC) {
                        /* not ours: as before, and left alone twice as long as the last time
                         * in this yield */
                        t->cap_own = t->stall_cap_own;
                        t->cap_all = t->stall_cap_all;
                        t->stall_budget += t->stall_test_cut;
                        t->stall_short = false;
                        t->stall_ignore_usec =
                                t->stall_ignore_usec > 0
                                        ? MIN(2 * t->stall_ignore_usec, TUNER_PROBE_WAIT_MAX_USEC)
                                        : TUNER_QUEUE_IGNORE_USEC;
                        end_stall_test(t, t->stall_ignore_usec, now);
                        return;
                }
                if (now - t->stall_test_usec >= 2 * TUNER_STALL_TEST_USEC) {
                        /* Less by half once, but never gone: ours in part. The cut so far
                         * stays (and the short depth for a while); no more cuts for them
                         * for a while, so that what is not ours does not take us down to
                         * the floor. */
                        end_stall_test(t, TUNER_QUEUE_IGNORE_USEC, now);
                        t->stall_short_usec = now;
                        return;
                }
                /* No more cuts once the waits fell by half: the queue drains from there. */
                if (stalled && !t->stall_ours && now - t->stall_cut_usec >= USEC_PER_SEC)
                        cut_for_stalls(t, now);
                return;
        case TUNER_QUEUE_IGNORED:
                if (now - t->stall_test_usec >= t->stall_left_usec)
                        t->stall_test = TUNER_QUEUE_NONE;
                return;
        }
}

/* After stalls found ours, the depth stays short for TUNER_STALL_HOLD_USEC. */
static void hold_stalls(DepthTuner *t, uint64_t now) {
        if (t->stall_short && t->stall_test != TUNER_QUEUE_TESTING &&
            now - t->stall_short_usec >= TUNER_STALL_HOLD_USEC)
                t->stall_short = false;
}

/*
 * With no capacity known, growing: it stops where its reads queue, or at the first sample in
 * which the requests beside us took more than twice the least they did while it grew, and more
 * than the yield's largest target: harm to them, whatever our reads see. Behind a cap that
 * passes its members' reads in turns (the rig's), a database's 16 KiB read waits a turn of each
 * member with reads waiting, 8 ms for each 1 MiB of ours at 125 MiB/s, from the moment the cap
 * is full, long before our own reads look queued: on unit/tuner's model of it, three siblings
 * growing until theirs queued held it at about 50 of its 2000 reads a second for 1.5 s. Then
 * the depth goes back to the one the growth began at (siblings grow together, and the harm
 * shows a sample or two after the reads that made it), and one less each two mean latencies
 * while the harm lasts; the capacity is what the second after the stop delivered, as after a
 * queue (a harm that stays is for test_stalls() once the capacity is known).
 */
static void grow_or_hold(DepthTuner *t, uint64_t now) {
        uint64_t wait = t->their_wait_usec;
        bool harm = t->grow_wait_min != UINT64_MAX &&
                    wait > MAX((uint64_t)TUNER_YIELD_TARGET_MAX_USEC, 2 * t->grow_wait_min);

        if (harm) {
                if (t->probe_hold_usec == 0)
                        t->probe_hold_usec = now;
                /* the reads sent before are still there to wait behind: once in two mean
                 * latencies (their wait at the cap included) */
                if (now - t->grow_harm_usec >= 2 * MAX((uint64_t)t->latency_usec, yield_base(t))) {
                        t->grow_harmed = true;
                        t->grow_harm_usec = now;
                }
                return;
        }
        t->grow_wait_min = MIN(t->grow_wait_min, wait);
}

/*
 * While yielding: more delivered than believed means more capacity; a queue is tested
 * (test_queue()), or, with no capacity known yet, says what it is (all a saturated device
 * gives); a capacity not seen at saturation for long is believed a little larger while no
 * queue shows.
 */
static void follow_capacities(DepthTuner *t, uint64_t now, uint64_t dt) {
        double own_total = t->now.ours + t->now.own_cost;
        double all_total = t->now.ours + t->now.siblings + t->now.own_cost + t->now.other_cost;

        /* A queue: the smallest latency of the last few samples over the target, so that a
         * read slowed by chance is not one. */
        bool queue = queued(t, TUNER_YIELD_QUEUE_SAMPLES, yield_base(t),
                            tuner_yield_target(yield_base(t)));

        /* The first second's rates still hold our reads from before the yield, and the queue
         * we held then takes a moment to drain: what is delivered says something only once it
         * has (or, if it never does, after TUNER_YIELD_SETTLE_USEC). */
        if (now - t->yield_start_usec < USEC_PER_SEC)
                return;
        if (!t->yield_settled && !queue)
                t->yield_settled = true;
        if (!t->yield_settled && now - t->yield_start_usec < TUNER_YIELD_SETTLE_USEC)
                return;
        /* Not while our pace is cut for a test, nor from seconds of before the yield. */
        if (t->queue_test == TUNER_QUEUE_NONE && t->stall_test != TUNER_QUEUE_TESTING &&
            now - t->yield_start_usec >= (TUNER_CAPACITY_SECONDS + 1) * USEC_PER_SEC) {
                double own = 0, all = 0;
                unsigned n = 0;

                /* over the last seconds, not a burst's */
                for (; n < TUNER_CAPACITY_SECONDS && second_back(t, n + 1); n++) {
                        own += second_back(t, n + 1)->own_total;
                        all += second_back(t, n + 1)->all_total;
                }
                if (n == TUNER_CAPACITY_SECONDS) {
                        t->cap_own = MAX(t->cap_own, own / n);
                        t->cap_all = MAX(t->cap_all, all / n);
                }
        }
        if (!t->cap_known) {
                /* Growing until reads queue or the others come to harm (grow_or_hold());
                 * then a second at that depth (or less, after harm): what it delivered is the
                 * capacity, unless the seconds before delivered more
                 * (what they did is at most the capacity too): a cap that stops and goes (the
                 * rig's) gave one such second 70.6 MiB/s of 125, and a sibling that took it
                 * read 6-7 MiB/s from then on. */
                grow_or_hold(t, now);
                if (queue && t->probe_hold_usec == 0)
                        t->probe_hold_usec = now;
                if (t->probe_hold_usec > 0 && now - t->probe_hold_usec >= USEC_PER_SEC) {
                        t->cap_own = MAX(t->cap_own, own_total);
                        t->cap_all = MAX(t->cap_all, all_total);
                        t->cap_known = true;
                        t->cap_seen_usec = now;
                }
                return;
        }
        test_stalls(t, now);
        hold_stalls(t, now);
        if (t->stall_test != TUNER_QUEUE_TESTING)
                test_queue(t, queue, now);
        if (!queue && t->queue_test == TUNER_QUEUE_NONE && t->stall_test != TUNER_QUEUE_TESTING &&
            now - t->cap_seen_usec >= t->probe_wait_usec && t->pace > 0 &&
            t->now.ours >= 0.9 * t->pace) {
                double grow = 1.0 + TUNER_YIELD_PROBE * (double)dt / (double)USEC_PER_SEC;

                t->cap_own *= grow;
                t->cap_all *= grow;
                t->probing = true;
        }
}

static bool decide_yield(DepthTuner *t, uint64_t now, uint64_t dt) {
        double pace;

        follow_capacities(t, now, dt);
        pace = pace_for(t);
        if (t->cut < TUNER_YIELD_MIN_CUT || t->own_cost + t->other_cost < TUNER_YIELD_MIN_COST)
                return stop_yielding(t, now);
        if (t->pace == 0 && !t->cap_known) {
                /* Growing until reads queue: one read more a sample, in samples in which reads
                 * of ours came back. One in which none did tells nothing of a queue (the test
                 * is on latencies, and there are none), and a device that answers nothing for
                 * a while is queueing already: each read added there is one more for the
                 * workload to wait behind. Nor before the queue we held before the yield
                 * has drained (follow_capacities()): a queue then is that one, not the knee.
                 * Harm to the others takes the depth back (grow_or_hold()). */
                if (t->grow_harmed) {
                        t->grow_harmed = false;
                        return tuner_set_depth(t,
                                               tuner_clamp_yield(t, MIN((uint64_t)t->depth - 1,
                                                                        (uint64_t)t->grow_from)),
                                               TUNER_YIELD);
                }
                if (t->probe_hold_usec > 0 || last_slot(t)->bytes <= 0 || !t->yield_settled)
                        return false;
                return tuner_set_depth(t, tuner_clamp_yield(t, (uint64_t)t->depth + 1),
                                       TUNER_YIELD);
        }
        /* Until the queue we held before has drained, half of it, so that it drains fast; less
         * while a queue is tested. */
        t->pace = (t->yield_settled ? pace : pace / 2) * t->pace_scale;
        return tuner_set_depth(t, depth_for_pace(t, t->pace, false), TUNER_YIELD);
}

/*
 * Not yielding: the requests beside us (tuner_stalls(), on the family's disks that no sibling
 * reads) took longer than the yield's largest target in most of the last samples, while their
 * cost is too little to yield to. It may be all of it: a load starved behind a cap we keep
 * full shows as little. Behind a cap that passes its members' reads in turns (the rig's), a
 * database's 16 KiB reads wait a turn of each sibling with a read waiting: on unit/tuner's
 * served model of it, three siblings at 150 MiB/s let it 25 of its 2000 reads a second, 0.4
 * MiB/s, under TUNER_YIELD_MIN_COST, and none ever yielded. So our depth is halved for
 * TUNER_HIDDEN_USEC: if the load shows what it wants, the yield follows from its cost as
 * always (sample by sample, in tuner_sample()); if not, the depth comes back and none is tried
 * again for TUNER_HIDDEN_WAIT_USEC, twice as long after each (a disk slow on its own costs
 * a second at half depth now and then). Returns true when it changed the depth.
 */
static bool hidden_demand(DepthTuner *t, uint64_t now) {
        double base, d;

        t->hidden_bits =
                ((t->hidden_bits << 1) | (t->their_wait_usec > TUNER_YIELD_TARGET_MAX_USEC)) &
                ((1u << TUNER_RATE_SAMPLES) - 1);
        if (t->yielding) {
                /* what they waited while we yielded says nothing of what we hide after */
                t->hidden_bits = 0;
                if (t->hidden_usec > 0) { /* it showed: the next may come as soon */
                        t->hidden_usec = 0;
                        t->hidden_wait_usec = TUNER_HIDDEN_WAIT_USEC;
                        t->hidden_next_usec = now + TUNER_HIDDEN_WAIT_USEC;
                }
                return false;
        }
        if (t->hidden_usec > 0) {
                if (now - t->hidden_usec < TUNER_HIDDEN_USEC)
                        return false;
                t->hidden_usec = 0;
                t->hidden_next_usec = now + t->hidden_wait_usec;
                t->hidden_wait_usec = MIN(2 * t->hidden_wait_usec, TUNER_PROBE_WAIT_MAX_USEC);
                tuner_taint(t, now);
                return tuner_set_depth(t, MAX(t->depth, t->hidden_depth), t->mode);
        }
        if (__builtin_popcount(t->hidden_bits) < TUNER_HIDDEN_SAMPLES ||
            now < t->hidden_next_usec || t->mode == TUNER_RELEARN ||
            t->read_samples <= TUNER_START_SAMPLES || t->depth < 2)
                return false;
        if (t->mode == TUNER_SLOW_START) {
                unsigned was = t->depth;

                tuner_end_slow_start(t, now);
                if (t->depth < 2)
                        return t->depth != was;
        }
        t->hidden_usec = now;
        t->hidden_depth = t->depth;
        t->hidden_probes++;
        tuner_taint(t, now);
        /* Half of what we hold, and of what carries our rate without a queue (a climb that
         * held 27 reads at a cap that gave it 50 MiB/s at 120 ms, halved, still kept the cap
         * full): the load gets through whatever the cap's order. */
        base = tuner_base_latency(t) > 0 ? (double)tuner_base_latency(t) : t->latency_usec;
        d = t->now.ours * base / (double)USEC_PER_SEC / MAX(t->request_bytes, 1.0) / 2;
        return tuner_set_depth(t, (unsigned)CLAMP(ceil(d), 1.0, (double)MAX(t->depth / 2, 1u)),
                               t->mode);
}

bool tuner_sample(DepthTuner *t, double siblings, double own_cost, double other_cost,
                  uint64_t now_usec) {
        uint64_t dt = t->last_sample_usec > 0 ? now_usec - t->last_sample_usec : 0;
        TunerSecond *sec;
        double pace;

        push_sample(t, now_usec);
        t->now = last_second(t, siblings, own_cost, other_cost);
        sec = current_second(t, now_usec);
        /* The rates over the second that ends now (the ring holds a second of samples). */
        sec->used = true;
        sec->ours = t->now.ours;
        sec->own_total = t->now.ours + own_cost;
        sec->all_total = t->now.ours + siblings + own_cost + other_cost;
        sec->siblings = siblings;
        sec->wait_max = MAX(sec->wait_max, t->their_wait_usec);
        sec->stalled |= t->stall_new; /* tuner_stalls() */
        t->stall_new = false;
        sec->queued |= queued(t, TUNER_RATE_SAMPLES, tuner_base_latency(t),
                              tuner_target(tuner_base_latency(t)));
        if (last_slot(t)->min_latency_usec < sec->min_latency_usec)
                sec->min_latency_usec = last_slot(t)->min_latency_usec;
        sec->own_cost = MAX(sec->own_cost, own_cost);
        /* Not in our first seconds: the volumes beside ours may be siblings starting with us,
         * whose first reads show before they count them (tuner_sample() below), and what the
         * disks beside did in our first second is in their rates for one more. Kept, that
         * cost would make us yield for TUNER_YIELD_QUIET_USEC once they are over. */
        if (t->read_samples > TUNER_START_SAMPLES)
                sec->other_cost = MAX(sec->other_cost, other_cost);
        recent_costs(t);
        t->others = t->own_cost + t->other_cost > 0;
        /* Anyone on our own disk waits behind our queue; on the disks beside, only a load
         * that could be worth a yield is worth a relearn (a journal's commits are not). */
        if (t->own_cost > 0 || t->own_cost + t->other_cost >= TUNER_YIELD_MIN_COST)
                tuner_base_doubted(t, false, now_usec);

        if (hidden_demand(t, now_usec))
                return true;
        if (t->yielding)
                return decide_yield(t, now_usec, dt);
        if (t->own_cost + t->other_cost < TUNER_YIELD_MIN_COST)
                return false;
        /* Not deeper while others are there: the epochs judge from here. */
        if (t->mode == TUNER_SLOW_START)
                tuner_end_slow_start(t, now_usec);
        /* A few samples first: before, our rate (what a cut is a share of) is not known, and
         * neither is what the device gives. For TUNER_START_SAMPLES samples from the first with
         * a read of ours, while those ramp up, only a workload on our own disk is one to yield to
         * (the volumes beside ours may be siblings starting up with us: their first reads,
         * the mapping of their file systems, show before they count them; and the disks'
         * rates are over the last second). */
        if (t->ring_n < TUNER_YIELD_FIRST_SAMPLES)
                return false;
        if (t->read_samples <= TUNER_START_SAMPLES)
                t->other_cost = 0;
        learn_capacities(t, now_usec);
        pace = pace_for(t);
        /* Nor, before TUNER_KNOWN_SECONDS of our reads, for others who take less than half
         * of what we read: the capacities so far are what our ramp-up delivered, so the cut
         * is larger than it will be (when a yield with no capacity known started again from
         * TUNER_YIELD_START reads, a 4 MiB/s reader on the disk beside a 125 MiB/s volume
         * cost 3 s of it: 0.87x the rate alone). The climb keeps to the tighter target
         * meanwhile. After that the cut is made as before: from the capacities if they were
         * seen at saturation, else from the depth the pace needs, growing until reads queue
         * (start_yielding()). */
        if (t->fair <= 0 || t->cut < TUNER_YIELD_MIN_CUT ||
            ((t->ring_n < TUNER_RATE_SAMPLES || t->cap_seconds < TUNER_KNOWN_SECONDS) &&
             t->cut < TUNER_YIELD_EARLY_CUT))
                return false;
        return start_yielding(t, pace, now_usec);
}

double tuner_pace(const DepthTuner *t) {
        return t->yielding ? t->pace : 0;
}
