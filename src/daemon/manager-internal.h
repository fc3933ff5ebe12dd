/* SPDX-License-Identifier: MIT */
/*
 * What the files of one run share (manager.c sets it up and ends it, manager-discovery.c plans
 * it by the file systems it maps, manager-status.c reports on it). Not for use outside
 * src/daemon.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "bus.h"
#include "discovery.h"
#include "hydrator.h"
#include "record.h"
#include "report.h"

typedef struct Manager {
        sd_event *event;
        Hydrator *hydrator;
        HydrateBus *bus;
        char devnode[sizeof("/dev/") + KERNEL_NAME_MAX]; /* /dev/<kernel name>, for the journal */
        char *state_dir; /* the state directory's path, for messages */
        const char *sysfs_root;
        sd_event_source *bar_timer;
        sd_event_source *status_timer;
        sd_event_source *phase_timer;
        PlanProgress last_plan; /* as of the last STATUS= and record */
        bool bar;
        bool bar_drawn;
        int signal; /* the signal that stopped us, or 0 */
        /* The file systems are mapped while the hydrator reads what the mapping needs: */
        Discovery *discovery;
        const BlockDevice *dev;
        const HydrateSettings *settings;
        const char *key;
        bool started; /* the hydrator reads */
        bool planned; /* the layout joined the plan */
        bool already; /* the plan found nothing left to read: said as "already hydrated" */
        int code;     /* the exit status decided outside the hydrator, or -1 */
        /* The volume record for ebs-hydratectl wait (record.h): */
        int runtime_fd;      /* -1: none is written */
        char *runtime_dir;   /* its path, to open it again if it is replaced */
        VolumeRecord record; /* its identity fields; the rest comes from the hydrator */
        char record_text[RECORD_FILE_MAX]; /* what was last written, "" before */
        bool record_failed;                /* said once */
        bool record_unsaved;               /* the last one could not be written: */
        VolumeRecord record_last;          /* that one, tried again at each publication */
        /* What AWS said (manager-aws.c): */
        sd_event_source *aws_timer;
        sd_event_source *aws_inotify; /* the findings directory, when it exists at the start */
        uid_t aws_uid;                /* the helper's user, whose findings are believed */
        ino_t aws_ino;                /* the findings file last read: a new one is read again */
        struct timespec aws_mtime;
        off_t aws_size;
        const char *aws_reason; /* set: AWS said nothing is cold, and the run completed */
        AwsFindings aws;        /* what the findings file said last; aws_known: it said it */
        bool aws_known;
        bool aws_following;     /* AWS initializes the volume: no stage after the hot paths read */
        uint64_t aws_seen_usec; /* CLOCK_MONOTONIC: when findings were last read */
        bool aws_blocks_taken;  /* the snapshot's block list was taken, or said unavailable */
        bool aws_awaiting;      /* no data read before the helper's first word (or the wait) */
        bool aws_answered;      /* the helper has left findings for this run to read */
        uint64_t aws_await_until; /* CLOCK_MONOTONIC: the end of that wait */
        char aws_reason_buf[REPORT_WORDS_MAX * 2];
        char aws_noted[REPORT_LINE_MAX]; /* the line last said of findings that change nothing */
} Manager;

#define STATUS_INTERVAL_USEC (2 * USEC_PER_SEC) /* STATUS= and the record, at least */
#define PHASE_WATCH_USEC (250 * USEC_PER_MSEC)  /* a phase reached is told within this */

/* The progress bar on stderr (--progress): a frame now, the line wiped, a frame every 0.5 s. */
void manager_draw_bar(Manager *run);
void manager_clear_bar(Manager *run);
int manager_on_bar_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* Copies @s into @dst if it is a record word (printable ASCII, no space, fits), else "". */
void manager_set_record_word(char *dst, size_t size, const char *s);

/* The volume record for ebs-hydratectl wait, written when what it says changed; @forced:
 * the state to say instead of the hydrator's, or _RECORD_STATE_INVALID. */
void manager_publish_record(Manager *run, RecordState forced);
/* manager_settle_record() - at the end of the run: if the last record could not be written, try
 * once more, then over the old one in place, and as a last resort remove the old one (it would
 * say "hydrating" for a run that has ended), saying so. */
void manager_settle_record(Manager *run);

/* manager-aws.c: AWS's findings. manager_aws_init() before the run; manager_aws_check() reads
 * them if they changed and completes the run when they say nothing is cold (returns 1);
 * manager_aws_watch() checks again every second; manager_completed_by_aws() says so and gives
 * the exit status. */
void manager_aws_init(Manager *run);
int manager_aws_check(Manager *run);
int manager_aws_watch(Manager *run);
int manager_completed_by_aws(Manager *run);
/* manager_aws_record() - what AWS said, into the volume record (nothing without findings). */
void manager_aws_record(const Manager *run, VolumeRecord *r);
/* manager_aws_now() - the findings as of now: AWS's ETA counted down since the helper asked. */
void manager_aws_now(const Manager *run, AwsFindings *ret);

/* STATUS= for systemctl status (a no-op outside systemd), and the record with it. */
void manager_notify_status(Manager *run);
int manager_on_status_timer(sd_event_source *s, uint64_t usec, void *userdata);
int manager_on_phase_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* manager_start_discovery() - start mapping the file systems of the device in a thread of their
 * own: the reads the mapping needs go to the hydrator at once, and what it finds becomes the
 * plan (a failure to plan ends the run). Returns -errno, logged, if it cannot start. */
int manager_start_discovery(Manager *run);
