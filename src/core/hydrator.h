/* SPDX-License-Identifier: MIT */
/*
 * The hydration of one device: loads (or starts) its checkpoint, plans the chunks still cold,
 * keeps the reader busy within the rate limit, retries failed reads with backoff and records
 * what stays unreadable, checkpoints on a timer and on progress, and tells its owner when it
 * is finished. Everything runs on one sd-event loop.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "hydrate-settings.h"
#include "device.h"
#include "fslayout.h"
#include "plan.h"
#include "state.h"
#include "util.h"

#define HYDRATOR_CHECKPOINT_INTERVAL_USEC (5 * USEC_PER_SEC)
#define HYDRATOR_CHECKPOINT_MIN_GAP_USEC (20 * USEC_PER_MSEC)
#define HYDRATOR_CHECKPOINT_PERMILLE 5 /* also checkpoint after each 0.5% of the volume */
/*
 * QueueDepth=auto: the tuner starts at 32 reads, what AWS's fio command uses, so it is never
 * worse from the start, and may go from 4 up to 256 on a volume of any size. A kill costs
 * what is in flight, but those reads were sent: EBS fetched their blocks, and after the
 * restart they are read again warm, in a fraction of a second. 256 x 1 MiB reads share one
 * buffer (reader.h), so memory does not grow with the depth; 256 aio events per instance
 * leave fs.aio-max-nr (65536 by default) room for hundreds of volumes.
 */
#define HYDRATOR_AUTO_DEPTH_START 32u
#define HYDRATOR_AUTO_DEPTH_MIN 4u
#define HYDRATOR_AUTO_DEPTH_MAX 256u
#define HYDRATOR_TICK_USEC (500 * USEC_PER_MSEC)
#define HYDRATOR_RETRIES 3
#define HYDRATOR_FAILURE_STORM 64 /* reads in a row that failed: the device is gone, not bad */
/* Reads in flight and none completed for this long: the device is stalled (first-touch reads
 * of a cold EBS volume take ~0.1 s, a few seconds when deeply queued). */
#define HYDRATOR_STALL_USEC (10 * USEC_PER_SEC)
/* A stop waits this long for the reads in flight, so that what they read is saved, not read
 * again: on a cold volume each is a fetch from S3 (50-100 ms), not a millisecond's work. */
#define HYDRATOR_STOP_DRAIN_USEC (2 * USEC_PER_SEC)
/* A state file system that fails every save: said at the first failure, then this often. */
#define HYDRATOR_SAVE_ERROR_INTERVAL_USEC (60 * USEC_PER_SEC)
#define HYDRATOR_AIO_RETRY_USEC (5 * USEC_PER_SEC) /* io_setup: EAGAIN (fs.aio-max-nr) */
/* While the file systems are mapped, and this long after: reads on the device are the mapping's
 * (the kernel's own reads for GETFSMAP and for the inodes HotPaths= looks up are nobody's in the
 * counters we have, and the discovery's buffered reads land after it counted them). */
#define HYDRATOR_MAPPING_SETTLE_USEC (2 * USEC_PER_SEC)
/* While yielding, reads go out in a batch every TUNER_PACE_BATCH_USEC (hydrator_rate_allows()),
 * and the token bucket keeps this much of the pace more for a rate timer that fired late. */
#define HYDRATOR_PACE_CATCH_UP_USEC (20 * USEC_PER_MSEC)
#define HYDRATOR_RETRY_BASE_USEC (100 * USEC_PER_MSEC) /* 0.1 s, 0.4 s, 1.6 s */

typedef enum HydratorPhase {
        HYDRATOR_LOADED, /* state loaded, not started */
        HYDRATOR_HYDRATING,
        HYDRATOR_COMPLETE,   /* every chunk read */
        HYDRATOR_UNREADABLE, /* finished, but some ranges could not be read */
        HYDRATOR_FAILED,     /* stopped by an error (device broken, state not savable) */
        HYDRATOR_STOPPED,    /* stopped on request, state saved */
        HYDRATOR_DETACHED,   /* the device went away (ENXIO, ENODEV), state saved */
} HydratorPhase;

typedef struct Hydrator Hydrator;
typedef void (*hydrator_finished_t)(Hydrator *h, void *userdata);

typedef struct HydratorStatus {
        HydratorPhase phase;
        const char *key;
        /* What is to be hydrated: the device, or with the snapshot's block list what it
         * stores (plan.empty_bytes less). */
        uint64_t size;
        uint64_t done_bytes;
        uint64_t device_size;          /* the whole device */
        uint64_t rate;                 /* bytes/s, sliding window */
        uint64_t run_bytes;            /* bytes read by this run */
        uint64_t run_usec;             /* duration of this run so far */
        bool paused;                   /* HYDRATING, but no new reads until resumed */
        PlanStage hold_after;          /* no stage after it is read; _PLAN_STAGE_MAX: none held */
        uint64_t rate_limit;           /* bytes/s, 0 = unlimited */
        uint64_t request_bytes;        /* size of each read */
        unsigned depth;                /* reads kept in flight now */
        unsigned depth_min, depth_max; /* its bounds (equal to it unless auto) */
        unsigned depth_changes;        /* times QueueDepth=auto changed it */
        bool depth_auto;               /* QueueDepth=auto */
        uint64_t latency_usec;         /* mean read latency (weighted to recent reads) */
        unsigned in_flight;            /* reads the device holds now */
        bool yielding;                 /* other I/O on the device: giving way to it (Yield=) */
        bool yield_neighbours;         /* ... for I/O on other volumes behind the same cap */
        unsigned yield_percent;        /* ... the share of our rate given way, 0-100 */
        bool waiting_for_aio;          /* io_setup: EAGAIN, fs.aio-max-nr used up; retrying */
        bool unsaved;                  /* the last checkpoint could not be written */
        uint64_t stalled_usec;         /* > 0: no read completed for this long (stalled) */
        size_t n_bad;                  /* unreadable ranges recorded */
        const ByteRange *bad;
        int error;         /* negative errno when FAILED */
        PlanProgress plan; /* stages: current, done and total bytes of each */
} HydratorStatus;

/*
 * hydrator_new() - load the checkpoint of @key from @state_dir_fd, or start a fresh one.
 * A checkpoint that is corrupt, of an unknown version or of another device is logged, set
 * aside (renamed) and replaced by a fresh state. @dev and @state_dir_fd are borrowed.
 */
int hydrator_new(Hydrator **ret, sd_event *event, const BlockDevice *dev, const char *key,
                 int state_dir_fd, const HydrateSettings *settings);
Hydrator *hydrator_free(Hydrator *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(Hydrator *, hydrator_free)

/*
 * hydrator_set_layout() - plan by what the file systems of the device hold (@layout, or NULL
 * for "all used"; its chunk kinds, if it has them, are taken over: see plan_new()) and @hot
 * byte ranges, in the order of plan.h, honouring Mode=; @pending is the first stage not known
 * yet (plan_set_pending(): PLAN_STAGE_METADATA while the file systems are being mapped, when
 * only hydrator_read_ahead() gives reads; PLAN_STAGE_HOT while HotPaths= is resolved, which then
 * joins with hydrator_add_hot_paths(); _PLAN_STAGE_MAX when all is known). Without it the whole
 * device is read in offset order. A running hydration takes the new plan at once: chunks done,
 * in flight, waiting for a retry or given up stay so, the stages are planned again from the
 * first, and reads go on unless the new plan is complete (hydrator_already_complete(): then the
 * caller decides).
 * Return: 0, -ENOMEM or -EINVAL (chunk kinds of another chunk size); the old plan stays.
 */
int hydrator_set_layout(Hydrator *h, FsLayout *layout, const ByteRange *hot, size_t n_hot,
                        PlanStage pending);

/*
 * hydrator_add_hot_paths() - HotPaths= is resolved: @hot joins the plan that
 * hydrator_set_layout() made (plan_add_hot(), in place: a layout by chunk was taken over and
 * cannot be planned from again), and nothing is pending any more. Reads go on as after
 * hydrator_set_layout(). Return: 0 or -ENOMEM (the plan unchanged).
 */
int hydrator_add_hot_paths(Hydrator *h, const ByteRange *hot, size_t n_hot);

/* The snapshot's block list by this device's chunks: plan_empty_new(), plan_empty_stored(). */
int hydrator_empty_new(const Hydrator *h, uint64_t **ret);
void hydrator_empty_stored(const Hydrator *h, uint64_t *empty, uint64_t first_block,
                           uint64_t count);
/*
 * hydrator_set_empty() - the snapshot's block list (hydrator_empty_new(), taken over): its empty
 * chunks are done at once (not those in flight: their reads end first) and in no stage of
 * this plan or the next; reads go on, or the run completes if nothing stored is left.
 */
void hydrator_set_empty(Hydrator *h, uint64_t *empty);

/*
 * hydrator_read_ahead() - read the chunks of @ranges (device bytes) before anything the plan
 * holds, in the order given, unless they are done or claimed: what the file-system discovery is
 * about to read. Before or after hydrator_start(). Return: 0 or -ENOMEM.
 */
int hydrator_read_ahead(Hydrator *h, const ByteRange *ranges, size_t n);

/* hydrator_chunk_size() - the chunk size of the state: what fslayout_discover_chunks() needs. */
uint32_t hydrator_chunk_size(const Hydrator *h);

/*
 * hydrator_watch_activity() - give way to other I/O on the device (Yield=, tuner.h), told from
 * the disk's counters in @stat_path (/sys/block/<disk>/stat), which is opened and read once
 * now. Before hydrator_start() only. Returns 0, or the errno of opening or reading it
 * (-EBADMSG for what is not a stat file): the caller decides whether to go on without.
 */
int hydrator_watch_activity(Hydrator *h, const char *stat_path);

/*
 * hydrator_watch_neighbours() - also give way to I/O on the disks of the same family in
 * @sysfs_root/block, which share the instance's bandwidth (activity.h), but for the reads of
 * their hydrators, which publish in @runtime_fd's io/ (siblings.h; -1: none is believed). After
 * hydrator_watch_activity() succeeded, before hydrator_start(). 0, -ENOMEM or -EBUSY.
 */
int hydrator_watch_neighbours(Hydrator *h, const char *sysfs_root, int runtime_fd);

/*
 * hydrator_share() - find the disks the state directory is on (whose writes at our saves are
 * not a workload), and publish our reads and saves in @runtime_fd's io/ for the hydrators of
 * the volumes beside ours (siblings.h; -1: publish nothing). Before hydrator_start(). 0, or the
 * -errno of publishing (the caller decides whether to go on without).
 */
int hydrator_share(Hydrator *h, const char *sysfs_root, int runtime_fd);

/* hydrator_start() - begin reading. @finished is called once, when the phase stops being HYDRATING.
 */
int hydrator_start(Hydrator *h, hydrator_finished_t finished, void *userdata);
/* hydrator_stop() - stop planning new reads, save the checkpoint, phase STOPPED (unless finished).
 */
void hydrator_stop(Hydrator *h);

/*
 * hydrator_pause() - plan no new reads; those in flight complete and count. The checkpoint is
 * saved, and paused time does not count as active time. -ESTALE unless HYDRATING.
 */
int hydrator_pause(Hydrator *h);
/* hydrator_resume() - undo hydrator_pause(). -ESTALE unless HYDRATING. */
int hydrator_resume(Hydrator *h);
/*
 * hydrator_hold_after() - read no stage after @stage (reads in flight complete and count), until
 * called again with _PLAN_STAGE_MAX: AWS initializes the volume, and reading what the workload
 * needs first (metadata, hot paths) is all that is worth our reads. The run does not finish
 * while stages are held back; the ahead reads of the file-system discovery go on.
 */
void hydrator_hold_after(Hydrator *h, PlanStage stage);
/* hydrator_set_rate_limit() - bytes per second from now on, 0 = unlimited. */
void hydrator_set_rate_limit(Hydrator *h, uint64_t bytes_per_second);

/* hydrator_state_complete() - the checkpoint says every chunk of the device was read. */
bool hydrator_state_complete(const Hydrator *h);
/*
 * hydrator_complete_without_reading() - what is left to read is known to be warm without
 * reading it (AWS said so: a volume created empty, fast snapshot restore, an initialization
 * AWS completed): every chunk counts as done, the checkpoint says complete, and a running
 * hydration ends COMPLETE (reads in flight are waited for). 0; -ESTALE when the run has ended
 * already; or the error of the save, the run then FAILED.
 */
int hydrator_complete_without_reading(Hydrator *h);
/* hydrator_already_complete() - nothing left to read: every chunk, or (Mode=used, once the plan
 * is set) every chunk that is not free space. */
bool hydrator_already_complete(const Hydrator *h);
/* hydrator_record_complete() - when hydrator_already_complete() holds for Mode=used but the
 * checkpoint does not say so yet (a full run was stopped after the used blocks, say), save it
 * with that mark, which ebs-hydratectl shows. 0, or the error of saving (logged). */
int hydrator_record_complete(Hydrator *h);

/*
 * hydrator_save_loaded() - write the state as it was loaded (or created), before any read: a
 * state directory that cannot take a save (read-only, full, something in the way of the
 * temporary file) is found before the device is read, not after reading all of it at every
 * restart. Returns 0 or state_save()'s error.
 */
int hydrator_save_loaded(Hydrator *h);
void hydrator_get_status(const Hydrator *h, HydratorStatus *ret);
