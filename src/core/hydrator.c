/* SPDX-License-Identifier: MIT */
/*
 * One device's hydration on an sd-event loop. The plan (plan.h) puts each chunk in a stage;
 * stages are read in order, each with a cursor over the chunk map: every chunk of the stage
 * before the cursor is done, in flight, waiting for a retry or given up, so the run is over
 * when the last stage's cursor has passed the end, nothing is outstanding and the plan is final.
 * Before the stages come the reads asked for ahead (ahead.h: what the file-system discovery
 * reads next). A new plan may come at any time: the chunk map keeps what is done or claimed,
 * and the cursors start again from the first stage. Chunks are marked done only when their read
 * completed in full; a checkpoint records only done chunks, so a crash can make us read a chunk
 * twice, never skip one.
 * This file plans and submits the reads, notices a stalled device and finishes the run; the rate
 * limit, the owner's controls (pause, resume, stop, status), failed reads, the checkpoint, Yield=
 * and the clock have files of their own (hydrator-internal.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hydrator-internal.h"
#include "log.h"
#include "sysfs.h"
#include "util.h"

uint64_t hydrator_request_bytes(const Hydrator *h) {
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
        h->hold_after = _PLAN_STAGE_MAX;
        h->dev = dev;
        h->state_dir_fd = state_dir_fd;
        h->settings = *settings;
        h->phase = HYDRATOR_LOADED;
        h->stat_fd = -1;

        r = hydrator_load_state(h, key);
        if (r < 0)
                return r;
        r = plan_new(&h->plan, h->state->map, NULL, NULL, 0, settings->mode == HYDRATE_MODE_USED);
        if (r < 0)
                return log_error_errno(r, "Failed to plan the hydration of %s: %m", key);
        /* Reads cover whole chunks: BlockSize rounded to a multiple of the state's chunk size. */
        h->chunks_per_request = MAX(UINT64_C(1), settings->block_size / h->state->map->chunk_size);
        if (settings->queue_depth == HYDRATE_QUEUE_DEPTH_AUTO)
                tuner_init(&h->tuner, HYDRATOR_AUTO_DEPTH_MIN, HYDRATOR_AUTO_DEPTH_START,
                           HYDRATOR_AUTO_DEPTH_MAX, hydrator_now_usec());
        else
                tuner_fixed(&h->tuner, settings->queue_depth, hydrator_now_usec());
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
        sibling_pub_free(h->publication);
        ahead_done(&h->ahead);
        plan_free(h->plan);
        free(h->empty);
        state_free(h->state);
        sd_event_unref(h->event);
        free(h->retries);
        free(h);
        return NULL;
}

/* The plan changed: every stage is planned again from the first, and reads go on. */
static void replanned(Hydrator *h) {
        if (!plan_known(h->plan))
                h->mapping_until_usec = UINT64_MAX;
        else if (h->mapping_until_usec == UINT64_MAX)
                h->mapping_until_usec = hydrator_now_usec() + HYDRATOR_MAPPING_SETTLE_USEC;
        h->stage = 0;
        h->cursor = 0;
        if (h->phase == HYDRATOR_HYDRATING && !plan_complete(h->plan))
                hydrator_fill(h);
}

int hydrator_set_layout(Hydrator *h, FsLayout *layout, const ByteRange *hot, size_t n_hot,
                        PlanStage pending) {
        Plan *p;
        int r;

        r = plan_new(&p, h->state->map, layout, hot, n_hot, h->settings.mode == HYDRATE_MODE_USED);
        if (r < 0)
                return r;
        plan_set_pending(p, pending);
        if (h->empty)
                plan_set_empty(p, h->state->map, h->empty);
        plan_free(h->plan);
        h->plan = p;
        replanned(h);
        return 0;
}

int hydrator_add_hot_paths(Hydrator *h, const ByteRange *hot, size_t n_hot) {
        int r = plan_add_hot(h->plan, h->state->map, hot, n_hot);

        if (r < 0)
                return r;
        plan_set_pending(h->plan, _PLAN_STAGE_MAX);
        replanned(h);
        return 0;
}

uint64_t hydrator_stored_done(const Hydrator *h) {
        return chunkmap_done_bytes(h->state->map) -
               MIN(h->plan->empty_done, chunkmap_done_bytes(h->state->map));
}

int hydrator_empty_new(const Hydrator *h, uint64_t **ret) {
        return plan_empty_new(h->state->map, ret);
}

void hydrator_empty_stored(const Hydrator *h, uint64_t *empty, uint64_t first_block,
                           uint64_t count) {
        plan_empty_stored(h->state->map, empty, first_block, count);
}

void hydrator_set_empty(Hydrator *h, uint64_t *empty) {
        ChunkMap *m = h->state->map;

        if (h->phase != HYDRATOR_LOADED && h->phase != HYDRATOR_HYDRATING) {
                free(empty); /* the run ended: what it saved stands */
                return;
        }
        /* Done now, and saved so: a resumed run reads none of them, list or not. A chunk in
         * flight or waiting for a retry is done when its read ends. */
        for (uint64_t c = 0; c < m->n_chunks; c++)
                if ((empty[c / 64] >> (c % 64)) & 1 && !chunkmap_is_busy(m, c))
                        (void)chunkmap_mark_done(m, c, 1);
        free(h->empty);
        h->empty = empty;
        plan_set_empty(h->plan, m, empty);
        replanned(h);
        /* the rate is of what is stored from now on: measured again */
        progress_init(&h->progress, hydrator_now_usec(), hydrator_stored_done(h));
        hydrator_maybe_checkpoint(h);
        hydrator_fill(h); /* nothing left to read: the run is complete once reads in flight are */
}

int hydrator_read_ahead(Hydrator *h, const ByteRange *ranges, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int r = ahead_add(&h->ahead, h->state->map, ranges[i].offset, ranges[i].length);

                if (r < 0)
                        return r;
        }
        hydrator_fill(h);
        return 0;
}

uint32_t hydrator_chunk_size(const Hydrator *h) {
        return h->state->map->chunk_size;
}

/* A device that changed size under the run (grown by EBS, or a loop device re-read) has blocks
 * the state does not cover: what was read is not all of it, whatever the chunk map says. */
static bool size_changed(Hydrator *h, uint64_t *ret_now) {
        *ret_now = h->dev->size;
        return ioctl(h->dev->fd, BLKGETSIZE64, ret_now) >= 0 && *ret_now != h->dev->size;
}

void hydrator_finish(Hydrator *h, HydratorPhase phase, int error) {
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
        if (phase == HYDRATOR_STOPPED && h->reader && !h->stalled) {
                /* What is in flight completes in milliseconds, or a fetch from S3: record it. */
                h->draining = true;
                reader_drain(h->reader, HYDRATOR_STOP_DRAIN_USEC);
                h->draining = false;
                if (h->phase != HYDRATOR_HYDRATING)
                        return; /* a completion ended the run (out of memory) */
        }
        h->phase = phase;
        h->error = error;
        /* Stop all timers now; reads still in flight are waited for when the reader is freed. */
        (void)sd_event_source_set_enabled(h->retry_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->aio_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->rate_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->checkpoint_timer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(h->tick_timer, SD_EVENT_OFF);
        r = hydrator_checkpoint(h);
        if (r < 0 && h->phase != HYDRATOR_FAILED) {
                h->phase = HYDRATOR_FAILED; /* progress that cannot be saved is not "done" */
                h->error = r;
        }
        progress_sample(&h->progress, hydrator_now_usec(), hydrator_stored_done(h));
        if (h->finished)
                h->finished(h, h->userdata);
}

void hydrator_log_depth(const Hydrator *h) {
        const DepthTuner *t = &h->tuner;

        log_debug("%s: queue depth %u (%s; %u in flight), mean latency %.1f ms, base %.1f ms, "
                  "queueing %.1f ms",
                  h->state->key, t->depth, tuner_mode_to_string(t->mode),
                  h->reader ? reader_in_flight(h->reader) : 0, t->latency_usec / 1000.0,
                  tuner_base_latency(t) / 1000.0, t->queue_delay_usec / 1000.0);
        if (t->yielding)
                log_debug(
                        "%s: yielding: pace %.1f MiB/s (%.0f%% less than the %.1f we would read "
                        "alone), their cost "
                        "%.2f MiB/s on the disk, %.2f beside it; capacity %.1f MiB/s of the "
                        "disk, %.1f of the family%s; now ours %.1f, siblings %.1f; queue "
                        "test %s; stalls beside it %s (a request waits %.0f ms)",
                        h->state->key, t->pace / (1 << 20), t->cut * 100, t->fair / (1 << 20),
                        t->own_cost / (1 << 20), t->other_cost / (1 << 20), t->cap_own / (1 << 20),
                        t->cap_all / (1 << 20), t->cap_known ? "" : " (not known)",
                        t->now.ours / (1 << 20), t->now.siblings / (1 << 20),
                        t->queue_test == TUNER_QUEUE_TESTING   ? "under way"
                        : t->queue_test == TUNER_QUEUE_IGNORED ? "found it not ours"
                                                               : "none",
                        t->stall_test == TUNER_QUEUE_TESTING                    ? "cut for"
                        : t->stall_test == TUNER_QUEUE_IGNORED && t->stall_gone ? "found ours, gone"
                        : t->stall_test == TUNER_QUEUE_IGNORED && t->stall_ours ? "partly ours"
                        : t->stall_test == TUNER_QUEUE_IGNORED                  ? "found not ours"
                                                                                : "none",
                        (double)t->their_wait_usec / USEC_PER_MSEC);
}

static void note_completion(Hydrator *h) {
        uint64_t now = hydrator_now_usec();

        if (h->stalled)
                log_info("%s: reads complete again after %" PRIu64 " s", h->dev->path,
                         (now - h->last_completion_usec) / USEC_PER_SEC);
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
                   h->dev->path, (now - h->last_completion_usec) / USEC_PER_SEC,
                   reader_in_flight(h->reader));
}

static void on_read_complete(Reader *reader, const ReadRequest *req, int error, void *userdata) {
        Hydrator *h = userdata;
        ChunkMap *m = h->state->map;

        if (h->phase != HYDRATOR_HYDRATING)
                return; /* stopped: whatever completes now is simply not recorded */
        if (h->draining && error < 0)
                return; /* stopping: a failed or cancelled read is read again next time */
        note_completion(h);
        if (error < 0)
                hydrator_handle_failure(h, req, error);
        else {
                uint64_t now = hydrator_now_usec();
                bool slow_start = h->tuner.mode == TUNER_SLOW_START;

                tuner_complete(&h->tuner, req->length, now - req->submit_usec, now);
                if (slow_start && h->tuner.mode != TUNER_SLOW_START)
                        log_debug("%s: slow start over at queue depth %u, its smallest latency "
                                  "%.1f ms, base %.1f ms",
                                  h->state->key, h->tuner.depth, h->tuner.start_min_usec / 1000.0,
                                  tuner_base_latency(&h->tuner) / 1000.0);
                if (tuner_update(&h->tuner, now))
                        hydrator_log_depth(h);
                h->failures_in_a_row = 0;
                h->bytes_completed += req->length;
                plan_mark_done(h->plan, m, req->offset / m->chunk_size,
                               DIV_ROUND_UP(req->length, m->chunk_size));
                if (h->state->n_bad > 0 &&
                    state_clear_bad(h->state, req->offset, req->length) < 0) {
                        hydrator_finish(
                                h, HYDRATOR_FAILED,
                                log_error_errno(-ENOMEM, "Failed to update unreadable ranges: %m"));
                        return;
                }
                h->run_bytes += req->length;
                h->state->bytes_read += req->length;
                hydrator_publish_reads(h);
                hydrator_maybe_checkpoint(h);
        }
        hydrator_fill(h);
}

/* Finds the next run of chunks to read, moving on to the next stage when one is planned out;
 * never past the stage reading is held after. */
static bool next_run(Hydrator *h, uint64_t *ret_first, uint64_t *ret_count) {
        ChunkMap *m = h->state->map;

        while (h->stage <= MIN(h->plan->last, h->hold_after)) {
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

/* Every stage planned out, and the plan final (or nothing left of the device to read). */
static bool planned_out(const Hydrator *h) {
        return h->stage > h->plan->last &&
               (plan_known(h->plan) || chunkmap_complete(h->state->map));
}

static bool plan_next_read(Hydrator *h) {
        ChunkMap *m = h->state->map;
        uint64_t first, count;
        ReadRequest req;
        bool ahead;

        /* What the discovery reads next comes first; it moves no stage's cursor. */
        ahead = ahead_next(&h->ahead, m, h->chunks_per_request, &first, &count) == 0;
        if (!ahead && !next_run(h, &first, &count))
                return false;
        req = (ReadRequest){.offset = chunkmap_offset(m, first),
                            .length = chunkmap_range_bytes(m, first, count),
                            .submit_usec = hydrator_now_usec()};
        if (!hydrator_rate_allows(h, req.length))
                return false;
        if (chunkmap_set_busy(m, first, count, true) < 0) {
                hydrator_finish(h, HYDRATOR_FAILED,
                                log_error_errno(-ENOMEM, "Failed to plan the next read: %m"));
                return false;
        }
        if (reader_submit(h->reader, &req) < 0) {
                (void)chunkmap_set_busy(m, first, count, false);
                return false;
        }
        if (!ahead)
                h->cursor = first + count;
        return true;
}

static void check_finished(Hydrator *h) {
        if (h->phase != HYDRATOR_HYDRATING || !h->reader || !planned_out(h) || h->n_retries > 0 ||
            !reader_idle(h->reader))
                return;
        hydrator_finish(h, plan_complete(h->plan) ? HYDRATOR_COMPLETE : HYDRATOR_UNREADABLE, 0);
}

void hydrator_fill(Hydrator *h) {
        /* No reader: waiting for aio. Not reading yet: waiting for a look at the counters. */
        if (h->phase != HYDRATOR_HYDRATING || !h->reader || !h->reading || h->draining)
                return;
        if (reader_in_flight(h->reader) == 0) /* the stall clock starts with the first read */
                h->last_completion_usec = hydrator_now_usec();
        if (h->paused) { /* the reads still in flight drain: nothing to learn from that */
                tuner_taint(&h->tuner, hydrator_now_usec());
                return;
        }
        if (hydrator_submit_due_retries(h))
                while (h->phase == HYDRATOR_HYDRATING && reader_busy(h->reader) < h->tuner.depth &&
                       plan_next_read(h))
                        ;
        /* Fewer reads in flight than the tuner asked for, for reasons of ours (rate limit, the
         * plan ran out, retries waiting): what the device delivers now says nothing. */
        if (reader_busy(h->reader) < h->tuner.depth)
                tuner_taint(&h->tuner, hydrator_now_usec());
        reader_flush(h->reader);
        check_finished(h);
}

static int on_wakeup(sd_event_source *s, uint64_t usec, void *userdata) {
        hydrator_fill(userdata);
        return 0;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Hydrator *h = userdata;

        uint64_t now = hydrator_now_usec();

        progress_sample(&h->progress, now, hydrator_stored_done(h));
        check_stalled(h, now);
        (void)hydrator_arm_timer(s, usec + HYDRATOR_TICK_USEC);
        return 0;
}

/*
 * How many more events io_setup() may ask for now: fs.aio-max-nr less fs.aio-nr (the kernel
 * counts what each caller asked for against the limit). 0 when unknown: /proc unreadable.
 */
static unsigned aio_room(void) {
        uint64_t max, used;

        if (sysfs_read_u64_at(AT_FDCWD, "/proc/sys/fs/aio-max-nr", &max) < 0 ||
            sysfs_read_u64_at(AT_FDCWD, "/proc/sys/fs/aio-nr", &used) < 0 || used >= max)
                return 0;
        return (unsigned)MIN(max - used, (uint64_t)UINT_MAX);
}

/*
 * Sets up the reader. io_setup() fails with EAGAIN while other processes hold what the
 * fs.aio-max-nr sysctl allows: QueueDepth=auto then makes do with a smaller depth, and when
 * even its minimum does not fit (or the depth is fixed), the run waits and tries again every
 * few seconds, saying so, instead of failing. Other errors are final.
 */
static int start_reader(Hydrator *h) {
        const BlockDevice *d = h->dev;
        unsigned max = h->tuner.max, fits = block_device_max_reads(d, hydrator_request_bytes(h));
        int r;

        /* More than the device's queue holds would make io_submit() wait for room, and the
         * event loop (the watchdog, the samples) with it. */
        if (fits > 0 && fits < max && !h->tuner.fixed)
                max = MAX(fits, h->tuner.min);

        for (;;) {
                unsigned room;

                r = reader_new(&h->reader, h->event, d->fd, max, hydrator_request_bytes(h),
                               d->logical_block_size, on_read_complete, h);
                if (r != -EAGAIN || h->tuner.fixed || max <= h->tuner.min)
                        break;
                /* As many as the sysctl leaves, when that is fewer than we asked for and no
                 * fewer than the minimum; halving otherwise (unknown, or it changed under us). */
                room = aio_room();
                max = room >= h->tuner.min && room < max ? room : MAX(max / 2, h->tuner.min);
        }
        if (r == -EAGAIN) {
                if (!h->waiting_for_aio)
                        log_warning("Cannot set up asynchronous I/O for %s: what the "
                                    "fs.aio-max-nr sysctl allows is used up by other "
                                    "processes; trying again every %" PRIu64 " s",
                                    d->path, HYDRATOR_AIO_RETRY_USEC / USEC_PER_SEC);
                h->waiting_for_aio = true;
                return hydrator_arm_timer(h->aio_timer,
                                          hydrator_now_usec() + HYDRATOR_AIO_RETRY_USEC);
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
        /* Siblings compare our reads with our disk's counters at any moment: they hear of
         * each change at once. */
        reader_set_flushed(h->reader, hydrator_on_flushed);
        if (!h->tuner.fixed) {
                uint64_t now = hydrator_now_usec();

                tuner_init(&h->tuner, h->tuner.min, HYDRATOR_AUTO_DEPTH_START, max, now);
                tuner_start_share(&h->tuner, neighbours_live_siblings(h->neighbours, now));
        }
        return 0;
}

static int on_aio_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Hydrator *h = userdata;
        int r;

        if (h->phase != HYDRATOR_HYDRATING)
                return 0;
        r = start_reader(h);
        if (r < 0) {
                hydrator_finish(h, HYDRATOR_FAILED, r);
                return 0;
        }
        hydrator_fill(h);
        return 0;
}

int hydrator_start(Hydrator *h, hydrator_finished_t finished, void *userdata) {
        uint64_t now = hydrator_now_usec();
        int r;

        r = hydrator_add_timer(h, &h->retry_timer, UINT64_MAX, on_wakeup);
        if (r >= 0)
                r = hydrator_add_timer(h, &h->aio_timer, UINT64_MAX, on_aio_timer);
        if (r >= 0)
                /* a read every few ms at the pace: on time, not within the others' slack */
                r = hydrator_add_timer_accurate(h, &h->rate_timer, UINT64_MAX, 1, on_wakeup);
        if (r >= 0)
                r = hydrator_add_timer(h, &h->checkpoint_timer,
                                       now + HYDRATOR_CHECKPOINT_INTERVAL_USEC,
                                       hydrator_on_checkpoint_timer);
        if (r >= 0)
                r = hydrator_add_timer(h, &h->tick_timer, now + HYDRATOR_TICK_USEC, on_tick);
        if (r >= 0 && h->stat_fd >= 0)
                r = hydrator_add_timer(h, &h->activity_timer, now, hydrator_on_activity);
        if (r < 0)
                return log_error_errno(r, "Failed to set up timers: %m");
        /* The first reads go out at once: the first look at the counters, a sample later, says
         * whether anyone else uses the device, and how much. */
        h->reading = true;

        h->finished = finished;
        h->userdata = userdata;
        h->phase = HYDRATOR_HYDRATING;
        h->run_start_usec = h->accounted_usec = h->checkpoint_usec = h->tokens_usec = now;
        h->checkpoint_done_bytes = chunkmap_done_bytes(h->state->map);
        progress_init(&h->progress, now, hydrator_stored_done(h));
        h->stage = 0;
        h->cursor = 0;
        r = start_reader(h);
        if (r < 0)
                return r;
        hydrator_fill(h);
        return 0;
}
