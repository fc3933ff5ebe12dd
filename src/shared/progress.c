/* SPDX-License-Identifier: MIT */
/*
 * Progress arithmetic and its numbers in words. The rate is measured over a sliding window of
 * samples, so it follows the volume (first-touch latency comes and goes) rather than the whole-run
 * average, which would hide a stall.
 */
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "progress.h"
#include "util.h"

#define MiB (UINT64_C(1) << 20)

void progress_init(Progress *p, uint64_t now_usec, uint64_t done_bytes) {
        *p = (Progress){0};
        progress_sample(p, now_usec, done_bytes);
}

static const ProgressSample *sample_at(const Progress *p, unsigned age) {
        /* age 0 = newest */
        return &p->samples[(p->head + p->n - 1 - age) % PROGRESS_SAMPLES];
}

void progress_sample(Progress *p, uint64_t now_usec, uint64_t done_bytes) {
        if (p->n < PROGRESS_SAMPLES) {
                p->samples[(p->head + p->n) % PROGRESS_SAMPLES] =
                        (ProgressSample){now_usec, done_bytes};
                p->n++;
                return;
        }
        p->samples[p->head] = (ProgressSample){now_usec, done_bytes};
        p->head = (p->head + 1) % PROGRESS_SAMPLES;
}

uint64_t progress_rate(const Progress *p) {
        const ProgressSample *newest, *oldest;
        unsigned age = 0;

        if (p->n < 2)
                return 0;
        newest = sample_at(p, 0);
        /* The oldest sample still inside the window (at least the one before the newest). */
        while (age + 1 < p->n && newest->usec - sample_at(p, age + 1)->usec <= PROGRESS_WINDOW_USEC)
                age++;
        if (age == 0)
                age = 1;
        oldest = sample_at(p, age);
        if (newest->usec <= oldest->usec || newest->bytes < oldest->bytes)
                return 0;
        return (uint64_t)((double)(newest->bytes - oldest->bytes) * (double)USEC_PER_SEC /
                          (double)(newest->usec - oldest->usec));
}

uint64_t progress_eta(uint64_t done_bytes, uint64_t total_bytes, uint64_t rate) {
        if (done_bytes >= total_bytes)
                return 0;
        if (rate == 0)
                return PROGRESS_ETA_UNKNOWN;
        return DIV_ROUND_UP(total_bytes - done_bytes, rate);
}

unsigned progress_permille(uint64_t done_bytes, uint64_t total_bytes) {
        if (total_bytes == 0 || done_bytes >= total_bytes)
                return 1000;
        return (unsigned)((double)done_bytes * 1000.0 / (double)total_bytes);
}

char *format_rate(char *buf, size_t size, uint64_t bps) {
        if (bps >= 10 * MiB)
                snprintf(buf, size, "%.0f MiB/s", (double)bps / MiB);
        else if (bps >= MiB)
                snprintf(buf, size, "%.1f MiB/s", (double)bps / MiB);
        else
                snprintf(buf, size, "%.0f KiB/s", (double)bps / 1024);
        return buf;
}

char *format_permille(char buf[static FORMAT_PERMILLE_MAX], unsigned permille) {
        (void)snprintf(buf, FORMAT_PERMILLE_MAX, "%u.%u", permille / 10, permille % 10);
        return buf;
}
