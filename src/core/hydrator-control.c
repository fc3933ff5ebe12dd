/* SPDX-License-Identifier: MIT */
/*
 * What the owner of a run (the manager, the D-Bus object) does to it once it is under way, and
 * sees of it: pause, resume and stop, and the status that every report is phrased from.
 */
#include <errno.h>

#include "hydrator-internal.h"
#include "log.h"
#include "util.h"

int hydrator_pause(Hydrator *h) {
        unsigned pm;
        char pmb[FORMAT_PERMILLE_MAX];

        if (h->phase == HYDRATOR_LOADED) { /* mapping the file systems: start paused */
                if (!h->paused)
                        log_info("%s: paused before the first read", h->state->key);
                h->paused = true;
                return 0;
        }
        if (h->phase != HYDRATOR_HYDRATING)
                return -ESTALE;
        if (h->paused)
                return 0;
        pm = progress_permille(chunkmap_done_bytes(h->state->map), h->state->size);
        hydrator_account_active_time(h, hydrator_now_usec());
        h->paused = true;
        (void)sd_event_source_set_enabled(h->rate_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->retry_timer, SD_EVENT_OFF);
        log_info("%s: paused at %s%%", h->state->key, format_permille(pmb, pm));
        (void)hydrator_checkpoint(h); /* logged; the timer tries again */
        return 0;
}

int hydrator_resume(Hydrator *h) {
        if (h->phase == HYDRATOR_LOADED) {
                if (h->paused)
                        log_info("%s: resumed", h->state->key);
                h->paused = false;
                return 0;
        }
        if (h->phase != HYDRATOR_HYDRATING)
                return -ESTALE;
        if (!h->paused)
                return 0;
        h->accounted_usec = h->tokens_usec = hydrator_now_usec();
        h->tokens = 0;
        h->paused = false;
        log_info("%s: resumed", h->state->key);
        hydrator_rearm_retry_timer(h);
        hydrator_fill(h);
        return 0;
}

void hydrator_hold_after(Hydrator *h, PlanStage stage) {
        if (stage == h->hold_after)
                return;
        h->hold_after = stage;
        if (stage >= _PLAN_STAGE_MAX && h->phase == HYDRATOR_HYDRATING && !h->paused)
                hydrator_fill(h); /* the stages after it are read again */
}

void hydrator_stop(Hydrator *h) {
        hydrator_finish(h, HYDRATOR_STOPPED, 0);
}

void hydrator_get_status(const Hydrator *h, HydratorStatus *ret) {
        *ret = (HydratorStatus){
                .phase = h->phase,
                .key = h->state->key,
                .size = h->state->size - MIN(h->plan->empty_bytes, h->state->size),
                .done_bytes = hydrator_stored_done(h),
                .device_size = h->state->size,
                .rate = h->phase == HYDRATOR_HYDRATING && !h->paused && !h->stalled
                                ? progress_rate(&h->progress)
                                : 0,
                .run_bytes = h->run_bytes,
                .run_usec = h->run_start_usec > 0 ? hydrator_now_usec() - h->run_start_usec : 0,
                .paused = h->paused,
                .hold_after = h->hold_after,
                .rate_limit = h->settings.rate_limit,
                .request_bytes = hydrator_request_bytes(h),
                .depth = h->tuner.depth,
                .depth_min = h->tuner.min,
                .depth_max = h->tuner.max,
                .depth_changes = h->tuner.changes,
                .depth_auto = !h->tuner.fixed,
                .latency_usec = (uint64_t)h->tuner.latency_usec,
                .in_flight = h->reader ? reader_in_flight(h->reader) : 0,
                .yielding = h->tuner.yielding,
                .yield_neighbours = h->tuner.yielding && !h->tuner.yield_own,
                .yield_percent = h->tuner.yielding
                                         ? (unsigned)CLAMP(h->tuner.cut * 100.0 + 0.5, 0.0, 100.0)
                                         : 0,
                .waiting_for_aio = h->waiting_for_aio,
                .unsaved = h->unsaved,
                .stalled_usec = h->stalled ? hydrator_now_usec() - h->last_completion_usec : 0,
                .n_bad = h->state->n_bad,
                .bad = h->state->bad,
                .error = h->error,
        };
        plan_get_progress(h->plan, &ret->plan);
}
