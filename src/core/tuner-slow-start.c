/* SPDX-License-Identifier: MIT */
/*
 * The slow start of tuner.h, rule 1: read by read, one read more for each cold one that
 * completes, until a round of reads does not pay; then the epochs of tuner.c take over.
 */
#include <math.h>

#include "tuner-internal.h"
#include "tuner.h"
#include "util.h"

/* The slow start is over, at @depth (the epochs judge from there), in STARTUP. */
static void end_slow_start(DepthTuner *t, unsigned depth, uint64_t now) {
        t->depth = tuner_clamp_depth(t, depth);
        t->changes++;
        t->mode = TUNER_STARTUP;
        t->base_rate = 0;
        tuner_new_epoch(t, now);
}

/* What the device delivered in @n reads of @bytes completed since @since, in bytes/s;
 * INFINITY if they all came at once. */
static double served_since(unsigned n, uint64_t since, uint64_t bytes, uint64_t now) {
        return now > since
                       ? (double)n * (double)bytes * (double)USEC_PER_SEC / (double)(now - since)
                       : INFINITY;
}

/*
 * Slow start, read by read: one read more for each cold one that completes, so the depth doubles
 * every round (a round: as many completions as the depth when it began). It ends when a round
 * did not pay, at the depth the round before began with: its first reads' smallest latency
 * stood over the smallest since the start by more than the target (reads began to queue), or
 * its throughput grew by less than TUNER_SLOW_START_GAIN (the device gives no more).
 */
void tuner_slow_start(DepthTuner *t, uint64_t bytes, uint64_t latency, uint64_t now) {
        double rate;

        if (t->tainted) /* the owner could not keep the depth: this says nothing */
                return;
        /* Sent before a cut to the siblings' share: at the old depth, behind the old queue. */
        if (now - MIN(latency, now) < t->start_cut_usec)
                return;
        if (t->round_completions == 0) {
                t->round_start_usec = now;
                t->round_bytes = 0;
        }
        t->start_min_usec = MIN(t->start_min_usec, latency);
        if (t->round_rate == 0 && t->start_completions > 0 &&
            latency > t->start_min_usec + tuner_target(t->start_min_usec)) {
                /* In the first round, this read waited behind ours (a cap that lets through
                 * far less than the depth we start at asks for): the depth that carries what
                 * the device delivered over the last completions at the smallest latency plus
                 * the target, if that is less than half of what we have. What it delivered:
                 * over the whole round so far, or over the last few completions if that says
                 * more (a device that answers in bursts, as the rig's cap does, leaves a gap
                 * after one, and the last few alone measured the gap: 21 MiB/s of a 125
                 * MiB/s cap, and a depth of 6 where 13 was needed). A read slowed by
                 * chance on a fast device, or one that gives more the deeper it is driven,
                 * asks for more than that. */
                unsigned n = MIN(t->start_completions, (unsigned)TUNER_SLOW_START_SAMPLES);
                double served = MAX(
                        served_since(t->start_completions, t->start_first_usec, bytes, now),
                        served_since(n, t->start_done_usec[t->start_completions % n], bytes, now));
                double d = served * (double)(t->start_min_usec + tuner_target(t->start_min_usec)) /
                           (double)USEC_PER_SEC / (double)bytes;

                if (2.0 * d < (double)t->depth) {
                        end_slow_start(t, (unsigned)MAX(d + 0.5, 1.0), now);
                        return;
                }
        }
        if (t->start_completions == 0)
                t->start_first_usec = now;
        t->start_done_usec[t->start_completions++ % TUNER_SLOW_START_SAMPLES] = now;
        if (t->round_completions < TUNER_SLOW_START_SAMPLES)
                t->round_min_usec = MIN(t->round_min_usec, latency);
        t->round_bytes += (double)bytes;
        if (t->depth < t->max) {
                t->depth++;
                t->changes++;
        }
        if (++t->round_completions < t->round_depth)
                return;
        rate = now > t->round_start_usec
                       ? t->round_bytes * (double)USEC_PER_SEC / (double)(now - t->round_start_usec)
                       : 0;
        if (t->round_min_usec > t->start_min_usec + tuner_target(t->start_min_usec) ||
            (t->round_rate > 0 && rate < t->round_rate * TUNER_SLOW_START_GAIN)) {
                end_slow_start(t, t->round_prev_depth, now);
                return;
        }
        if (t->depth == t->max) {
                end_slow_start(t, t->depth, now);
                return;
        }
        t->round_rate = rate;
        t->round_prev_depth = t->round_depth;
        t->round_depth = t->depth;
        t->round_completions = 0;
        t->round_min_usec = UINT64_MAX;
}

void tuner_end_slow_start(DepthTuner *t, uint64_t now) {
        if (t->mode == TUNER_SLOW_START)
                end_slow_start(t, t->round_prev_depth, now);
}

void tuner_new_round(DepthTuner *t, unsigned depth) {
        t->round_depth = t->round_prev_depth = depth;
        t->round_completions = 0;
        t->round_min_usec = UINT64_MAX;
        t->round_rate = 0;
        t->start_completions = 0;
}

/* An equal share of the depth the tuner started at, with @others beside it. */
static unsigned start_share(const DepthTuner *t, unsigned others) {
        return tuner_clamp_depth(t, DIV_ROUND_UP(t->start_depth, others + 1));
}

void tuner_start_share(DepthTuner *t, unsigned siblings) {
        unsigned share;

        /* Before any read only: a start at the maximum (a device that holds fewer than 32)
         * has room to start slowly from a share too. */
        if (t->fixed || siblings == 0 || t->start_completions > 0 || t->completions > 0 ||
            (t->mode != TUNER_SLOW_START && t->mode != TUNER_STARTUP))
                return;
        share = start_share(t, siblings);
        if (share >= t->depth)
                return;
        t->depth = share;
        tuner_new_round(t, share);
        t->mode = TUNER_SLOW_START;
}

void tuner_slow_start_siblings(DepthTuner *t, unsigned readers, uint64_t now) {
        unsigned share = start_share(t, readers);

        /* Once in the tuner's life: a climb restarted after a yield keeps its depth. */
        if (t->start_shared)
                return;
        t->start_shared = true;
        if (t->mode != TUNER_SLOW_START || t->depth <= share)
                return;
        /* A new round from the share, of the reads sent from now on: it doubles from there
         * while that pays, judged by them alone (the first round's rule too). */
        t->depth = share;
        t->changes++;
        t->start_cut_usec = now;
        tuner_new_round(t, share);
}
