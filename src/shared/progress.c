/* SPDX-License-Identifier: MIT */
/*
 * Progress arithmetic and rendering. The rate is measured over a sliding window of samples,
 * so it follows the volume (first-touch latency comes and goes) rather than the whole-run
 * average, which would hide a stall.
 */
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "progress.h"
#include "util.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

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

static char *format_eta(char *buf, size_t size, uint64_t done, uint64_t total, uint64_t rate) {
        char d[FORMAT_DURATION_MAX];
        uint64_t eta = progress_eta(done, total, rate);

        if (eta == PROGRESS_ETA_UNKNOWN)
                snprintf(buf, size, "measuring rate");
        else
                snprintf(buf, size, "about %s left", format_duration(d, sizeof(d), eta));
        return buf;
}

char *format_permille(char buf[static FORMAT_PERMILLE_MAX], unsigned permille) {
        (void)snprintf(buf, FORMAT_PERMILLE_MAX, "%u.%u", permille / 10, permille % 10);
        return buf;
}

char *progress_format_status(char *buf, size_t size, const char *key, uint64_t done_bytes,
                             uint64_t total_bytes, uint64_t rate) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], r[32], e[64];
        unsigned pm = progress_permille(done_bytes, total_bytes);
        char pmb[FORMAT_PERMILLE_MAX];

        format_bytes(a, sizeof(a), done_bytes);
        format_bytes(b, sizeof(b), total_bytes);
        if (rate == 0) /* no rate yet: say so once, not as "0 KiB/s" */
                snprintf(buf, size, "%s: %s%% hydrated (%s of %s), measuring rate", key,
                         format_permille(pmb, pm), a, b);
        else
                snprintf(buf, size, "%s: %s%% hydrated (%s of %s), %s, %s", key,
                         format_permille(pmb, pm), a, b, format_rate(r, sizeof(r), rate),
                         format_eta(e, sizeof(e), done_bytes, total_bytes, rate));
        return buf;
}

/* done/total in the unit that suits the total: "12.3/29.3 GiB", "0.1/0.2 GiB" would say nothing. */
static void format_amounts(char *buf, size_t size, uint64_t done_bytes, uint64_t total_bytes) {
        static const struct {
                uint64_t unit;
                const char *name;
        } units[] = {{UINT64_C(1) << 40, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {1024, "KiB"}};
        size_t i = 0;

        while (i + 1 < ELEMENTSOF(units) && total_bytes < units[i].unit)
                i++;
        snprintf(buf, size, "%.1f/%.1f %s", (double)done_bytes / (double)units[i].unit,
                 (double)total_bytes / (double)units[i].unit, units[i].name);
}

/*
 * Fitted to @width by dropping, in this order, the bar's length down to 10, the ETA, the rate,
 * the amounts and then the bar: the percentage is always there, and the line is never wider than
 * @width (a wider one wraps, and "\r" then redraws only its last row).
 */
char *progress_format_bar(char *buf, size_t size, unsigned width, uint64_t done_bytes,
                          uint64_t total_bytes, uint64_t rate) {
        char pct[FORMAT_PERMILLE_MAX + 4], amounts[64], r[32], d[FORMAT_DURATION_MAX], eta_s[48],
                tail[256];
        unsigned pm = progress_permille(done_bytes, total_bytes), bar, fill;
        char pmb[FORMAT_PERMILLE_MAX];
        uint64_t eta = progress_eta(done_bytes, total_bytes, rate);
        size_t len;

        snprintf(pct, sizeof(pct), " %5s%%", format_permille(pmb, pm));
        format_amounts(amounts, sizeof(amounts), done_bytes, total_bytes);
        snprintf(eta_s, sizeof(eta_s), "ETA %s",
                 eta == PROGRESS_ETA_UNKNOWN ? "?" : format_duration(d, sizeof(d), eta));
        format_rate(r, sizeof(r), rate);

        for (unsigned drop = 0;; drop++) {
                snprintf(tail, sizeof(tail), "%s%s%s%s%s%s%s", pct, drop < 3 ? "  " : "",
                         drop < 3 ? amounts : "", drop < 2 ? "  " : "", drop < 2 ? r : "",
                         drop < 1 ? "  " : "", drop < 1 ? eta_s : "");
                len = strlen(tail);
                if (len + 12 <= width || drop == 3)
                        break;
        }
        if (len + 12 > width) { /* no room for a bar of 10 */
                const char *t = tail;

                while (*t == ' ' && strlen(t) > width) /* "100.0%" fits in 6 columns */
                        t++;
                snprintf(buf, size, "%.*s", (int)MIN((size_t)width, strlen(t)), t);
                return buf;
        }
        bar = MIN((unsigned)(width - len - 2), 50u);
        fill = (unsigned)((uint64_t)bar * pm / 1000);
        if (size < (size_t)bar + 3 + len) {
                snprintf(buf, size, "%s", tail);
                return buf;
        }
        buf[0] = '[';
        memset(buf + 1, '#', fill);
        memset(buf + 1 + fill, '.', bar - fill);
        buf[1 + bar] = ']';
        strcpy(buf + 2 + bar, tail);
        return buf;
}
