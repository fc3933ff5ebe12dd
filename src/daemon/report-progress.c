/* SPDX-License-Identifier: MIT */
/*
 * The two renderings of progress in flight: the STATUS= line (sd_notify, the journal) and the
 * bar drawn on a terminal by --progress. Words and layout only; the numbers (rate, ETA,
 * per-mille) come from shared/progress.c.
 */
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "progress.h"
#include "report.h"
#include "util.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* "about 3 h 20 min left", "ETA 3 h 20 min"; "12.3/29.3 GiB" */
#define FORMAT_ETA_MAX (sizeof("about  left") + FORMAT_DURATION_MAX)
#define FORMAT_AMOUNTS_MAX (2 * FORMAT_BYTES_MAX)

static char *format_eta(char *buf, size_t size, uint64_t done, uint64_t total, uint64_t rate) {
        char d[FORMAT_DURATION_MAX];
        uint64_t eta = progress_eta(done, total, rate);

        if (eta == PROGRESS_ETA_UNKNOWN)
                snprintf(buf, size, "measuring rate");
        else
                snprintf(buf, size, "about %s left", format_duration(d, sizeof(d), eta));
        return buf;
}

char *report_format_status(char *buf, size_t size, const char *key, uint64_t done_bytes,
                           uint64_t total_bytes, uint64_t volume_bytes, uint64_t rate) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], r[FORMAT_RATE_MAX], e[FORMAT_ETA_MAX];
        char v[FORMAT_BYTES_MAX + 48] = "";
        unsigned pm = progress_permille(done_bytes, total_bytes);
        char pmb[FORMAT_PERMILLE_MAX];

        format_bytes(a, sizeof(a), done_bytes);
        format_bytes(b, sizeof(b), total_bytes);
        if (volume_bytes > 0) { /* the snapshot's block list: what it stores is what is read */
                char c[FORMAT_BYTES_MAX];

                (void)snprintf(v, sizeof(v), " stored in the snapshot; %s volume",
                               format_bytes(c, sizeof(c), volume_bytes));
        }
        if (rate == 0) /* no rate yet: say so once, not as "0 KiB/s" */
                snprintf(buf, size, "%s: %s%% hydrated (%s of %s%s), measuring rate", key,
                         format_permille(pmb, pm), a, b, v);
        else
                snprintf(buf, size, "%s: %s%% hydrated (%s of %s%s), %s, %s", key,
                         format_permille(pmb, pm), a, b, v, format_rate(r, sizeof(r), rate),
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
char *report_format_bar(char *buf, size_t size, unsigned width, uint64_t done_bytes,
                        uint64_t total_bytes, uint64_t rate) {
        char pct[FORMAT_PERMILLE_MAX + 4], amounts[FORMAT_AMOUNTS_MAX], r[FORMAT_RATE_MAX],
                d[FORMAT_DURATION_MAX], eta_s[FORMAT_ETA_MAX], tail[256];
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
