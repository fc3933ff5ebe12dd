/* SPDX-License-Identifier: MIT */
/*
 * The hydrator's clock and its timers: the one place that reads CLOCK_MONOTONIC and creates or
 * arms sd-event timers for it. Kept apart so that a test can replace the clock at link time
 * (-Wl,--wrap=hydrator_now_usec only reaches calls from other files: nothing here calls it).
 */
#include "hydrator-internal.h"
#include "time-util.h"

uint64_t hydrator_now_usec(void) {
        return now_usec(CLOCK_MONOTONIC);
}

int hydrator_add_timer_accurate(Hydrator *h, sd_event_source **ret, uint64_t usec,
                                uint64_t accuracy, sd_event_time_handler_t cb) {
        int r = sd_event_add_time(h->event, ret, CLOCK_MONOTONIC, usec, accuracy, cb, h);

        if (r < 0)
                return r;
        return usec == UINT64_MAX ? sd_event_source_set_enabled(*ret, SD_EVENT_OFF) : 0;
}

int hydrator_add_timer(Hydrator *h, sd_event_source **ret, uint64_t usec,
                       sd_event_time_handler_t cb) {
        return hydrator_add_timer_accurate(h, ret, usec, HYDRATOR_TIMER_ACCURACY_USEC, cb);
}

int hydrator_arm_timer(sd_event_source *s, uint64_t usec) {
        int r = sd_event_source_set_time(s, usec);

        return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}
