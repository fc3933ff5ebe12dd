/* SPDX-License-Identifier: MIT */
/*
 * How fast the hydrator may read: RateLimit=, or the tuner's pace while it yields (tuner.h,
 * rule 3), the smaller of the two, through one token bucket; and a new limit from the owner
 * (the D-Bus object's SetRateLimit) at any time.
 */
#include <errno.h>

#include "hydrator-internal.h"
#include "util.h"

/* The rate to read at: the smaller of RateLimit= and the tuner's pace while it yields; 0 =
 * unlimited. */
static double rate_limit(const Hydrator *h, bool *ret_paced) {
        double limit = (double)h->settings.rate_limit, pace = tuner_pace(&h->tuner);

        *ret_paced = pace > 0 && (limit == 0 || pace < limit);
        return *ret_paced ? pace : limit;
}

/*
 * Token bucket. Returns true if @bytes may be requested now; otherwise arms the rate timer.
 * RateLimit= allows a tenth of a second's burst. The tuner's pace goes out in batches, one every
 * TUNER_PACE_BATCH_USEC, each what the period's tokens allow. A device
 * that answers a read only once the reads that came after it are answered too (the rig's FUSE
 * export nests its requests) never answers a stream of reads spaced closer than its latency
 * until our queue is full; a batch a period apart is answered a latency later, like any
 * device's. The bucket holds a period's tokens on top of what the batch before left (less than
 * a read: it sent all it could; a batch the depth cut short keeps a read's more at most), and
 * HYDRATOR_PACE_CATCH_UP_USEC more, so that a timer that fired late (or a loop busy for a
 * moment) costs no pace. A bucket of a period and the catch-up only dropped the fraction of a
 * read each batch carries: at 17.5 MiB/s in 1 MiB reads it sent 2 and 1 in turn, 15 MiB/s, and
 * three siblings behind one cap read 70 of the 77.6 MiB/s their paces allowed.
 *
 * Batches go out at multiples of the period on the monotonic clock, which every process on the
 * host shares: siblings that are paced send together, and between batches nothing is sent,
 * not even when a completion finds tokens. Behind a shared cap, each sibling's batch at a phase
 * of its own kept reads arriving all the time, and a workload on the family waited for
 * whichever batch was in front of it; batches in step leave the rest of the period to it
 * (docs/bench/real-host.md). A batch that the queue depth cut short stays open: completions
 * send the rest of it.
 */
bool hydrator_rate_allows(Hydrator *h, uint64_t bytes) {
        uint64_t now = hydrator_now_usec(), at;
        bool paced;
        double limit = rate_limit(h, &paced), burst;

        if (limit <= 0) {
                h->tokens_usec = now;
                return true;
        }
        if (paced)
                burst = (double)bytes +
                        limit * (double)(TUNER_PACE_BATCH_USEC + HYDRATOR_PACE_CATCH_UP_USEC) /
                                (double)USEC_PER_SEC;
        else
                burst = MAX((double)bytes, limit / 10.0);
        h->tokens += (double)(now - h->tokens_usec) * limit / (double)USEC_PER_SEC;
        h->tokens = MIN(h->tokens, burst);
        h->tokens_usec = now;
        if (paced && now < h->batch_usec)
                at = h->batch_usec; /* between batches */
        else if (h->tokens >= (double)bytes) {
                h->tokens -= (double)bytes;
                return true;
        } else {
                /* paced: the first multiple of the period with tokens for this read (the
                 * batch there is the period's worth, or its late timer's more) */
                at = now + (uint64_t)(((double)bytes - h->tokens) * (double)USEC_PER_SEC / limit) +
                     1;
                if (paced)
                        h->batch_usec = at =
                                DIV_ROUND_UP(at, TUNER_PACE_BATCH_USEC) * TUNER_PACE_BATCH_USEC;
        }
        if (hydrator_arm_timer(h->rate_timer, at) < 0)
                hydrator_finish(h, HYDRATOR_FAILED, -ENOMEM);
        return false;
}

void hydrator_set_rate_limit(Hydrator *h, uint64_t bytes_per_second) {
        h->settings.rate_limit = bytes_per_second;
        h->tokens = 0;
        h->tokens_usec = hydrator_now_usec();
        (void)sd_event_source_set_enabled(h->rate_timer, SD_EVENT_OFF);
        hydrator_fill(h);
}
