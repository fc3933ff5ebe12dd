/* SPDX-License-Identifier: MIT */
/*
 * One device's hydration on an sd-event loop. The plan (plan.h) puts each chunk in a stage;
 * stages are read in order, each with a cursor over the chunk map: every chunk of the stage
 * before the cursor is done, in flight, waiting for a retry or given up, so the run is over
 * when the last stage's cursor has passed the end and nothing is outstanding. Chunks are marked
 * done only when their read completed in full; a checkpoint records only done chunks, so a crash
 * can make us read a chunk twice, never skip one.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include <fcntl.h>
#include <unistd.h>

#include "activity.h"
#include "hydrator.h"
#include "log.h"
#include "neighbours.h"
#include "progress.h"
#include "reader.h"
#include "tuner.h"
#include "util.h"

typedef struct Retry {
        ReadRequest req;
        uint64_t due_usec;
} Retry;

struct Hydrator {
        sd_event *event;
        const BlockDevice *dev;
        int state_dir_fd;
        HydrateState *state;
        Plan *plan;
        HydrateSettings settings;
        Reader *reader;
        HydratorPhase phase;
        bool paused;
        int error;

        unsigned failures_in_a_row;
        uint64_t last_completion_usec;      /* or when reads went in flight after a quiet spell */
        bool stalled;                       /* reads in flight, none completed for a long while */
        unsigned save_failures;             /* checkpoints that failed in a row */
        uint64_t save_failure_logged_usec;  /* when a failure was last logged */
        uint64_t save_recovery_logged_usec; /* when a save after failures was last logged */
        bool unsaved;                       /* the last checkpoint could not be written */
        bool size_changed;                  /* the device's size is not the state's any more */
        uint64_t chunks_per_request;
        PlanStage stage;  /* the stage being planned */
        uint64_t cursor;  /* next chunk of that stage to plan */
        DepthTuner tuner; /* how many reads to keep in flight; tuner.max = reader slots */

        Retry *retries;
        size_t n_retries;
        sd_event_source *retry_timer;

        double tokens; /* rate limiter: bytes that may be requested now */
        uint64_t tokens_usec;
        sd_event_source *rate_timer;

        sd_event_source *aio_timer; /* retries io_setup while fs.aio-max-nr is used up */
        bool waiting_for_aio;

        sd_event_source *checkpoint_timer;
        sd_event_source *tick_timer;

        int stat_fd; /* the disk's counters (Yield=), or -1 */
        char *stat_path;
        Activity activity;
        Neighbours *neighbours; /* disks behind the same instance cap, or NULL */
        bool yield_neighbours;  /* the other I/O lately was only on those */
        sd_event_source *activity_timer;
        unsigned activity_samples;
        bool reading;             /* the first reads went out (after a look at the counters) */
        uint64_t bytes_completed; /* by our reads, in all: what the disk's counters show of us */
        uint64_t checkpoint_done_bytes;
        uint64_t checkpoint_usec;
        uint64_t accounted_usec; /* active time already added to state->active_usec */

        uint64_t run_start_usec;
        uint64_t run_bytes;
        Progress progress;

        hydrator_finished_t finished;
        void *userdata;
};

static uint64_t now_usec(void) {
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t realtime_usec(void) {
        struct timespec ts;

        (void)clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int fresh_state(Hydrator *h, const char *key) {
        const BlockDevice *d = h->dev;
        int r;

        r = state_new(&h->state, key, d->size, d->logical_block_size, chunk_size_for(d->size));
        if (r < 0)
                return log_error_errno(r, "Failed to create state for %s: %m", key);
        h->state->created_usec = realtime_usec();
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

static int load_state(Hydrator *h, const char *key) {
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
                char what[96];

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

static uint64_t request_bytes(const Hydrator *h) {
        return h->chunks_per_request * h->state->map->chunk_size;
}

int hydrator_new(Hydrator **ret, sd_event *event, const BlockDevice *dev, const char *key,
                 int state_dir_fd, const HydrateSettings *settings) {
        _cleanup_(hydrator_freep) Hydrator *h = NULL;
        int r;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->event = sd_event_ref(event);
        h->dev = dev;
        h->state_dir_fd = state_dir_fd;
        h->settings = *settings;
        h->phase = HYDRATOR_LOADED;
        h->stat_fd = -1;

        r = load_state(h, key);
        if (r < 0)
                return r;
        r = plan_new(&h->plan, h->state->map, NULL, NULL, 0, settings->mode == HYDRATE_MODE_USED);
        if (r < 0)
                return log_error_errno(r, "Failed to plan the hydration of %s: %m", key);
        /* Reads cover whole chunks: BlockSize rounded to a multiple of the state's chunk size. */
        h->chunks_per_request = MAX(UINT64_C(1), settings->block_size / h->state->map->chunk_size);
        if (settings->queue_depth == HYDRATE_QUEUE_DEPTH_AUTO)
                tuner_init(&h->tuner, HYDRATOR_AUTO_DEPTH_MIN, HYDRATOR_AUTO_DEPTH_START,
                           HYDRATOR_AUTO_DEPTH_MAX, now_usec());
        else
                tuner_fixed(&h->tuner, settings->queue_depth, now_usec());
        *ret = TAKE_PTR(h);
        return 0;
}

Hydrator *hydrator_free(Hydrator *h) {
        if (!h)
                return NULL;
        reader_free(h->reader);
        sd_event_source_disable_unref(h->retry_timer);
        sd_event_source_disable_unref(h->aio_timer);
        sd_event_source_disable_unref(h->rate_timer);
        sd_event_source_disable_unref(h->checkpoint_timer);
        sd_event_source_disable_unref(h->tick_timer);
        sd_event_source_disable_unref(h->activity_timer);
        if (h->stat_fd >= 0)
                (void)close(h->stat_fd);
        free(h->stat_path);
        neighbours_free(h->neighbours);
        plan_free(h->plan);
        state_free(h->state);
        sd_event_unref(h->event);
        free(h->retries);
        free(h);
        return NULL;
}

void hydrator_freep(Hydrator **h) {
        *h = hydrator_free(*h);
}

int hydrator_set_layout(Hydrator *h, const FsLayout *layout, const ByteRange *hot, size_t n_hot) {
        Plan *p;
        int r;

        if (h->phase != HYDRATOR_LOADED)
                return -EBUSY;
        r = plan_new(&p, h->state->map, layout, hot, n_hot, h->settings.mode == HYDRATE_MODE_USED);
        if (r < 0)
                return r;
        plan_free(h->plan);
        h->plan = p;
        return 0;
}

bool hydrator_state_complete(const Hydrator *h) {
        return h->state->complete;
}

bool hydrator_already_complete(const Hydrator *h) {
        return h->state->complete || plan_complete(h->plan);
}

/* Adds the time hydrated since the last call to the state; paused time does not count. */
static void account_active_time(Hydrator *h, uint64_t now) {
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

static int checkpoint(Hydrator *h) {
        uint64_t now = now_usec();
        int r;

        account_active_time(h, now);
        h->state->updated_usec = realtime_usec();
        h->state->complete = chunkmap_complete(h->state->map) && !h->size_changed;
        h->state->used_complete = used_complete(h);
        r = state_save(h->state_dir_fd, h->state);
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
        return state_save(h->state_dir_fd, h->state);
}

int hydrator_record_complete(Hydrator *h) {
        if (h->state->used_complete == used_complete(h))
                return 0;
        return checkpoint(h);
}

/* A device that changed size under the run (grown by EBS, or a loop device re-read) has blocks
 * the state does not cover: what was read is not all of it, whatever the chunk map says. */
static bool size_changed(Hydrator *h, uint64_t *ret_now) {
        *ret_now = h->dev->size;
        return ioctl(h->dev->fd, BLKGETSIZE64, ret_now) >= 0 && *ret_now != h->dev->size;
}

static void finish(Hydrator *h, HydratorPhase phase, int error) {
        uint64_t now_size;
        int r;

        if (h->phase != HYDRATOR_HYDRATING)
                return;
        if ((phase == HYDRATOR_COMPLETE || phase == HYDRATOR_UNREADABLE) &&
            size_changed(h, &now_size)) {
                log_warning("%s: %s changed size during the run (%" PRIu64 " bytes, now %" PRIu64
                            "): not all of it was read; the next run starts over",
                            h->state->key, h->dev->path, h->dev->size, now_size);
                phase = HYDRATOR_FAILED;
                error = -ESTALE;
                h->size_changed = true; /* the state must not say "complete" either */
        }
        h->phase = phase;
        h->error = error;
        /* Stop all timers now; reads still in flight are waited for when the reader is freed. */
        (void)sd_event_source_set_enabled(h->retry_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->aio_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->rate_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->checkpoint_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->tick_timer, SD_EVENT_OFF);
        r = checkpoint(h);
        if (r < 0 && h->phase != HYDRATOR_FAILED) {
                h->phase = HYDRATOR_FAILED; /* progress that cannot be saved is not "done" */
                h->error = r;
        }
        progress_sample(&h->progress, now_usec(), chunkmap_done_bytes(h->state->map));
        if (h->finished)
                h->finished(h, h->userdata);
}

static bool retryable(int error) {
        /* Media errors: worth another try, then recorded. Anything else means the device or
         * the descriptor is gone or wrong, and retrying would only record the whole volume bad. */
        return error == -EIO || error == -ENODATA || error == -EILSEQ || error == -ETIMEDOUT ||
               error == -EREMOTEIO;
}

static int arm_timer(sd_event_source *s, uint64_t usec) {
        int r = sd_event_source_set_time(s, usec);

        return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int add_retry(Hydrator *h, const ReadRequest *req) {
        Retry *n = realloc(h->retries, (h->n_retries + 1) * sizeof(*n));
        /* attempt counts from 1 for the first retry: 0.1 s, 0.4 s, 1.6 s ... */
        uint64_t backoff = HYDRATOR_RETRY_BASE_USEC << (2 * MIN(req->attempt - 1, 8u));

        if (!n)
                return -ENOMEM;
        h->retries = n;
        h->retries[h->n_retries++] = (Retry){*req, now_usec() + backoff};
        return 0;
}

static void rearm_retry_timer(Hydrator *h) {
        uint64_t due = UINT64_MAX;

        for (size_t i = 0; i < h->n_retries; i++)
                due = MIN(due, h->retries[i].due_usec);
        if (due == UINT64_MAX)
                (void)sd_event_source_set_enabled(h->retry_timer, SD_EVENT_OFF);
        else if (arm_timer(h->retry_timer, due) < 0)
                finish(h, HYDRATOR_FAILED, -ENOMEM);
}

static void give_up(Hydrator *h, const ReadRequest *req, int error) {
        int r;

        log_warning_errno(
                error, "%s: bytes %" PRIu64 "-%" PRIu64 " unreadable after %u attempts: %m",
                h->dev->path, req->offset, req->offset + req->length - 1, req->attempt + 1);
        r = state_add_bad(h->state, req->offset, req->length);
        if (r < 0)
                finish(h, HYDRATOR_FAILED,
                       log_error_errno(r, "Failed to record unreadable range: %m"));
        /* The chunk stays busy: this run does not plan it again. */
}

/* A failed read: split multi-chunk requests so one bad chunk does not condemn its neighbours. */
static void handle_failure(Hydrator *h, const ReadRequest *req, int error) {
        const ChunkMap *m = h->state->map;
        uint64_t first = req->offset / m->chunk_size;
        uint64_t count = DIV_ROUND_UP(req->length, m->chunk_size);
        int r = 0;

        if (error == -ENXIO || error == -ENODEV) {
                /* Detached (or shrunk under us): not a failure of ours, and the next attach
                 * resumes. */
                log_warning_errno(error, "%s went away (%m); stopping with progress saved",
                                  h->dev->path);
                finish(h, HYDRATOR_DETACHED, error);
                return;
        }
        if (!retryable(error)) {
                log_error_errno(error, "Failed to read %s at byte %" PRIu64 ": %m", h->dev->path,
                                req->offset);
                finish(h, HYDRATOR_FAILED, error);
                return;
        }
        /* Media errors are rare and local; every read failing means the device went away. */
        if (++h->failures_in_a_row >= HYDRATOR_FAILURE_STORM) {
                log_error_errno(error,
                                "%s: %u reads in a row failed (%m): the device looks detached "
                                "or broken; stopping with progress saved",
                                h->dev->path, h->failures_in_a_row);
                finish(h, HYDRATOR_FAILED, error);
                return;
        }
        if (count == 1 && req->attempt >= HYDRATOR_RETRIES) {
                give_up(h, req, error);
                return;
        }

        log_debug_errno(error, "%s: read at byte %" PRIu64 " failed (%m), retrying", h->dev->path,
                        req->offset);
        for (uint64_t c = first; c < first + count && r >= 0; c++)
                r = add_retry(h, &(ReadRequest){.offset = chunkmap_offset(m, c),
                                                .length = chunkmap_range_bytes(m, c, 1),
                                                .attempt = req->attempt + 1});
        if (r < 0) {
                finish(h, HYDRATOR_FAILED, log_error_errno(r, "Failed to queue a retry: %m"));
                return;
        }
        rearm_retry_timer(h);
}

static void fill(Hydrator *h);

static void log_depth(const Hydrator *h) {
        log_debug("%s: queue depth %u (%s; %u in flight), mean latency %.1f ms, base %.1f ms, "
                  "queueing %.1f ms",
                  h->state->key, h->tuner.depth, tuner_mode_to_string(h->tuner.mode),
                  h->reader ? reader_in_flight(h->reader) : 0, h->tuner.latency_usec / 1000.0,
                  tuner_base_latency(&h->tuner) / 1000.0, h->tuner.queue_delay_usec / 1000.0);
}

static void note_completion(Hydrator *h) {
        uint64_t now = now_usec();

        if (h->stalled)
                log_info("%s: reads complete again after %" PRIu64 " s", h->dev->path,
                         (now - h->last_completion_usec) / 1000000u);
        h->stalled = false;
        h->last_completion_usec = now;
}

/*
 * A device that holds reads and returns none is stalled (a hung controller, a lost path): say
 * so, loudly, once. Nothing else changes: the reads cannot be taken back (the kernel owns them
 * until the device answers), the event loop and the watchdog keep going, and a stop request
 * still saves the checkpoint at once.
 */
static void check_stalled(Hydrator *h, uint64_t now) {
        if (h->stalled || !h->reader || reader_in_flight(h->reader) == 0 ||
            now - h->last_completion_usec < HYDRATOR_STALL_USEC)
                return;
        h->stalled = true;
        tuner_taint(&h->tuner, now); /* a stall says nothing about the right depth */
        log_volume(LOG_WARNING, LOG_MESSAGE_HYDRATION_STALLED, h->state->key, h->dev->path,
                   "%s: no read has completed for %" PRIu64 " s (%u in flight): the device "
                   "looks stalled",
                   h->dev->path, (now - h->last_completion_usec) / 1000000u,
                   reader_in_flight(h->reader));
}

static void maybe_checkpoint(Hydrator *h) {
        uint64_t done = chunkmap_done_bytes(h->state->map);
        uint64_t step = MAX(h->state->size / 1000 * HYDRATOR_CHECKPOINT_PERMILLE, UINT64_C(1));

        if (done - h->checkpoint_done_bytes < step ||
            now_usec() - h->checkpoint_usec < HYDRATOR_CHECKPOINT_MIN_GAP_USEC)
                return;
        (void)checkpoint(h); /* logged; the timer tries again, and the final save must succeed */
}

static void on_read_complete(Reader *reader, const ReadRequest *req, int error, void *userdata) {
        Hydrator *h = userdata;
        ChunkMap *m = h->state->map;

        if (h->phase != HYDRATOR_HYDRATING)
                return; /* stopping: whatever completes now is simply not recorded */
        note_completion(h);
        if (error < 0)
                handle_failure(h, req, error);
        else {
                uint64_t now = now_usec();

                tuner_complete(&h->tuner, req->length, now - req->submit_usec, now);
                if (tuner_update(&h->tuner, now))
                        log_depth(h);
                h->failures_in_a_row = 0;
                h->bytes_completed += req->length;
                plan_mark_done(h->plan, m, req->offset / m->chunk_size,
                               DIV_ROUND_UP(req->length, m->chunk_size));
                if (h->state->n_bad > 0 &&
                    state_clear_bad(h->state, req->offset, req->length) < 0) {
                        finish(h, HYDRATOR_FAILED,
                               log_error_errno(-ENOMEM, "Failed to update unreadable ranges: %m"));
                        return;
                }
                h->run_bytes += req->length;
                h->state->bytes_read += req->length;
                maybe_checkpoint(h);
        }
        fill(h);
}

/* Token bucket. Returns true if @bytes may be requested now; otherwise arms the rate timer. */
static bool rate_allows(Hydrator *h, uint64_t bytes) {
        uint64_t limit = h->settings.rate_limit, now = now_usec();
        double burst;

        if (limit == 0)
                return true;
        burst = MAX((double)bytes, (double)limit / 10.0);
        h->tokens += (double)(now - h->tokens_usec) * (double)limit / 1e6;
        h->tokens = MIN(h->tokens, burst);
        h->tokens_usec = now;
        if (h->tokens >= (double)bytes) {
                h->tokens -= (double)bytes;
                return true;
        }
        if (arm_timer(h->rate_timer,
                      now + (uint64_t)(((double)bytes - h->tokens) * 1e6 / (double)limit) + 1) < 0)
                finish(h, HYDRATOR_FAILED, -ENOMEM);
        return false;
}

static bool submit_due_retries(Hydrator *h) {
        uint64_t now = now_usec();
        size_t i = 0;

        while (i < h->n_retries) {
                Retry *t = &h->retries[i];

                if (t->due_usec > now) {
                        i++;
                        continue;
                }
                t->req.submit_usec = now;
                if (reader_submit(h->reader, &t->req) == -EBUSY)
                        return false;
                *t = h->retries[--h->n_retries];
        }
        rearm_retry_timer(h);
        return true;
}

/* Finds the next run of chunks to read, moving on to the next stage when one is planned out. */
static bool next_run(Hydrator *h, uint64_t *ret_first, uint64_t *ret_count) {
        ChunkMap *m = h->state->map;

        while (h->stage <= h->plan->last) {
                if (plan_next(h->plan, m, h->stage, h->cursor, h->chunks_per_request, ret_first,
                              ret_count) == 0) {
                        h->cursor = *ret_first; /* nothing of this stage before it is left */
                        return true;
                }
                h->stage++;
                h->cursor = 0;
        }
        return false;
}

static bool planned_out(const Hydrator *h) {
        return h->stage > h->plan->last;
}

static bool plan_next_read(Hydrator *h) {
        ChunkMap *m = h->state->map;
        uint64_t first, count;
        ReadRequest req;

        if (!next_run(h, &first, &count))
                return false;
        req = (ReadRequest){.offset = chunkmap_offset(m, first),
                            .length = chunkmap_range_bytes(m, first, count),
                            .submit_usec = now_usec()};
        if (!rate_allows(h, req.length))
                return false;
        if (reader_submit(h->reader, &req) < 0)
                return false;
        chunkmap_set_busy(m, first, count, true);
        h->cursor = first + count;
        return true;
}

static void check_finished(Hydrator *h) {
        if (h->phase != HYDRATOR_HYDRATING || !h->reader || !planned_out(h) || h->n_retries > 0 ||
            !reader_idle(h->reader))
                return;
        finish(h, plan_complete(h->plan) ? HYDRATOR_COMPLETE : HYDRATOR_UNREADABLE, 0);
}

static void fill(Hydrator *h) {
        /* No reader: waiting for aio. Not reading yet: waiting for a look at the counters. */
        if (h->phase != HYDRATOR_HYDRATING || !h->reader || !h->reading)
                return;
        if (reader_in_flight(h->reader) == 0) /* the stall clock starts with the first read */
                h->last_completion_usec = now_usec();
        if (h->paused) { /* the reads still in flight drain: nothing to learn from that */
                tuner_taint(&h->tuner, now_usec());
                return;
        }
        if (submit_due_retries(h))
                while (h->phase == HYDRATOR_HYDRATING && reader_busy(h->reader) < h->tuner.depth &&
                       plan_next_read(h))
                        ;
        /* Fewer reads in flight than the tuner asked for, for reasons of ours (rate limit, the
         * plan ran out, retries waiting): what the device delivers now says nothing. */
        if (reader_busy(h->reader) < h->tuner.depth)
                tuner_taint(&h->tuner, now_usec());
        reader_flush(h->reader);
        check_finished(h);
}

static int on_wakeup(sd_event_source *s, uint64_t usec, void *userdata) {
        fill(userdata);
        return 0;
}

static int on_checkpoint_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Hydrator *h = userdata;

        (void)checkpoint(h); /* logged; the next tick and the final save try again */
        (void)arm_timer(s, usec + HYDRATOR_CHECKPOINT_INTERVAL_USEC);
        return 0;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Hydrator *h = userdata;

        uint64_t now = now_usec();

        progress_sample(&h->progress, now, chunkmap_done_bytes(h->state->map));
        check_stalled(h, now);
        (void)arm_timer(s, usec + HYDRATOR_TICK_USEC);
        return 0;
}

static void stop_watching(Hydrator *h, int error) {
        log_warning_errno(error, "Cannot read %s (%m): no longer yielding to other I/O on %s",
                          h->stat_path, h->dev->path);
        (void)sd_event_source_set_enabled(h->activity_timer, SD_EVENT_OFF);
        h->reading = true;
}

/*
 * Every ACTIVITY_SAMPLE_USEC: our completions first (so that the disk's counters and ours
 * cover the same reads), then the counters; the tuner hears whether anyone else used the
 * device. The first reads wait for two looks, so that a busy volume is yielded to before
 * the first read, not after.
 */
static int on_activity(sd_event_source *s, uint64_t usec, void *userdata) {
        Hydrator *h = userdata;
        uint64_t now = now_usec();
        DiskStat st;
        bool active;
        double rate;
        int r;

        if (h->reader)
                reader_poll(h->reader);
        if (h->phase != HYDRATOR_HYDRATING)
                return 0;
        r = disk_stat_read(h->stat_fd, &st);
        if (r < 0) {
                stop_watching(h, r);
                fill(h);
                return 0;
        }
        active = activity_sample(
                &h->activity, &st, h->bytes_completed,
                h->reader ? (uint64_t)reader_in_flight(h->reader) * request_bytes(h) : 0, now,
                &rate);
        if (active && !h->tuner.yielding)
                log_info("%s: other I/O on the device (%.1f MiB/s): yielding to it", h->dev->path,
                         rate / (1 << 20));
        if (h->neighbours) {
                char name[64];
                double theirs;
                bool busy = neighbours_sample(h->neighbours, now, &theirs, name);

                if (busy && !active && !h->tuner.yielding)
                        log_info("%s: I/O on /dev/%s (%.1f MiB/s), which shares the instance's "
                                 "bandwidth: yielding to it",
                                 h->dev->path, name, theirs / (1 << 20));
                if (active || busy)
                        h->yield_neighbours = !active;
                active = active || busy;
                rate += theirs;
        }
        if (tuner_foreign(&h->tuner, active, rate, now))
                log_depth(h);
        if (!h->reading && ++h->activity_samples >= 2)
                h->reading = true;
        (void)arm_timer(s, usec + ACTIVITY_SAMPLE_USEC);
        fill(h);
        return 0;
}

int hydrator_watch_neighbours(Hydrator *h, const char *sysfs_root) {
        if (h->phase != HYDRATOR_LOADED || h->stat_fd < 0)
                return -EBUSY;
        return neighbours_new(&h->neighbours, sysfs_root, h->dev->kernel_name, now_usec());
}

int hydrator_watch_activity(Hydrator *h, const char *stat_path) {
        DiskStat st;
        int r;

        if (h->phase != HYDRATOR_LOADED)
                return -EBUSY;
        h->stat_path = strdup(stat_path);
        if (!h->stat_path)
                return -ENOMEM;
        h->stat_fd = open(stat_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (h->stat_fd < 0)
                return -errno;
        r = disk_stat_read(h->stat_fd, &st);
        if (r < 0) {
                (void)close(h->stat_fd);
                h->stat_fd = -1;
        }
        return r;
}

/*
 * Sets up the reader. io_setup() fails with EAGAIN while other processes hold what the
 * fs.aio-max-nr sysctl allows: QueueDepth=auto then makes do with a smaller depth, and when
 * even its minimum does not fit (or the depth is fixed), the run waits and tries again every
 * few seconds, saying so, instead of failing. Other errors are final.
 */
static int start_reader(Hydrator *h) {
        const BlockDevice *d = h->dev;
        unsigned max = h->tuner.max;
        int r;

        for (;;) {
                r = reader_new(&h->reader, h->event, d->fd, max, request_bytes(h),
                               d->logical_block_size, on_read_complete, h);
                if (r != -EAGAIN || h->tuner.fixed || max <= h->tuner.min)
                        break;
                max = MAX(max / 2, h->tuner.min);
        }
        if (r == -EAGAIN) {
                if (!h->waiting_for_aio)
                        log_warning("Cannot set up asynchronous I/O for %s: what the "
                                    "fs.aio-max-nr sysctl allows is used up by other "
                                    "processes; trying again every %" PRIu64 " s",
                                    d->path, HYDRATOR_AIO_RETRY_USEC / 1000000u);
                h->waiting_for_aio = true;
                return arm_timer(h->aio_timer, now_usec() + HYDRATOR_AIO_RETRY_USEC);
        }
        if (r < 0)
                return log_error_errno(r,
                                       "Failed to set up asynchronous I/O for %s (queue depth "
                                       "%u): %m",
                                       d->path, max);
        if (h->waiting_for_aio || max < h->tuner.max)
                log_info("%s: asynchronous I/O set up%s, queue depth up to %u", d->path,
                         h->waiting_for_aio ? " after waiting for fs.aio-max-nr" : "", max);
        h->waiting_for_aio = false;
        if (!h->tuner.fixed)
                tuner_init(&h->tuner, h->tuner.min, HYDRATOR_AUTO_DEPTH_START, max, now_usec());
        return 0;
}

static int on_aio_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Hydrator *h = userdata;
        int r;

        if (h->phase != HYDRATOR_HYDRATING)
                return 0;
        r = start_reader(h);
        if (r < 0) {
                finish(h, HYDRATOR_FAILED, r);
                return 0;
        }
        fill(h);
        return 0;
}

static int add_timer(Hydrator *h, sd_event_source **ret, uint64_t usec,
                     sd_event_time_handler_t cb) {
        int r = sd_event_add_time(h->event, ret, CLOCK_MONOTONIC, usec, 10 * 1000, cb, h);

        if (r < 0)
                return r;
        return usec == UINT64_MAX ? sd_event_source_set_enabled(*ret, SD_EVENT_OFF) : 0;
}

int hydrator_start(Hydrator *h, hydrator_finished_t finished, void *userdata) {
        uint64_t now = now_usec();
        int r;

        r = add_timer(h, &h->retry_timer, UINT64_MAX, on_wakeup);
        if (r >= 0)
                r = add_timer(h, &h->aio_timer, UINT64_MAX, on_aio_timer);
        if (r >= 0)
                r = add_timer(h, &h->rate_timer, UINT64_MAX, on_wakeup);
        if (r >= 0)
                r = add_timer(h, &h->checkpoint_timer, now + HYDRATOR_CHECKPOINT_INTERVAL_USEC,
                              on_checkpoint_timer);
        if (r >= 0)
                r = add_timer(h, &h->tick_timer, now + HYDRATOR_TICK_USEC, on_tick);
        if (r >= 0 && h->stat_fd >= 0)
                r = add_timer(h, &h->activity_timer, now, on_activity);
        if (r < 0)
                return log_error_errno(r, "Failed to set up timers: %m");
        h->reading = h->stat_fd < 0;

        h->finished = finished;
        h->userdata = userdata;
        h->phase = HYDRATOR_HYDRATING;
        h->run_start_usec = h->accounted_usec = h->checkpoint_usec = h->tokens_usec = now;
        h->checkpoint_done_bytes = chunkmap_done_bytes(h->state->map);
        progress_init(&h->progress, now, h->checkpoint_done_bytes);
        h->stage = 0;
        h->cursor = 0;
        r = start_reader(h);
        if (r < 0)
                return r;
        fill(h);
        return 0;
}

int hydrator_pause(Hydrator *h) {
        unsigned pm;

        if (h->phase == HYDRATOR_LOADED) { /* mapping the file systems: start paused */
                if (!h->paused)
                        log_info("%s: paused before the first read", h->state->key);
                h->paused = true;
                return 0;
        }
        if (h->phase != HYDRATOR_HYDRATING)
                return -ESTALE;
        if (h->paused)
                return 0;
        pm = progress_permille(chunkmap_done_bytes(h->state->map), h->state->size);
        account_active_time(h, now_usec());
        h->paused = true;
        (void)sd_event_source_set_enabled(h->rate_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->retry_timer, SD_EVENT_OFF);
        log_info("%s: paused at %u.%u%%", h->state->key, pm / 10, pm % 10);
        (void)checkpoint(h); /* logged; the timer tries again */
        return 0;
}

int hydrator_resume(Hydrator *h) {
        if (h->phase == HYDRATOR_LOADED) {
                if (h->paused)
                        log_info("%s: resumed", h->state->key);
                h->paused = false;
                return 0;
        }
        if (h->phase != HYDRATOR_HYDRATING)
                return -ESTALE;
        if (!h->paused)
                return 0;
        h->accounted_usec = h->tokens_usec = now_usec();
        h->tokens = 0;
        h->paused = false;
        log_info("%s: resumed", h->state->key);
        rearm_retry_timer(h);
        fill(h);
        return 0;
}

void hydrator_set_rate_limit(Hydrator *h, uint64_t bytes_per_second) {
        h->settings.rate_limit = bytes_per_second;
        h->tokens = 0;
        h->tokens_usec = now_usec();
        (void)sd_event_source_set_enabled(h->rate_timer, SD_EVENT_OFF);
        fill(h);
}

void hydrator_stop(Hydrator *h) {
        finish(h, HYDRATOR_STOPPED, 0);
}

void hydrator_get_status(const Hydrator *h, HydratorStatus *ret) {
        *ret = (HydratorStatus){
                .phase = h->phase,
                .key = h->state->key,
                .size = h->state->size,
                .done_bytes = chunkmap_done_bytes(h->state->map),
                .rate = h->phase == HYDRATOR_HYDRATING && !h->paused && !h->stalled
                                ? progress_rate(&h->progress)
                                : 0,
                .run_bytes = h->run_bytes,
                .run_usec = h->run_start_usec > 0 ? now_usec() - h->run_start_usec : 0,
                .paused = h->paused,
                .rate_limit = h->settings.rate_limit,
                .request_bytes = request_bytes(h),
                .depth = h->tuner.depth,
                .depth_min = h->tuner.min,
                .depth_max = h->tuner.max,
                .depth_changes = h->tuner.changes,
                .depth_auto = !h->tuner.fixed,
                .latency_usec = (uint64_t)h->tuner.latency_usec,
                .in_flight = h->reader ? reader_in_flight(h->reader) : 0,
                .yielding = h->tuner.yielding,
                .yield_neighbours = h->tuner.yielding && h->yield_neighbours,
                .waiting_for_aio = h->waiting_for_aio,
                .unsaved = h->unsaved,
                .stalled_usec = h->stalled ? now_usec() - h->last_completion_usec : 0,
                .n_bad = h->state->n_bad,
                .bad = h->state->bad,
                .error = h->error,
        };
        plan_get_progress(h->plan, &ret->plan);
}
