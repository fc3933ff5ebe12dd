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
 * HYDRATOR_PACE_BATCH_USEC: the timer waits until a batch's worth has built up. A device
 * that answers a read only once the reads that came after it are answered too (the rig's FUSE
 * export nests its requests) never answers a stream of reads spaced closer than its latency
 * until our queue is full; a batch a period apart is answered a latency later, like any
 * device's. The bucket keeps HYDRATOR_PACE_CATCH_UP_USEC more, so that a timer that fired late
 * (or a loop busy for a moment) costs no pace.
 */
bool hydrator_rate_allows(Hydrator *h, uint64_t bytes) {
        uint64_t now = hydrator_now_usec();
        bool paced;
        double limit = rate_limit(h, &paced), burst, wait_for = (double)bytes;

        if (limit <= 0) {
                h->tokens_usec = now;
                return true;
        }
        if (paced) {
                wait_for = MAX((double)bytes,
                               limit * (double)HYDRATOR_PACE_BATCH_USEC / (double)USEC_PER_SEC);
                burst = wait_for +
                        limit * (double)HYDRATOR_PACE_CATCH_UP_USEC / (double)USEC_PER_SEC;
        } else
                burst = MAX((double)bytes, limit / 10.0);
        h->tokens += (double)(now - h->tokens_usec) * limit / (double)USEC_PER_SEC;
        h->tokens = MIN(h->tokens, burst);
        h->tokens_usec = now;
        if (h->tokens >= (double)bytes) {
                h->tokens -= (double)bytes;
                return true;
        }
        if (hydrator_arm_timer(
                    h->rate_timer,
                    now + (uint64_t)((wait_for - h->tokens) * (double)USEC_PER_SEC / limit) + 1) <
            0)
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
