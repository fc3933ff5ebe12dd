/* SPDX-License-Identifier: MIT */
/*
 * Status lines for systemd. The volume id comes first so that `systemctl status` of many
 * instances reads as a list; a run that ended says how, and what is left for the next one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "progress.h"
#include "status.h"

char *status_format(char *buf, size_t size, const HydratorStatus *st) {
        char total[FORMAT_BYTES_MAX];
        unsigned pm = progress_permille(st->done_bytes, st->size);

        format_bytes(total, sizeof(total), st->size);
        switch (st->phase) {
        case HYDRATOR_LOADED:
                snprintf(buf, size, "%s: %u.%u%% hydrated (of %s), starting", st->key, pm / 10,
                         pm % 10, total);
                break;
        case HYDRATOR_HYDRATING:
                if (st->paused) {
                        snprintf(buf, size, "%s: paused at %u.%u%% hydrated (of %s)", st->key,
                                 pm / 10, pm % 10, total);
                        break;
                }
                progress_format_status(buf, size, st->key, st->done_bytes, st->size, st->rate);
                break;
        case HYDRATOR_COMPLETE:
                snprintf(buf, size, "%s: hydrated (%s)", st->key, total);
                break;
        case HYDRATOR_UNREADABLE:
                snprintf(
                        buf, size,
                        "%s: finished, %u.%u%% hydrated (of %s); %zu unreadable range%s, the first "
                        "at byte %" PRIu64,
                        st->key, pm / 10, pm % 10, total, st->n_bad, st->n_bad == 1 ? "" : "s",
                        st->n_bad > 0 ? st->bad[0].offset : 0);
                break;
        case HYDRATOR_FAILED:
                snprintf(buf, size, "%s: failed at %u.%u%% hydrated (of %s): %s; progress saved",
                         st->key, pm / 10, pm % 10, total,
                         strerror(st->error < 0 ? -st->error : EIO));
                break;
        case HYDRATOR_DETACHED:
                snprintf(buf, size,
                         "%s: device detached at %u.%u%% hydrated (of %s); progress saved, "
                         "resumes when it is back",
                         st->key, pm / 10, pm % 10, total);
                break;
        case HYDRATOR_STOPPED:
                snprintf(buf, size, "%s: stopped at %u.%u%% hydrated (of %s); progress saved",
                         st->key, pm / 10, pm % 10, total);
                break;
        }
        return buf;
}
