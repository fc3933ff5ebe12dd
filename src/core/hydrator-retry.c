/* SPDX-License-Identifier: MIT */
/*
 * Failed reads. A media error is retried with exponential backoff (0.1 s, 0.4 s, 1.6 s), a
 * request of several chunks split into single chunks so that one bad chunk does not condemn its
 * neighbours; a chunk that still fails is recorded as unreadable. Every read failing in a row
 * (HYDRATOR_FAILURE_STORM) means the device is gone, not bad; other errors end the run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "hydrator-internal.h"
#include "log.h"
#include "util.h"

static bool retryable(int error) {
        /* Media errors: worth another try, then recorded. Anything else means the device or
         * the descriptor is gone or wrong, and retrying would only record the whole volume bad. */
        return error == -EIO || error == -ENODATA || error == -EILSEQ || error == -ETIMEDOUT ||
               error == -EREMOTEIO;
}

static int add_retry(Hydrator *h, const ReadRequest *req) {
        /* attempt counts from 1 for the first retry: 0.1 s, 0.4 s, 1.6 s ... */
        uint64_t backoff = HYDRATOR_RETRY_BASE_USEC << (2 * MIN(req->attempt - 1, 8u));

        if (ARRAY_GROW(h->retries, h->n_retries_allocated, h->n_retries + 1) < 0)
                return -ENOMEM;
        h->retries[h->n_retries++] = (Retry){*req, hydrator_now_usec() + backoff};
        return 0;
}

void hydrator_rearm_retry_timer(Hydrator *h) {
        uint64_t due = UINT64_MAX;

        for (size_t i = 0; i < h->n_retries; i++)
                due = MIN(due, h->retries[i].due_usec);
        if (due == UINT64_MAX)
                (void)sd_event_source_set_enabled(h->retry_timer, SD_EVENT_OFF);
        else if (hydrator_arm_timer(h->retry_timer, due) < 0)
                hydrator_finish(h, HYDRATOR_FAILED, -ENOMEM);
}

static void give_up(Hydrator *h, const ReadRequest *req, int error) {
        int r;

        log_warning_errno(
                error, "%s: bytes %" PRIu64 "-%" PRIu64 " unreadable after %u attempts: %m",
                h->dev->path, req->offset, req->offset + req->length - 1, req->attempt + 1);
        r = state_add_bad(h->state, req->offset, req->length);
        if (r < 0)
                hydrator_finish(h, HYDRATOR_FAILED,
                                log_error_errno(r, "Failed to record unreadable range: %m"));
        /* The chunk stays busy: this run does not plan it again. */
}

/* A failed read: split multi-chunk requests so one bad chunk does not condemn its neighbours. */
void hydrator_handle_failure(Hydrator *h, const ReadRequest *req, int error) {
        const ChunkMap *m = h->state->map;
        uint64_t first = req->offset / m->chunk_size;
        uint64_t count = DIV_ROUND_UP(req->length, m->chunk_size);
        int r = 0;

        if (error == -ENXIO || error == -ENODEV) {
                /* Detached (or shrunk under us): not a failure of ours, and the next attach
                 * resumes. */
                log_warning_errno(error, "%s went away (%m); stopping with progress saved",
                                  h->dev->path);
                hydrator_finish(h, HYDRATOR_DETACHED, error);
                return;
        }
        if (!retryable(error)) {
                log_error_errno(error, "Failed to read %s at byte %" PRIu64 ": %m", h->dev->path,
                                req->offset);
                hydrator_finish(h, HYDRATOR_FAILED, error);
                return;
        }
        /* Media errors are rare and local; every read failing means the device went away. */
        if (++h->failures_in_a_row >= HYDRATOR_FAILURE_STORM) {
                log_error_errno(error,
                                "%s: %u reads in a row failed (%m): the device looks detached "
                                "or broken; stopping with progress saved",
                                h->dev->path, h->failures_in_a_row);
                hydrator_finish(h, HYDRATOR_FAILED, error);
                return;
        }
        if (count == 1 && req->attempt >= HYDRATOR_RETRIES) {
                give_up(h, req, error);
                return;
        }

        log_debug_errno(error, "%s: read at byte %" PRIu64 " failed (%m), retrying", h->dev->path,
                        req->offset);
        for (uint64_t c = first; c < first + count && r >= 0; c++)
                r = add_retry(h, &(ReadRequest){.offset = chunkmap_offset(m, c),
                                                .length = chunkmap_range_bytes(m, c, 1),
                                                .attempt = req->attempt + 1});
        if (r < 0) {
                hydrator_finish(h, HYDRATOR_FAILED,
                                log_error_errno(r, "Failed to queue a retry: %m"));
                return;
        }
        hydrator_rearm_retry_timer(h);
}

bool hydrator_submit_due_retries(Hydrator *h) {
        uint64_t now = hydrator_now_usec();
        size_t i = 0;

        while (i < h->n_retries) {
                Retry *t = &h->retries[i];

                if (t->due_usec > now) {
                        i++;
                        continue;
                }
                t->req.submit_usec = now;
                if (reader_submit(h->reader, &t->req) == -EBUSY)
                        return false;
                *t = h->retries[--h->n_retries];
        }
        hydrator_rearm_retry_timer(h);
        return true;
}
