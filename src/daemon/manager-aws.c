/* SPDX-License-Identifier: MIT */
/*
 * What AWS said about the volume (ebs-hydrate/findings.h), as ebs-hydrate-aws leaves it in its
 * directory: looked at when the run starts and once a second after (the file is replaced
 * whole, and the directory may appear only after us), never waited for. When it says nothing
 * is cold (created empty, fast snapshot restore, AWS's initialization completed) the run
 * completes without reading more. When AWS initializes the volume itself (a provisioned rate) the
 * run reads the metadata and hot paths, then follows AWS (hydrator_hold_after()) until AWS says
 * it is done, or goes back to reading when AWS cannot be heard. Otherwise it is said once in the
 * journal and the run goes on.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "blocklist.h"
#include "build-config.h"
#include "findings.h"
#include "log.h"
#include "parse.h"
#include "manager-internal.h"
#include "report.h"
#include "time-util.h"

#define AWS_CHECK_INTERVAL_USEC (1 * USEC_PER_SEC)
#define AWS_FOLLOW_STALE_USEC (15 * 60 * USEC_PER_SEC)
#define AWS_FOLLOW_STALE_WORDS "15 minutes"
#define AWS_FOLLOW_FUTURE_USEC (5 * 60 * USEC_PER_SEC)
/* How long the data after the metadata and hot paths waits for the helper's first word, when
 * its directory is there: on EC2 it answers within about a second (IMDS, DescribeVolumes). */
#define AWS_FIRST_WORD_USEC (3 * USEC_PER_SEC)

/* Whether the file changed since it was last read (a new file is a new inode or time). */
static bool findings_changed(Manager *run, int dir_fd) {
        char name[STATE_KEY_MAX + sizeof(FINDINGS_SUFFIX)];
        struct stat st;

        (void)snprintf(name, sizeof(name), "%s%s", run->key, FINDINGS_SUFFIX);
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return false;
        if (st.st_ino == run->aws_ino && st.st_mtim.tv_sec == run->aws_mtime.tv_sec &&
            st.st_mtim.tv_nsec == run->aws_mtime.tv_nsec && st.st_size == run->aws_size)
                return false;
        run->aws_ino = st.st_ino;
        run->aws_mtime = st.st_mtim;
        run->aws_size = st.st_size;
        return true;
}

/* No stage after the hot paths is read: AWS fetches the rest. */
static void follow(Manager *run) {
        char line[REPORT_LINE_MAX];

        if (!run->aws_following) {
                AwsFindings f;

                manager_aws_now(run, &f);
                log_info("%s", report_aws_following(line, sizeof(line), run->key, &f));
        }
        run->aws_following = true;
        hydrator_hold_after(run->hydrator, PLAN_STAGE_HOT);
}

/* AWS no longer initializes the volume, or cannot be heard: it is ours to read again. */
static void unfollow(Manager *run, const char *why) {
        if (!run->aws_following)
                return;
        log_warning("%s: no longer following AWS's initialization (%s): hydrating", run->key, why);
        run->aws_following = false;
        hydrator_hold_after(run->hydrator, _PLAN_STAGE_MAX);
}

/* The helper rewrites its findings at every answer while AWS initializes the volume: findings
 * older than this say the helper stopped asking, and the run does not wait on them for ever. */
static bool findings_stale(const AwsFindings *f) {
        uint64_t now = now_usec(CLOCK_REALTIME);

        /* a time ahead of ours is no fresher: it would hold the run past the helper's end */
        return f->time_usec + AWS_FOLLOW_STALE_USEC < now ||
               f->time_usec > now + AWS_FOLLOW_FUTURE_USEC;
}

/* No new findings for AWS_FOLLOW_STALE_USEC since the last, on the monotonic clock: the
 * helper stopped, whatever the wall clock did meanwhile. */
static bool helper_silent(const Manager *run) {
        return now_usec(CLOCK_MONOTONIC) - run->aws_seen_usec > AWS_FOLLOW_STALE_USEC;
}

typedef struct StoredRuns {
        const Hydrator *hydrator;
        uint64_t *empty; /* hydrator_empty_new() */
} StoredRuns;

static int on_stored_run(uint64_t first, uint64_t count, void *userdata) {
        StoredRuns *s = userdata;

        hydrator_empty_stored(s->hydrator, s->empty, first, count);
        return 0;
}

/*
 * The snapshot's block list, once the findings vouch for it (the same snapshot, the same count
 * stored): the chunks it stores nothing of are never read. Said once either way; a list that
 * cannot be believed leaves the plan as it is (every block read).
 */
static void take_block_list(Manager *run, int dir_fd, const AwsFindings *f) {
        char stored[FORMAT_BYTES_MAX], volume[FORMAT_BYTES_MAX];
        StoredRuns runs = {.hydrator = run->hydrator};
        BlockListInfo info;
        int r;

        if (run->aws_blocks_taken || f->error[0] || f->source != FINDINGS_SOURCE_SNAPSHOT)
                return;
        if (f->blocks_error[0]) {
                run->aws_blocks_taken = true;
                log_info("%s: the snapshot's block list could not be had (%s): every block is "
                         "read",
                         run->key, f->blocks_error);
                return;
        }
        if (f->blocks_stored == FINDINGS_UNKNOWN)
                return; /* not listed yet */
        run->aws_blocks_taken = true;
        r = hydrator_empty_new(run->hydrator, &runs.empty);
        if (r < 0) {
                log_warning_errno(r,
                                  "%s: no memory for the snapshot's block list (%m): every "
                                  "block is read",
                                  run->key);
                return;
        }
        r = blocklist_load(dir_fd, run->key, run->aws_uid, &info, on_stored_run, &runs);
        if (r >= 0 && (!streq(info.snapshot_id, f->snapshot_id) ||
                       (int64_t)info.n_stored != f->blocks_stored))
                r = -ESTALE;
        if (r < 0) {
                log_warning("%s: ignoring %s/%s%s: %s; every block is read", run->key,
                            findings_dir(), run->key, BLOCKLIST_SUFFIX,
                            r == -EPERM
                                    ? "owned by another user than root and " EBS_HYDRATE_AWS_USER
                            : r == -ESTALE ? "not the list of the findings' snapshot"
                            : r == -ENOENT ? "missing"
                                           : "not a valid block list");
                free(runs.empty);
                return;
        }
        log_info("%s: snapshot %s stores %s of the volume's %s: reading only those blocks",
                 run->key, info.snapshot_id,
                 format_bytes(stored, sizeof(stored), info.n_stored * BLOCKLIST_BLOCK_SIZE),
                 format_bytes(volume, sizeof(volume), run->dev->size));
        hydrator_set_empty(run->hydrator, runs.empty);
}

/* The helper will list the snapshot's blocks: a volume from a snapshot that it will read. */
static bool blocks_to_come(const AwsFindings *f) {
        const char *v = findings_verdict(f);

        return f->source == FINDINGS_SOURCE_SNAPSHOT && f->blocks_stored == FINDINGS_UNKNOWN &&
               !f->blocks_error[0] &&
               (streq(v, EBS_HYDRATE_AWS_SNAPSHOT) || streq(v, EBS_HYDRATE_AWS_INITIALIZING));
}

static int check(Manager *run) {
        char line[REPORT_LINE_MAX], why[REPORT_LINE_MAX];
        _cleanup_close_ int dir_fd = -1;
        AwsFindings f;
        const char *reason;
        int r;

        if (!run->settings->aws || run->aws_reason)
                return 0;
        dir_fd = open(findings_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0 || !findings_changed(run, dir_fd)) {
                /* after a look for new findings: a late answer is not taken for silence */
                if (run->aws_following && helper_silent(run))
                        unfollow(run, "no word from ebs-hydrate-aws for " AWS_FOLLOW_STALE_WORDS);
                return 0;
        }
        r = findings_load(dir_fd, run->key, run->aws_uid, &f);
        if (r == -ENOENT)
                return 0;
        /* Whatever it is worth; a snapshot's findings without the block list yet are not the
         * word the data waits for: the helper lists the blocks next. */
        run->aws_answered = r < 0 || !blocks_to_come(&f);
        if (r < 0) {
                log_warning("%s: ignoring %s/%s%s: %s", run->key, findings_dir(), run->key,
                            FINDINGS_SUFFIX,
                            r == -EPERM
                                    ? "owned by another user than root and " EBS_HYDRATE_AWS_USER
                                    : "not a valid findings file");
                unfollow(run, "its findings cannot be believed");
                return 0;
        }
        run->aws = f;
        run->aws_known = true;
        run->aws_seen_usec = now_usec(CLOCK_MONOTONIC);
        reason = report_aws_nothing_cold(run->aws_reason_buf, sizeof(run->aws_reason_buf), &f);
        if (reason) {
                r = hydrator_complete_without_reading(run->hydrator);
                if (r == -ESTALE) /* the run ended meanwhile: what it says stands */
                        return 0;
                if (r < 0)
                        return log_error_errno(r,
                                               "%s: AWS says %s, but the checkpoint cannot say "
                                               "so: %m",
                                               run->key, reason);
                run->aws_reason = reason;
                return 1;
        }
        take_block_list(run, dir_fd, &f);
        if (report_aws_initializing(&f) && !findings_stale(&f)) {
                follow(run);
                return 0;
        }
        if (run->aws_following) {
                if (f.error[0])
                        (void)snprintf(why, sizeof(why), "AWS could not be asked: %s", f.error);
                else if (f.status_error[0])
                        (void)snprintf(why, sizeof(why), "its status could not be had: %s",
                                       f.status_error);
                else if (findings_stale(&f))
                        (void)snprintf(why, sizeof(why),
                                       "AWS's answer is older than " AWS_FOLLOW_STALE_WORDS
                                       ", or dated ahead of this host's clock");
                else
                        (void)snprintf(why, sizeof(why), "its initialization is %s%s%s",
                                       f.initialization_state[0] ? f.initialization_state
                                                                 : "not reported",
                                       f.initialization_type[0] ? ", " : "", f.initialization_type);
                unfollow(run, why);
                return 0;
        }
        /* once: the helper rewrites its findings (with the block list, when following) */
        report_aws_noted(line, sizeof(line), run->key, &f);
        if (!streq(line, run->aws_noted)) {
                log_info("%s", line);
                (void)snprintf(run->aws_noted, sizeof(run->aws_noted), "%s", line);
        }
        return 0;
}

/* The helper has said something, or the wait for its first word is over: the data after the
 * metadata and hot paths is read (unless the run follows AWS's own initialization). */
static void end_wait(Manager *run) {
        if (!run->aws_awaiting ||
            (!run->aws_answered && now_usec(CLOCK_MONOTONIC) < run->aws_await_until))
                return;
        run->aws_awaiting = false;
        if (!run->aws_answered && run->aws_known)
                log_info("%s: the snapshot's block list not there within %" PRIu64 " s: "
                         "hydrating until it comes",
                         run->key, AWS_FIRST_WORD_USEC / USEC_PER_SEC);
        else if (!run->aws_answered)
                log_info("%s: no word from ebs-hydrate-aws within %" PRIu64 " s: hydrating "
                         "without it",
                         run->key, AWS_FIRST_WORD_USEC / USEC_PER_SEC);
        if (!run->aws_following && !run->aws_reason)
                hydrator_hold_after(run->hydrator, _PLAN_STAGE_MAX);
}

int manager_aws_check(Manager *run) {
        int r = check(run);

        end_wait(run);
        return r;
}

static void watch_directory(Manager *run);

static int on_aws_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *run = userdata;

        (void)manager_aws_check(run);
        if (run->aws_reason)
                return 0; /* on_finished() ends the loop */
        watch_directory(run);
        (void)sd_event_source_set_time(s, usec + AWS_CHECK_INTERVAL_USEC);
        return 0;
}

/* A findings file renamed into place or written: looked at now, not at the next second. */
static int on_aws_inotify(sd_event_source *s, const struct inotify_event *e, void *userdata) {
        Manager *run = userdata;

        (void)s;
        (void)e;
        (void)manager_aws_check(run);
        return 0;
}

/* The watch, once the directory exists: the helper's unit creates it, often just after us. */
static void watch_directory(Manager *run) {
        if (run->aws_inotify)
                return;
        if (sd_event_add_inotify(run->event, &run->aws_inotify, findings_dir(),
                                 IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR, on_aws_inotify,
                                 run) < 0)
                run->aws_inotify = NULL;
}

int manager_aws_watch(Manager *run) {
        uint64_t now;
        int r;

        if (!run->settings->aws || run->aws_reason)
                return 0;
        (void)sd_event_now(run->event, CLOCK_MONOTONIC, &now);
        /* The helper's unit is there (its directory is) and has not answered yet: the
         * metadata and hot paths are read at once, the rest waits a moment for its word (a
         * volume created empty, or the snapshot's block list, is then not read for nothing). */
        if (!run->aws_answered && access(findings_dir(), F_OK) == 0) {
                run->aws_awaiting = true;
                run->aws_await_until = now_usec(CLOCK_MONOTONIC) + AWS_FIRST_WORD_USEC;
                hydrator_hold_after(run->hydrator, PLAN_STAGE_HOT);
        }
        r = sd_event_add_time(run->event, &run->aws_timer, CLOCK_MONOTONIC,
                              now + AWS_CHECK_INTERVAL_USEC, USEC_PER_SEC / 10, on_aws_timer, run);
        if (r >= 0) /* again and again, each time from its own deadline (on_aws_timer()) */
                r = sd_event_source_set_enabled(run->aws_timer, SD_EVENT_ON);
        /* At once when the helper answers; the timer stays for a directory that appears only
         * later (the helper's unit creates it: the timer then adds the watch), and for the
         * silence it measures. */
        if (r >= 0)
                watch_directory(run);
        return r < 0 ? log_error_errno(r, "Failed to watch for AWS's findings: %m") : 0;
}

void manager_aws_record(const Manager *run, VolumeRecord *r) {
        const AwsFindings *f = &run->aws;
        const char *verdict;

        if (!run->aws_known || !run->settings->aws) {
                r->aws[0] = r->aws_snapshot_id[0] = '\0';
                r->aws_progress = r->aws_eta_seconds = -1;
                return;
        }
        verdict = findings_verdict(f);
        /* "initializing" says the run follows AWS: not after it stopped, nor if it never did */
        if (streq(verdict, EBS_HYDRATE_AWS_INITIALIZING) && !run->aws_following)
                verdict = EBS_HYDRATE_AWS_SNAPSHOT;
        (void)snprintf(r->aws, sizeof(r->aws), "%s", verdict);
        manager_set_record_word(r->aws_snapshot_id, sizeof(r->aws_snapshot_id), f->snapshot_id);
        r->aws_progress = f->initialization_progress >= 0 && f->initialization_progress <= 100
                                  ? f->initialization_progress
                                  : -1;
        r->aws_eta_seconds = findings_eta_at(f, now_usec(CLOCK_REALTIME));
}

void manager_aws_now(const Manager *run, AwsFindings *ret) {
        *ret = run->aws;
        ret->initialization_eta = findings_eta_at(ret, now_usec(CLOCK_REALTIME));
}

void manager_aws_init(Manager *run) {
        run->aws_uid = findings_helper_uid();
}

/* Whether stdout is the open file stderr is (one terminal, one pipe, the journal's socket): the
 * log line already went there. */
static bool stdout_is_stderr(void) {
        struct stat out, err;

        return fstat(STDOUT_FILENO, &out) == 0 && fstat(STDERR_FILENO, &err) == 0 &&
               out.st_dev == err.st_dev && out.st_ino == err.st_ino;
}

/* The outcome is one line, said once wherever it goes: the log's record (the journal's, with
 * its MESSAGE_ID), and stdout unless the record went to the same place (under systemd both are
 * the journal; by hand, 2>&1 or one terminal). */
int manager_completed_by_aws(Manager *run) {
        char line[REPORT_LINE_MAX];

        manager_publish_record(run, RECORD_COMPLETED);
        report_aws_completed(line, sizeof(line), run->key, run->aws_reason);
        (void)sd_notifyf(false, "READY=1\nSTATUS=%s", line);
        log_volume(LOG_INFO, LOG_MESSAGE_HYDRATION_COMPLETE, run->key, run->devnode, "%s", line);
        if (!log_enabled(LOG_INFO) || !stdout_is_stderr())
                (void)output_printf(STDOUT_FILENO, "%s\n", line);
        return EBS_HYDRATE_EXIT_SUCCESS;
}
