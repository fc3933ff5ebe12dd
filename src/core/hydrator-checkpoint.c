/* SPDX-License-Identifier: MIT */
/*
 * The hydrator's checkpoint: loading the state file (or starting afresh, setting aside one that
 * cannot be trusted), and saving it on a timer, after each step of progress and at the end,
 * with failures to save said once, then at most once a minute. Active time is counted here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hydrator-internal.h"
#include "log.h"
#include "time-util.h"
#include "util.h"

static int fresh_state(Hydrator *h, const char *key) {
        const BlockDevice *d = h->dev;
        int r;

        r = state_new(&h->state, key, d->size, d->logical_block_size, chunk_size_for(d->size));
        if (r < 0)
                return log_error_errno(r, "Failed to create state for %s: %m", key);
        h->state->created_usec = now_usec(CLOCK_REALTIME);
        return 0;
}

static void set_aside(Hydrator *h, const char *key, const char *why, const char *what) {
        _cleanup_free_ char *aside = NULL;
        int r;

        r = state_set_aside(h->state_dir_fd, key, why, &aside);
        if (r < 0)
                log_warning_errno(r,
                                  "State file %s.state %s, and it cannot be set aside (%m); "
                                  "it will be overwritten",
                                  key, what);
        else
                log_warning("State file %s.state %s: kept as %s, starting over", key, what, aside);
}

int hydrator_load_state(Hydrator *h, const char *key) {
        const char *why;
        int r;

        r = state_load(h->state_dir_fd, key, &h->state);
        if (r == -ENOENT)
                return fresh_state(h, key);
        if (r == -ELOOP) { /* the link itself is renamed; its target is never touched */
                set_aside(h, key, "symlink", "is a symbolic link, not a state file");
                return fresh_state(h, key);
        }
        if (r == -EPERM) { /* not written by us: whoever wrote it could make it say "complete" */
                char what[sizeof("is owned by another user than uid ") + DECIMAL_STR_MAX(uid_t)];

                (void)snprintf(what, sizeof(what), "is owned by another user than uid %u",
                               (unsigned)geteuid());
                set_aside(h, key, "foreign", what);
                return fresh_state(h, key);
        }
        if (r == -EFBIG) {
                set_aside(h, key, "oversize", "is too large to be a state file");
                return fresh_state(h, key);
        }
        if (r == -EBADMSG || r == -EPROTONOSUPPORT) {
                set_aside(h, key, r == -EBADMSG ? "corrupt" : "unsupported",
                          r == -EBADMSG ? "is corrupt" : "has an unsupported version");
                return fresh_state(h, key);
        }
        if (r < 0)
                return log_error_errno(r, "Failed to read state file %s.state: %m", key);

        r = state_matches(h->state, key, h->dev->size, h->dev->logical_block_size, &why);
        if (r < 0) {
                char what[STATE_KEY_MAX + 160];

                if (strcmp(h->state->key, key) != 0)
                        (void)snprintf(what, sizeof(what), "%s (%s)", why, h->state->key);
                else if (h->state->size != h->dev->size)
                        (void)snprintf(what, sizeof(what),
                                       "%s (%" PRIu64 " bytes, now %" PRIu64 ")", why,
                                       h->state->size, h->dev->size);
                else
                        (void)snprintf(what, sizeof(what),
                                       "%s (%" PRIu32 " bytes, now %" PRIu32 ")", why,
                                       h->state->logical_block_size, h->dev->logical_block_size);
                h->state = state_free(h->state);
                set_aside(h, key, "mismatch", what);
                return fresh_state(h, key);
        }
        return 0;
}

bool hydrator_state_complete(const Hydrator *h) {
        return h->state->complete;
}

bool hydrator_already_complete(const Hydrator *h) {
        return h->state->complete || plan_complete(h->plan);
}

void hydrator_account_active_time(Hydrator *h, uint64_t now) {
        if (h->run_start_usec > 0 && !h->paused)
                h->state->active_usec += now - MAX(h->accounted_usec, h->run_start_usec);
        h->accounted_usec = now;
}

/* Mode=used has read everything but free space. A full run clears the mark at its first
 * checkpoint: what it leaves unread when stopped is not "done". */
static bool used_complete(const Hydrator *h) {
        return !h->state->complete && h->settings.mode == HYDRATE_MODE_USED &&
               plan_complete(h->plan);
}

/* state_save(), told to our siblings (siblings.h: its writes are not their workload), and the
 * size of the file noted (what each save writes). */
static int save(Hydrator *h) {
        _cleanup_free_ char *name = NULL;
        struct stat st;
        int r;

        h->saves++;
        if (!h->state_diskless)
                sibling_pub_save(h->publication, true, h->save_bytes);
        r = state_save(h->state_dir_fd, h->state);
        name = state_file_name(h->state->key);
        if (r >= 0 && name && fstatat(h->state_dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                h->save_bytes = (uint64_t)st.st_size;
        if (!h->state_diskless)
                sibling_pub_save(h->publication, false, h->save_bytes);
        return r;
}

int hydrator_checkpoint(Hydrator *h) {
        uint64_t now = hydrator_now_usec();
        int r;

        hydrator_account_active_time(h, now);
        h->state->updated_usec = now_usec(CLOCK_REALTIME);
        h->state->complete = chunkmap_complete(h->state->map) && !h->size_changed;
        h->state->used_complete = used_complete(h);
        r = save(h);
        /* Failed or not, the next try is a checkpoint step or a timer period away: a broken
         * state file system must not turn every completion into an error line. */
        h->checkpoint_done_bytes = chunkmap_done_bytes(h->state->map);
        h->checkpoint_usec = now;
        h->unsaved = r < 0;
        /* Said at the first failure, then once a minute at most (a full file system fails every
         * checkpoint step, 200 a run; one whose space comes and goes flaps as often), and always
         * at the last save: the run's outcome rests on it. */
        if (r >= 0) {
                if (h->save_failures > 0 &&
                    now - h->save_recovery_logged_usec >= HYDRATOR_SAVE_ERROR_INTERVAL_USEC) {
                        h->save_recovery_logged_usec = now;
                        log_info("%s: state file %s.state saved again, after %u failed save%s",
                                 h->state->key, h->state->key, h->save_failures,
                                 h->save_failures == 1 ? "" : "s");
                }
                h->save_failures = 0;
                return 0;
        }
        h->save_failures++;
        if (h->save_failure_logged_usec == 0 || h->phase != HYDRATOR_HYDRATING ||
            now - h->save_failure_logged_usec >= HYDRATOR_SAVE_ERROR_INTERVAL_USEC) {
                h->save_failure_logged_usec = now;
                return log_error_errno(r, "Failed to save state file %s.state: %m%s", h->state->key,
                                       h->save_failures > 1 ? " (and the saves before it)" : "");
        }
        return r;
}

int hydrator_save_loaded(Hydrator *h) {
        return save(h);
}

int hydrator_record_complete(Hydrator *h) {
        if (h->state->used_complete == used_complete(h))
                return 0;
        return hydrator_checkpoint(h);
}

int hydrator_complete_without_reading(Hydrator *h) {
        ChunkMap *m = h->state->map;
        int r;

        if (h->phase != HYDRATOR_LOADED && h->phase != HYDRATOR_HYDRATING)
                return -ESTALE; /* ended already: what it ended with stands */
        (void)chunkmap_mark_done(m, 0, m->n_chunks);
        if (h->phase == HYDRATOR_HYDRATING) { /* reads in flight are waited for, and count */
                hydrator_finish(h, HYDRATOR_COMPLETE, 0);
                return h->phase == HYDRATOR_COMPLETE ? 0 : h->error;
        }
        r = hydrator_checkpoint(h);
        if (r < 0)
                return r;
        h->phase = HYDRATOR_COMPLETE;
        return 0;
}

void hydrator_maybe_checkpoint(Hydrator *h) {
        uint64_t done = chunkmap_done_bytes(h->state->map);
        uint64_t step = MAX(h->state->size / 1000 * HYDRATOR_CHECKPOINT_PERMILLE, UINT64_C(1));

        if (done - h->checkpoint_done_bytes < step ||
            hydrator_now_usec() - h->checkpoint_usec < HYDRATOR_CHECKPOINT_MIN_GAP_USEC)
                return;
        (void)hydrator_checkpoint(
                h); /* logged; the timer tries again, and the final save must succeed */
}

int hydrator_on_checkpoint_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Hydrator *h = userdata;

        (void)hydrator_checkpoint(h); /* logged; the next tick and the final save try again */
        (void)hydrator_arm_timer(s, usec + HYDRATOR_CHECKPOINT_INTERVAL_USEC);
        return 0;
}
