/* SPDX-License-Identifier: MIT */
/*
 * The hydrator's object and the functions its source files share; not for other modules.
 * hydrator.c plans, submits and finishes (with stall detection), hydrator-rate.c holds the reads
 * to the rate limit, hydrator-control.c pauses, resumes, stops and reports, hydrator-retry.c
 * handles failed reads, hydrator-checkpoint.c loads and saves the state, hydrator-activity.c
 * gives way to other I/O, hydrator-clock.c owns the time and the timers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "activity.h"
#include "ahead.h"
#include "hydrator.h"
#include "neighbours.h"
#include "progress.h"
#include "reader.h"
#include "siblings.h"
#include "tuner.h"

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
        uint64_t *empty; /* the snapshot's block list by chunk (plan.h), or NULL */
        HydrateSettings settings;
        Reader *reader;
        HydratorPhase phase;
        bool paused;
        bool draining; /* stopping: the reads in flight complete, nothing more goes out */
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
        PlanStage stage;      /* the stage being planned */
        PlanStage hold_after; /* no stage after this one is read (hydrator_hold_after()) */
        uint64_t cursor;      /* next chunk of that stage to plan */
        Ahead ahead;          /* read before the stages: what the discovery reads next */
        DepthTuner tuner;     /* how many reads to keep in flight; tuner.max = reader slots */

        Retry *retries;
        size_t n_retries;
        size_t n_retries_allocated;
        sd_event_source *retry_timer;

        double tokens; /* rate limiter: bytes that may be requested now */
        uint64_t tokens_usec;
        uint64_t batch_usec; /* while paced: no read before this, the next batch's time */
        sd_event_source *rate_timer;

        sd_event_source *aio_timer; /* retries io_setup while fs.aio-max-nr is used up */
        bool waiting_for_aio;

        sd_event_source *checkpoint_timer;
        sd_event_source *tick_timer;

        int stat_fd; /* the disk's counters (Yield=), or -1 */
        char *stat_path;
        Activity activity;
        Neighbours *neighbours; /* disks behind the same instance cap, or NULL */
        sd_event_source *activity_timer;
        unsigned activity_samples;
        char busiest[KERNEL_NAME_MAX]; /* the neighbour whose I/O cost most lately */
        bool reading;                  /* reads may go out (not before hydrator_start()) */

        /* what we tell our siblings, and what our saves write (siblings.h, neighbours.h) */
        SiblingPub *publication;                /* or NULL */
        const char *sysfs_root;                 /* borrowed */
        dev_t disk;                             /* our device's number */
        dev_t state_disks[SIBLING_STATE_DISKS]; /* the state directory's disks ... */
        unsigned n_state_disks;                 /* ... 0: not known, so every disk */
        bool state_diskless;                    /* ... or none (tmpfs) */
        uint64_t saves;                         /* checkpoint saves begun */
        uint64_t saves_sampled;                 /* ... at the last activity sample */
        uint64_t save_bytes;                    /* the state file's size after the last save */
        uint64_t threads_read; /* what our other threads (the discovery) read, at the last sample */
        uint64_t mapping_until_usec; /* reads on the disk are the mapping's until then */
        uint64_t bytes_completed;    /* by our reads, in all: what the disk's counters show of us */
        uint64_t checkpoint_done_bytes;
        uint64_t checkpoint_usec;
        uint64_t accounted_usec; /* active time already added to state->active_usec */

        uint64_t run_start_usec;
        uint64_t run_bytes;
        Progress progress;

        hydrator_finished_t finished;
        void *userdata;
};

/*
 * hydrator-clock.c. hydrator_now_usec() is CLOCK_MONOTONIC in microseconds, the clock of every
 * timer; nothing else in the hydrator reads that clock. tests/unit/test-hydrator.c replaces it
 * and sd-event's timer calls at link time (-Wl,--wrap) to drive the hydrator on a fake clock.
 */
uint64_t hydrator_now_usec(void);
/* A CLOCK_MONOTONIC timer at @usec, or created disabled for UINT64_MAX; it fires up to
 * HYDRATOR_TIMER_ACCURACY_USEC late, or @accuracy (at least 1 us: 0 is sd-event's 250 ms). */
#define HYDRATOR_TIMER_ACCURACY_USEC (10 * USEC_PER_MSEC)
int hydrator_add_timer(Hydrator *h, sd_event_source **ret, uint64_t usec,
                       sd_event_time_handler_t cb);
int hydrator_add_timer_accurate(Hydrator *h, sd_event_source **ret, uint64_t usec,
                                uint64_t accuracy, sd_event_time_handler_t cb);
/* Fires the timer @s once, at @usec. */
int hydrator_arm_timer(sd_event_source *s, uint64_t usec);

/* hydrator.c */
uint64_t hydrator_request_bytes(const Hydrator *h);
/* Sets the final phase (once, from HYDRATING), stops the timers, saves, tells the owner. */
void hydrator_finish(Hydrator *h, HydratorPhase phase, int error);
/* Keeps the reader busy up to the tuner's depth: due retries first, then the plan. */
void hydrator_fill(Hydrator *h);
void hydrator_log_depth(const Hydrator *h);

/* hydrator-rate.c */
/* True if @bytes may be requested now (RateLimit=, or the tuner's pace while it yields); otherwise
 * arms the rate timer for when they may. */
bool hydrator_rate_allows(Hydrator *h, uint64_t bytes);

/* hydrator-retry.c */
void hydrator_handle_failure(Hydrator *h, const ReadRequest *req, int error);
/* Submits the retries that are due; false when the reader had no slot for one of them. */
bool hydrator_submit_due_retries(Hydrator *h);
void hydrator_rearm_retry_timer(Hydrator *h);

/* hydrator-checkpoint.c */
/* Loads the state of @key, or starts a fresh one (setting aside a file that cannot be used). */
int hydrator_load_state(Hydrator *h, const char *key);
/* Adds the time hydrated since the last call to the state; paused time does not count. */
void hydrator_account_active_time(Hydrator *h, uint64_t now);
/* Saves the state now; returns state_save()'s error, logged (at most once a minute). */
int hydrator_checkpoint(Hydrator *h);
/* Saves after each HYDRATOR_CHECKPOINT_PERMILLE of progress, HYDRATOR_CHECKPOINT_MIN_GAP_USEC
 * apart at least. */
void hydrator_maybe_checkpoint(Hydrator *h);
/* Every HYDRATOR_CHECKPOINT_INTERVAL_USEC while hydrating. */
int hydrator_on_checkpoint_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* hydrator-activity.c: every ACTIVITY_SAMPLE_USEC while the disk's counters are watched. */
int hydrator_on_activity(sd_event_source *s, uint64_t usec, void *userdata);
/* Tells the siblings what we read (completed, in flight) now. */
void hydrator_publish_reads(Hydrator *h);
/* Bytes our reads got from the device so far: those completed, the parts read of those not
 * complete yet (a device that returns a read in pieces: its disk counted them), and what the
 * discovery's threads read (thread-reads.h). */
uint64_t hydrator_bytes_read(const Hydrator *h);
/* hydrator_on_flushed() - the reader's flushed hook: publishes our reads to the siblings. */
void hydrator_on_flushed(Reader *r, void *userdata);

/* Bytes done of what is to be hydrated: the empty chunks of the snapshot's list left out. */
uint64_t hydrator_stored_done(const Hydrator *h);
