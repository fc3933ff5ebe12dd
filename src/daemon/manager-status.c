/* SPDX-License-Identifier: MIT */
/*
 * How one run reports while it goes: the progress bar, STATUS= and the volume record
 * (manager-internal.h). The words are report.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"
#include "manager-internal.h"
#include "run-inputs.h"
#include "progress.h"
#include "report.h"

static unsigned terminal_width(void) {
        struct winsize ws;

        if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
                return ws.ws_col; /* however narrow: report_format_bar() fits itself to it */
        return 80;
}

void manager_draw_bar(Manager *run) {
        HydratorStatus st;
        char line[REPORT_LINE_MAX];

        if (!run->bar)
                return;
        hydrator_get_status(run->hydrator, &st);
        if (st.phase != HYDRATOR_HYDRATING && st.run_usec > 0) /* the last frame: the average */
                st.rate = (uint64_t)((double)st.run_bytes * (double)USEC_PER_SEC /
                                     (double)st.run_usec);
        report_format_bar(line, sizeof(line), terminal_width() - 1, st.done_bytes, st.size,
                          st.rate);
        (void)output_printf(STDERR_FILENO, "\r\033[K%s", line);
        output_bar_drawn(true);
        run->bar_drawn = true;
}

void manager_clear_bar(Manager *run) {
        if (run->bar_drawn)
                (void)output_write(STDERR_FILENO, "\r\033[K", 4);
        output_bar_drawn(false);
        run->bar_drawn = false;
}

int manager_on_bar_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_draw_bar(userdata);
        (void)sd_event_source_set_time(s, usec + 500 * USEC_PER_MSEC);
        return 0;
}

/* Copies @s if it is a record word (printable ASCII, no space, fits), else leaves "". */
void manager_set_record_word(char *dst, size_t size, const char *s) {
        size_t len = strlen(strempty(s));

        dst[0] = '\0';
        for (size_t i = 0; i < len; i++)
                if (s[i] <= ' ' || s[i] > '~')
                        return;
        if (len < size)
                memcpy(dst, s, len + 1);
}

/*
 * Writes the volume record when what it says has changed: the hydrator's status, with the state
 * @forced instead unless it is _RECORD_STATE_INVALID. A failure is said once: waiters then wait
 * for the next run, and the hydration goes on.
 */
void manager_publish_record(Manager *run, RecordState forced) {
        VolumeRecord r = run->record;
        char text[RECORD_FILE_MAX];
        HydratorStatus st;
        int e;

        if (run->runtime_fd < 0)
                return;
        if (run->hydrator) {
                hydrator_get_status(run->hydrator, &st);
                report_record(&st, &r);
        }
        manager_aws_record(run, &r);
        hydrate_bus_set_aws(run->bus, &r);
        if (forced != _RECORD_STATE_INVALID)
                r.state = forced;
        if (forced == RECORD_COMPLETED) { /* by the state alone: "already hydrated" */
                r.phase = RECORD_PHASE_DONE;
                r.free_space_cold = r.hydrated_bytes < r.size_bytes; /* Mode=used */
        }
        if (record_format(&r, text, sizeof(text)) < 0)
                return;
        if (streq_ptr(text, run->record_text)) { /* what is there says it: an older failure
                                                  * must not be tried over it */
                run->record_unsaved = false;
                return;
        }
        e = record_save(run->runtime_fd, &r);
        if (e == -ENOENT) { /* the directory was removed (or replaced) under us: open it again */
                (void)close(run->runtime_fd);
                run->runtime_fd = inputs_runtime_dir(NULL);
                e = run->runtime_fd < 0 ? run->runtime_fd : record_save(run->runtime_fd, &r);
        }
        if (e < 0) {
                if (!run->record_failed)
                        log_warning_errno(e,
                                          "%s: cannot write its volume record (%m): "
                                          "ebs-hydratectl wait does not see this run; trying "
                                          "again as it goes",
                                          r.volume_id);
                run->record_failed = true;
                run->record_unsaved = true;
                run->record_last = r;
                return;
        }
        memcpy(run->record_text, text, sizeof(text));
        run->record_unsaved = false;
}

void manager_settle_record(Manager *run) {
        const VolumeRecord *r = &run->record_last;
        char name[STATE_KEY_MAX + sizeof(RECORD_SUFFIX)];
        int e;

        if (!run->record_unsaved || run->runtime_fd < 0)
                return;
        e = record_save(run->runtime_fd, r);
        if (e >= 0) {
                log_info("%s: volume record written at last", r->volume_id);
                return;
        }
        /* A full file system: the old record's blocks are still ours. */
        e = record_rewrite_in_place(run->runtime_fd, r);
        if (e >= 0) {
                log_warning("%s: volume record written over the old one in place (a new one "
                            "could not be: %s)",
                            r->volume_id, "no space in the runtime directory's file system");
                return;
        }
        if (e == -ESTALE) /* not this run's: another run's, or none */
                return;
        (void)snprintf(name, sizeof(name), "%s%s", r->volume_id, RECORD_SUFFIX);
        if (unlinkat(run->runtime_fd, name, 0) < 0 && errno != ENOENT) {
                log_error_errno(-errno,
                                "%s: cannot write its volume record, nor remove the old one "
                                "(%m): it says the run goes on, which has ended",
                                r->volume_id);
                return;
        }
        log_error("%s: cannot write its volume record (%s full): removed the old one, which "
                  "said the run goes on; waiters go by the state file (root) or the next run",
                  r->volume_id, run->runtime_dir ? run->runtime_dir : "the runtime directory");
}

void manager_notify_status(Manager *run) {
        HydratorStatus st;
        char line[REPORT_LINE_MAX];

        hydrator_get_status(run->hydrator, &st);
        if (st.plan.mapping && st.phase != HYDRATOR_FAILED && st.phase != HYDRATOR_DETACHED &&
            st.phase != HYDRATOR_UNREADABLE)
                report_status_mapping(line, sizeof(line), &st,
                                      MAX(discovery_stalled_usec(run->discovery),
                                          st.in_flight > 0 || st.phase == HYDRATOR_HYDRATING
                                                  ? st.stalled_usec
                                                  : 0));
        else if (run->aws_following && st.phase == HYDRATOR_HYDRATING &&
                 st.plan.current > st.hold_after) {
                AwsFindings f;

                manager_aws_now(run, &f);
                report_aws_status(line, sizeof(line), run->key, &f);
        } else {
                report_status(line, sizeof(line), &st);
                if (run->aws_awaiting && st.phase == HYDRATOR_HYDRATING &&
                    st.plan.current > st.hold_after) {
                        size_t n = strlen(line);

                        (void)snprintf(line + n, sizeof(line) - n,
                                       "; waiting a moment for AWS's word before the data");
                }
        }
        (void)sd_notifyf(false, "STATUS=%s", line);
        manager_publish_record(run, _RECORD_STATE_INVALID);
        run->last_plan = st.plan;
}

int manager_on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_notify_status(userdata);
        (void)sd_event_source_set_time(s, usec + STATUS_INTERVAL_USEC);
        return 0;
}

/* A phase reached is told at once, not at the next status period: ebs-hydratectl wait follows
 * the record. */
int manager_on_phase_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *run = userdata;
        HydratorStatus st;

        hydrator_get_status(run->hydrator, &st);
        if (st.plan.current != run->last_plan.current ||
            st.plan.mapping != run->last_plan.mapping ||
            st.plan.hot_pending != run->last_plan.hot_pending)
                manager_notify_status(run);
        (void)sd_event_source_set_time(s, usec + PHASE_WATCH_USEC);
        return 0;
}
