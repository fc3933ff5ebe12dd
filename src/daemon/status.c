/* SPDX-License-Identifier: MIT */
/*
 * Status lines for systemd. The volume id comes first so that `systemctl status` of many
 * instances reads as a list; a run that ended says how, and what is left for the next one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "progress.h"
#include "status.h"

#define STATUS_BAD_RANGES_SHOWN 3

/* "; metadata done, hot paths 63%, used 12%, free space next" after what @buf holds, when the
 * plan knows more than "the whole device is used". */
static void append_plan(char *buf, size_t size, const PlanProgress *pp) {
        size_t n = strlen(buf);
        char stages[160];

        if (!pp->fs_aware || n + 2 >= size)
                return;
        (void)snprintf(buf + n, size - n, "; %s", plan_progress_format(stages, sizeof(stages), pp));
}

/* Mode=used left free space unread: the final word says how much. */
static bool format_used_complete(char *buf, size_t size, const HydratorStatus *st) {
        const PlanProgress *pp = &st->plan;
        uint64_t cold = pp->total_bytes[PLAN_STAGE_FREE] - pp->done_bytes[PLAN_STAGE_FREE];
        char used[FORMAT_BYTES_MAX], free_[FORMAT_BYTES_MAX];

        if (!pp->skip_free || cold == 0)
                return false;
        snprintf(buf, size, "%s: hydrated %s of used blocks; %s free space left cold (Mode=used)",
                 st->key,
                 format_bytes(used, sizeof(used), st->size - pp->total_bytes[PLAN_STAGE_FREE]),
                 format_bytes(free_, sizeof(free_), cold));
        return true;
}

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
                if (st->waiting_for_aio) {
                        snprintf(buf, size,
                                 "%s: %u.%u%% hydrated (of %s); waiting for asynchronous I/O: "
                                 "fs.aio-max-nr is used up, trying again every %" PRIu64 " s",
                                 st->key, pm / 10, pm % 10, total,
                                 HYDRATOR_AIO_RETRY_USEC / 1000000u);
                        break;
                }
                if (st->stalled_usec > 0) {
                        char done[FORMAT_BYTES_MAX];

                        snprintf(buf, size,
                                 "%s: %u.%u%% hydrated (%s of %s); device stalled, no read "
                                 "completed for %" PRIu64 " s",
                                 st->key, pm / 10, pm % 10,
                                 format_bytes(done, sizeof(done), st->done_bytes), total,
                                 st->stalled_usec / 1000000u);
                        break;
                }
                progress_format_status(buf, size, st->key, st->done_bytes, st->size, st->rate);
                append_plan(buf, size, &st->plan);
                if (st->yielding) {
                        size_t n = strlen(buf);

                        (void)snprintf(buf + n, size - n, "; yielding to other I/O %s",
                                       st->yield_neighbours ? "on other volumes"
                                                            : "on the volume");
                }
                break;
        case HYDRATOR_COMPLETE:
                if (!format_used_complete(buf, size, st))
                        snprintf(buf, size, "%s: hydrated (%s)", st->key, total);
                break;
        case HYDRATOR_UNREADABLE: {
                size_t n = (size_t)snprintf(buf, size,
                                            "%s: finished, %u.%u%% hydrated (of %s); %zu "
                                            "unreadable range%s (bytes)",
                                            st->key, pm / 10, pm % 10, total, st->n_bad,
                                            st->n_bad == 1 ? "" : "s");

                /* Name the first few: enough to find them in the kernel log. */
                for (size_t i = 0; i < st->n_bad && i < STATUS_BAD_RANGES_SHOWN && n < size; i++)
                        n += (size_t)snprintf(buf + n, size - n, "%s%" PRIu64 "-%" PRIu64,
                                              i == 0 ? ": " : ", ", st->bad[i].offset,
                                              st->bad[i].offset + st->bad[i].length - 1);
                if (st->n_bad > STATUS_BAD_RANGES_SHOWN && n < size)
                        (void)snprintf(buf + n, size - n, " and %zu more",
                                       st->n_bad - STATUS_BAD_RANGES_SHOWN);
                break;
        }
        case HYDRATOR_FAILED:
                snprintf(buf, size, "%s: failed at %u.%u%% hydrated (of %s): %s; %s", st->key,
                         pm / 10, pm % 10, total, strerror(st->error < 0 ? -st->error : EIO),
                         st->unsaved ? "the state file could not be saved" : "progress saved");
                break;
        case HYDRATOR_DETACHED:
                snprintf(buf, size,
                         "%s: device detached at %u.%u%% hydrated (of %s); progress saved, "
                         "resumes when it is back",
                         st->key, pm / 10, pm % 10, total);
                break;
        case HYDRATOR_STOPPED:
                if (st->stalled_usec > 0 && st->in_flight > 0) {
                        /* The kernel keeps the process until the device returns them. */
                        snprintf(buf, size,
                                 "%s: stopped at %u.%u%% hydrated (of %s); progress saved; "
                                 "waiting for the stalled device to return %u read%s",
                                 st->key, pm / 10, pm % 10, total, st->in_flight,
                                 st->in_flight == 1 ? "" : "s");
                        break;
                }
                snprintf(buf, size, "%s: stopped at %u.%u%% hydrated (of %s); progress saved",
                         st->key, pm / 10, pm % 10, total);
                break;
        }
        return buf;
}
