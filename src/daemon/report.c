/* SPDX-License-Identifier: MIT */
/*
 * Every phrasing of a run's progress and outcome, in one place: STATUS= for systemd, the summary
 * line on stdout, the journal record, the D-Bus State and the exit status. The volume id comes
 * first so that `systemctl status` of many instances reads as a list; a run that ended says how,
 * and what is left for the next one. Pure: formats a HydratorStatus.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "progress.h"
#include "log.h"
#include "report.h"
#include <ebs-hydrate/bus.h>

/* Unreadable ranges named in a line: enough to find them in the kernel log. */
#define REPORT_BAD_RANGES_SHOWN 3

const char *report_aws_nothing_cold(char *buf, size_t size, const AwsFindings *f) {
        const char *verdict = findings_verdict(f), *why = NULL;

        if (streq(verdict, EBS_HYDRATE_AWS_EMPTY))
                why = "created empty: nothing to hydrate";
        else if (streq(verdict, EBS_HYDRATE_AWS_FAST_RESTORED))
                why = "restored with fast snapshot restore: nothing is cold";
        else if (!streq(verdict, EBS_HYDRATE_AWS_INITIALIZED))
                return NULL;
        if (why)
                (void)snprintf(buf, size, "%s", why);
        else
                (void)snprintf(buf, size, "AWS completed its initialization%s%s%s",
                               f->initialization_type[0] ? " (" : "", f->initialization_type,
                               f->initialization_type[0] ? ")" : "");
        return buf;
}

bool report_aws_initializing(const AwsFindings *f) {
        return streq(findings_verdict(f), EBS_HYDRATE_AWS_INITIALIZING);
}

/* "provisioned rate 300 MiB/s: 42%, about 30min left" (what is known of it). */
static size_t aws_progress(char *buf, size_t size, const AwsFindings *f) {
        char eta[FORMAT_DURATION_MAX];
        size_t n = (size_t)snprintf(buf, size, "provisioned rate");

        if (n < size && f->initialization_rate > 0)
                n += (size_t)snprintf(buf + n, size - n, " %" PRId64 " MiB/s",
                                      f->initialization_rate);
        if (n < size && f->initialization_progress != FINDINGS_UNKNOWN)
                n += (size_t)snprintf(buf + n, size - n, ", %" PRId64 "%%",
                                      f->initialization_progress);
        if (n < size && f->initialization_eta != FINDINGS_UNKNOWN)
                n += (size_t)snprintf(
                        buf + n, size - n, ", about %s left",
                        format_duration(eta, sizeof(eta), (uint64_t)f->initialization_eta));
        return MIN(n, size);
}

char *report_aws_following(char *buf, size_t size, const char *key, const AwsFindings *f) {
        char what[REPORT_LINE_MAX];

        (void)aws_progress(what, sizeof(what), f);
        (void)snprintf(buf, size,
                       "%s: AWS initializes the volume (%s): reading its metadata and hot paths "
                       "only, then following AWS",
                       key, what);
        return buf;
}

char *report_aws_status(char *buf, size_t size, const char *key, const AwsFindings *f) {
        char what[REPORT_LINE_MAX];

        (void)aws_progress(what, sizeof(what), f);
        (void)snprintf(buf, size,
                       "%s: following AWS's initialization (%s); metadata and hot paths read", key,
                       what);
        return buf;
}

char *report_aws_noted(char *buf, size_t size, const char *key, const AwsFindings *f) {
        char eta[FORMAT_DURATION_MAX];
        size_t n;

        if (f->error[0]) {
                (void)snprintf(buf, size, "%s: AWS could not be asked (%s); hydrating without it",
                               key, f->error);
                return buf;
        }
        n = f->source == FINDINGS_SOURCE_COPY
                    ? (size_t)snprintf(buf, size, "%s: AWS: a copy of %s", key, f->source_volume_id)
            : f->source == FINDINGS_SOURCE_EMPTY
                    ? (size_t)snprintf(buf, size, "%s: AWS: created empty", key)
                    : (size_t)snprintf(buf, size, "%s: AWS: restored from %s", key, f->snapshot_id);
        if (n < size && f->initialization_state[0])
                n += (size_t)snprintf(buf + n, size - n, ", initialization %s%s%s",
                                      f->initialization_state, f->initialization_type[0] ? " " : "",
                                      f->initialization_type);
        if (n < size && f->initialization_progress != FINDINGS_UNKNOWN)
                n += (size_t)snprintf(buf + n, size - n, " %" PRId64 "%%",
                                      f->initialization_progress);
        if (n < size && f->initialization_eta != FINDINGS_UNKNOWN)
                n += (size_t)snprintf(
                        buf + n, size - n, ", about %s left",
                        format_duration(eta, sizeof(eta), (uint64_t)f->initialization_eta));
        if (n < size)
                (void)snprintf(buf + n, size - n, "; hydrating");
        return buf;
}

char *report_aws_completed(char *buf, size_t size, const char *key, const char *reason) {
        (void)snprintf(buf, size, "%s: complete without reading: %s (AWS)", key, reason);
        return buf;
}

const char *report_failure_reason(int error) {
        if (error == -ESTALE) /* the hydrator's word for a device that changed size */
                return "the device changed size during the run; the next run starts over";
        return strerror(error < 0 ? -error : EIO);
}

void report_record(const HydratorStatus *st, VolumeRecord *r) {
        /* The whole volume; what the snapshot stores nothing of counts as hydrated. */
        r->size_bytes = st->device_size;
        r->empty_bytes = st->plan.empty_bytes;
        r->hydrated_bytes = MIN(st->done_bytes + st->plan.empty_bytes, st->device_size);
        r->errors = st->n_bad;
        r->free_space_cold = false;
        r->fs_aware = st->plan.fs_aware;
        switch (st->phase) {
        case HYDRATOR_LOADED: /* mapping the file systems: the plan is not made yet */
                r->state = st->paused ? RECORD_PAUSED : RECORD_HYDRATING;
                r->phase = RECORD_PHASE_METADATA;
                return;
        case HYDRATOR_HYDRATING:
                r->state = st->paused ? RECORD_PAUSED : RECORD_HYDRATING;
                break;
        case HYDRATOR_COMPLETE:
                r->state = RECORD_COMPLETED;
                r->phase = RECORD_PHASE_DONE;
                r->free_space_cold = st->done_bytes < st->size; /* Mode=used */
                return;
        case HYDRATOR_UNREADABLE:
        case HYDRATOR_FAILED:
                r->state = RECORD_FAILED;
                break;
        default: /* stopped, detached: the next run resumes */
                r->state = RECORD_STOPPED;
                break;
        }
        r->phase = st->plan.current <= _PLAN_STAGE_MAX
                           ? (RecordPhase)st->plan.current /* same order: plan.c */
                           : RECORD_PHASE_METADATA;
}

uint64_t report_cold_free_bytes(const HydratorStatus *st) {
        if (!st->plan.skip_free)
                return 0;
        return st->plan.total_bytes[PLAN_STAGE_FREE] - st->plan.done_bytes[PLAN_STAGE_FREE];
}

/* ": 1-2, 3-4, 5-6 and 2 more" after what @buf holds (its first @n bytes). */
static size_t append_bad_ranges(char *buf, size_t size, size_t n, const HydratorStatus *st) {
        for (size_t i = 0; i < st->n_bad && i < REPORT_BAD_RANGES_SHOWN && n < size; i++)
                n += (size_t)snprintf(buf + n, size - n, "%s%" PRIu64 "-%" PRIu64,
                                      i == 0 ? ": " : ", ", st->bad[i].offset,
                                      st->bad[i].offset + st->bad[i].length - 1);
        if (st->n_bad > REPORT_BAD_RANGES_SHOWN && n < size)
                n += (size_t)snprintf(buf + n, size - n, " and %zu more",
                                      st->n_bad - REPORT_BAD_RANGES_SHOWN);
        return MIN(n, size > 0 ? size - 1 : 0);
}

/* "; metadata done, hot paths 63%, used 12%, free space next" after what @buf holds, when the
 * plan knows more than "the whole device is used". */
static void append_plan(char *buf, size_t size, const PlanProgress *pp) {
        size_t n = strlen(buf);
        char stages[PLAN_PROGRESS_FORMAT_MAX];

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

char *report_status(char *buf, size_t size, const HydratorStatus *st) {
        char total[FORMAT_BYTES_MAX];
        unsigned pm = progress_permille(st->done_bytes, st->size);
        char pmb[FORMAT_PERMILLE_MAX];

        format_bytes(total, sizeof(total), st->size);
        switch (st->phase) {
        case HYDRATOR_LOADED:
                snprintf(buf, size, "%s: %s%% hydrated (of %s), starting", st->key,
                         format_permille(pmb, pm), total);
                break;
        case HYDRATOR_HYDRATING:
                if (st->paused) {
                        snprintf(buf, size, "%s: paused at %s%% hydrated (of %s)", st->key,
                                 format_permille(pmb, pm), total);
                        break;
                }
                if (st->waiting_for_aio) {
                        snprintf(buf, size,
                                 "%s: %s%% hydrated (of %s); waiting for asynchronous I/O: "
                                 "fs.aio-max-nr is used up, trying again every %" PRIu64 " s",
                                 st->key, format_permille(pmb, pm), total,
                                 HYDRATOR_AIO_RETRY_USEC / USEC_PER_SEC);
                        break;
                }
                if (st->stalled_usec > 0) {
                        char done[FORMAT_BYTES_MAX];

                        snprintf(buf, size,
                                 "%s: %s%% hydrated (%s of %s); device stalled, no read "
                                 "completed for %" PRIu64 " s",
                                 st->key, format_permille(pmb, pm),
                                 format_bytes(done, sizeof(done), st->done_bytes), total,
                                 st->stalled_usec / USEC_PER_SEC);
                        break;
                }
                report_format_status(buf, size, st->key, st->done_bytes, st->size,
                                     st->plan.listed ? st->device_size : 0, st->rate);
                append_plan(buf, size, &st->plan);
                if (st->yielding) {
                        size_t n = strlen(buf);

                        (void)snprintf(buf + n, size - n, "; yielding to other I/O %s",
                                       st->yield_neighbours ? "on other volumes" : "on the volume");
                }
                break;
        case HYDRATOR_COMPLETE:
                if (format_used_complete(buf, size, st))
                        break;
                if (st->plan.listed) {
                        char volume[FORMAT_BYTES_MAX];

                        snprintf(buf, size, "%s: hydrated (%s stored in the snapshot; %s volume)",
                                 st->key, total,
                                 format_bytes(volume, sizeof(volume), st->device_size));
                } else
                        snprintf(buf, size, "%s: hydrated (%s)", st->key, total);
                break;
        case HYDRATOR_UNREADABLE: {
                size_t n = (size_t)snprintf(buf, size,
                                            "%s: finished, %s%% hydrated (of %s); %zu "
                                            "unreadable range%s (bytes)",
                                            st->key, format_permille(pmb, pm), total, st->n_bad,
                                            st->n_bad == 1 ? "" : "s");

                (void)append_bad_ranges(buf, size, MIN(n, size - 1), st);
                break;
        }
        case HYDRATOR_FAILED:
                snprintf(buf, size, "%s: failed at %s%% hydrated (of %s): %s; %s", st->key,
                         format_permille(pmb, pm), total, report_failure_reason(st->error),
                         st->unsaved ? "the state file could not be saved" : "progress saved");
                break;
        case HYDRATOR_DETACHED:
                snprintf(buf, size,
                         "%s: device detached at %s%% hydrated (of %s); progress saved, "
                         "resumes when it is back",
                         st->key, format_permille(pmb, pm), total);
                break;
        case HYDRATOR_STOPPED:
                if (st->stalled_usec > 0 && st->in_flight > 0) {
                        /* The kernel keeps the process until the device returns them. */
                        snprintf(buf, size,
                                 "%s: stopped at %s%% hydrated (of %s); progress saved; "
                                 "waiting for the stalled device to return %u read%s",
                                 st->key, format_permille(pmb, pm), total, st->in_flight,
                                 st->in_flight == 1 ? "" : "s");
                        break;
                }
                snprintf(buf, size, "%s: stopped at %s%% hydrated (of %s); progress saved", st->key,
                         format_permille(pmb, pm), total);
                break;
        }
        return buf;
}

char *report_status_mapping(char *buf, size_t size, const HydratorStatus *st,
                            uint64_t stalled_usec) {
        char total[FORMAT_BYTES_MAX];
        unsigned pm = progress_permille(st->done_bytes, st->size);
        char pmb[FORMAT_PERMILLE_MAX];

        format_bytes(total, sizeof(total), st->size);
        if (st->phase == HYDRATOR_STOPPED && st->run_bytes == 0)
                snprintf(buf, size, "%s: stopped while mapping the file systems, nothing read%s",
                         st->key, stalled_usec > 0 ? "; waiting for the stalled device" : "");
        else if (st->phase == HYDRATOR_STOPPED)
                snprintf(buf, size,
                         "%s: stopped at %s%% hydrated (of %s) while mapping the file systems; "
                         "progress saved%s",
                         st->key, format_permille(pmb, pm), total,
                         stalled_usec > 0 ? "; waiting for the stalled device" : "");
        else if (stalled_usec > 0)
                snprintf(buf, size,
                         "%s: %s%% hydrated (of %s), mapping the file systems; device stalled, "
                         "no read completed for %" PRIu64 " s",
                         st->key, format_permille(pmb, pm), total, stalled_usec / USEC_PER_SEC);
        else
                snprintf(buf, size, "%s: %s%s%% hydrated (of %s), mapping the file systems",
                         st->key, st->paused ? "paused at " : "", format_permille(pmb, pm), total);
        return buf;
}

char *report_summary(char *buf, size_t size, const HydratorStatus *st) {
        char total[FORMAT_BYTES_MAX], read[FORMAT_BYTES_MAX], rate[FORMAT_RATE_MAX];
        double secs = (double)st->run_usec / (double)USEC_PER_SEC;
        size_t n;

        format_bytes(read, sizeof(read), st->run_bytes);
        format_rate(rate, sizeof(rate), secs > 0 ? (uint64_t)((double)st->run_bytes / secs) : 0);
        if (st->phase == HYDRATOR_COMPLETE && report_cold_free_bytes(st) > 0) {
                char used[FORMAT_BYTES_MAX], cold[FORMAT_BYTES_MAX];

                snprintf(buf, size,
                         "%s: hydrated %s of used blocks; %s free space left cold (Mode=used); "
                         "read %s in %.1f s (%s average)",
                         st->key,
                         format_bytes(used, sizeof(used),
                                      st->size - st->plan.total_bytes[PLAN_STAGE_FREE]),
                         format_bytes(cold, sizeof(cold), report_cold_free_bytes(st)), read, secs,
                         rate);
                return buf;
        }
        /* With a block list the reads cover whole read units around 512 KiB blocks, so they
         * may exceed what is stored ("read 41.0 MiB of 40.0 MiB"): the stored total is said
         * after, on its own. */
        format_bytes(total, sizeof(total), st->size);
        n = (size_t)snprintf(buf, size, "%s: %s %s%s%s in %.1f s (%s average)", st->key,
                             st->phase == HYDRATOR_COMPLETE     ? "hydrated, read"
                             : st->phase == HYDRATOR_UNREADABLE ? "finished with unreadable "
                                                                  "ranges, read"
                             : st->phase == HYDRATOR_FAILED     ? "failed after reading"
                                                                : "stopped after reading",
                             read, st->plan.listed ? "" : " of ", st->plan.listed ? "" : total,
                             secs, rate);
        n = MIN(n, size - 1);
        if (st->plan.listed) {
                char volume[FORMAT_BYTES_MAX];

                n += (size_t)snprintf(buf + n, size - n,
                                      "; %s stored in the snapshot, the rest of the %s volume "
                                      "left unread (empty)",
                                      total, format_bytes(volume, sizeof(volume), st->device_size));
                n = MIN(n, size - 1);
        }
        if (st->phase == HYDRATOR_FAILED) {
                /* Not "N% hydrated": what was read but could not be saved is read again. */
                n += (size_t)snprintf(buf + n, size - n, ": %s%s", report_failure_reason(st->error),
                                      st->unsaved ? "; the state file could not be saved, the "
                                                    "next run resumes from the last checkpoint "
                                                    "written"
                                                  : "");
        } else if (st->phase != HYDRATOR_COMPLETE) {
                unsigned pm = progress_permille(st->done_bytes, st->size);
                char pmb[FORMAT_PERMILLE_MAX];

                n += (size_t)snprintf(buf + n, size - n, ", %s%% hydrated",
                                      format_permille(pmb, pm));
        }
        n = MIN(n, size - 1);
        if (st->plan.mapping && st->phase != HYDRATOR_COMPLETE)
                n += (size_t)snprintf(buf + n, size - n, ", while mapping the file systems");
        n = MIN(n, size - 1);
        if (st->n_bad > 0) {
                n += (size_t)snprintf(buf + n, size - n, "; %zu unreadable range%s (bytes)",
                                      st->n_bad, st->n_bad == 1 ? "" : "s");
                (void)append_bad_ranges(buf, size, MIN(n, size - 1), st);
        }
        return buf;
}

int report_journal(char *buf, size_t size, const HydratorStatus *st, const char *devnode,
                   const char **ret_message_id) {
        char total[FORMAT_BYTES_MAX];
        unsigned pm = progress_permille(st->done_bytes, st->size);
        char pmb[FORMAT_PERMILLE_MAX];
        size_t n;

        format_bytes(total, sizeof(total), st->size);
        switch (st->phase) {
        case HYDRATOR_COMPLETE:
                *ret_message_id = LOG_MESSAGE_HYDRATION_COMPLETE;
                if (report_cold_free_bytes(st) > 0) {
                        char cold[FORMAT_BYTES_MAX];

                        snprintf(buf, size,
                                 "%s (%s): hydration complete, all used blocks read; %s free "
                                 "space left cold (Mode=used)",
                                 st->key, devnode,
                                 format_bytes(cold, sizeof(cold), report_cold_free_bytes(st)));
                        return LOG_INFO;
                }
                snprintf(buf, size, "%s (%s): hydration complete, all %s read", st->key, devnode,
                         total);
                return LOG_INFO;
        case HYDRATOR_UNREADABLE:
                *ret_message_id = LOG_MESSAGE_HYDRATION_UNREADABLE;
                n = (size_t)snprintf(buf, size,
                                     "%s (%s): hydration finished with %zu unreadable range%s "
                                     "(bytes)",
                                     st->key, devnode, st->n_bad, st->n_bad == 1 ? "" : "s");
                (void)append_bad_ranges(buf, size, MIN(n, size - 1), st);
                return LOG_WARNING;
        case HYDRATOR_FAILED:
                *ret_message_id = LOG_MESSAGE_HYDRATION_FAILED;
                snprintf(buf, size, "%s (%s): hydration failed at %s%%: %s; %s", st->key, devnode,
                         format_permille(pmb, pm), report_failure_reason(st->error),
                         st->unsaved ? "the state file could not be saved; the next run "
                                       "resumes from the last checkpoint written"
                                     : "progress saved");
                return LOG_ERR;
        default: /* stopped or detached: said by the log lines that stopped it */
                return -ENODATA;
        }
}

int report_exit_status(const HydratorStatus *st) {
        switch (st->phase) {
        case HYDRATOR_COMPLETE:
                return EBS_HYDRATE_EXIT_SUCCESS;
        case HYDRATOR_UNREADABLE:
                return EBS_HYDRATE_EXIT_UNREADABLE;
        case HYDRATOR_DETACHED:
                return EBS_HYDRATE_EXIT_DETACHED;
        default:
                return EBS_HYDRATE_EXIT_FAILURE;
        }
}

int report_exit_status_errno(int error) {
        assert(error < 0);
        switch (-error) {
        case EIO:
        case ENOSPC:
        case EDQUOT:
        case EROFS:
        case ENOMEM:
        case EMFILE:
        case ENFILE:
        case EBUSY:
        case EAGAIN:
        case EINTR:
        case ETIMEDOUT:
                return EBS_HYDRATE_EXIT_FAILURE;
        default:
                return EBS_HYDRATE_EXIT_USAGE;
        }
}

const char *report_bus_state(const HydratorStatus *st) {
        switch (st->phase) {
        case HYDRATOR_LOADED: /* mapping the file systems */
        case HYDRATOR_HYDRATING:
                return st->paused ? EBS_HYDRATE_STATE_PAUSED : EBS_HYDRATE_STATE_HYDRATING;
        case HYDRATOR_COMPLETE:
                return EBS_HYDRATE_STATE_COMPLETED;
        case HYDRATOR_STOPPED:
        case HYDRATOR_DETACHED:
                return EBS_HYDRATE_STATE_PAUSED;
        default:
                return EBS_HYDRATE_STATE_FAILED;
        }
}

char *report_started(char *buf, size_t size, const HydratorStatus *st, const char *key,
                     const char *devnode, const HydrateSettings *s) {
        char depth[REPORT_WORDS_MAX], pmb[FORMAT_PERMILLE_MAX];

        if (s->queue_depth == HYDRATE_QUEUE_DEPTH_AUTO)
                (void)snprintf(depth, sizeof(depth), "auto (%u to %u)", st->depth_min,
                               st->depth_max);
        else
                (void)snprintf(depth, sizeof(depth), "%u", s->queue_depth);
        (void)snprintf(
                buf, size,
                "Hydrating %s (%s) from %s%%, queue depth %s, %" PRIu64 " KiB reads%s%s%s", devnode,
                key, format_permille(pmb, progress_permille(st->done_bytes, st->size)), depth,
                st->request_bytes / 1024, s->rate_limit ? ", rate limited" : "",
                s->mode == HYDRATE_MODE_USED ? ", Mode=used" : "", s->yield ? "" : ", Yield=no");
        return buf;
}

char *report_start_failed(char *buf, size_t size, const HydratorStatus *st, const char *key,
                          const char *devnode, int error) {
        char pmb[FORMAT_PERMILLE_MAX];

        (void)snprintf(buf, size,
                       "%s (%s): hydration failed at %s%%: cannot start: %s; progress saved", key,
                       devnode, format_permille(pmb, progress_permille(st->done_bytes, st->size)),
                       strerror(-error));
        return buf;
}

char *report_stopped_mapping(char *buf, size_t size, const char *key, bool for_status,
                             bool stalled) {
        if (for_status)
                (void)snprintf(buf, size,
                               "%s: stopped while mapping the file systems, nothing read%s", key,
                               stalled ? "; waiting for the stalled device" : "");
        else
                (void)snprintf(buf, size,
                               "%s: stopped while mapping the file systems, before reading; "
                               "nothing to save",
                               key);
        return buf;
}

char *report_depth_at_end(char *buf, size_t size, const HydratorStatus *st) {
        (void)snprintf(buf, size,
                       "%s: queue depth %u at the end (auto, %u changes; mean latency "
                       "%.1f ms)",
                       st->key, st->depth, st->depth_changes, (double)st->latency_usec / 1000.0);
        return buf;
}
