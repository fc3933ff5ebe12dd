/* SPDX-License-Identifier: MIT */
/*
 * The clock, in microseconds (time-util.h).
 */
#include <time.h>

#include "time-util.h"
#include "util.h"

uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / NSEC_PER_USEC;
}
