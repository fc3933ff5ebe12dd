/* SPDX-License-Identifier: MIT */
/*
 * The volume record: a small, world-readable file per volume in the runtime directory
 * (/run/ebs-hydrate/<key>.record) that says where its hydration stands. ebs-hydrated rewrites it
 * (atomically) whenever the state or the stage it reads changes, and as its progress goes; it
 * stays after the run ends, until the next boot. "ebs-hydratectl wait" follows these files: they
 * need no privilege (the state directory is root's alone), no bus, and they outlive the process,
 * so that a service ordered after hydration starts at once on a volume already hydrated.
 *
 * The format is lines of KEY=VALUE, like os-release(5): unknown keys are ignored (a newer daemon
 * may add some), values are printable ASCII without spaces.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ebs-hydrate/record.h>

#include "state.h"
#include "util.h"

#define RECORD_SUFFIX EBS_HYDRATE_RECORD_SUFFIX
#define RECORD_FILE_MAX 4096 /* a record is a few hundred bytes; anything larger is not ours */
#define RECORD_WORD_MAX 32   /* STATE= and PHASE= values */
#define RECORD_SNAPSHOT_ID_MAX 64
#define RECORD_PAD_BYTES 512 /* a record is written at least this long (record_save()) */

/* What a record says of the run (STATE=). */
typedef enum RecordState {
        RECORD_HYDRATING, /* also: mapping the file systems */
        RECORD_PAUSED,
        RECORD_COMPLETED, /* every chunk read, or a Mode=used run done (free_space_cold) */
        RECORD_FAILED,    /* ended with unreadable ranges, or failed */
        RECORD_STOPPED,   /* stopped, or the device went away: the next run resumes */
        RECORD_DISABLED,  /* Enabled=no: nothing will be read */
        _RECORD_STATE_MAX,
        _RECORD_STATE_INVALID = -EINVAL,
} RecordState;

/* The stage being read (PHASE=), in reading order, as the plan and D-Bus Phase name them. */
typedef enum RecordPhase {
        RECORD_PHASE_METADATA,
        RECORD_PHASE_HOT,
        RECORD_PHASE_USED,
        RECORD_PHASE_FREE,
        RECORD_PHASE_DONE, /* nothing left to read */
        _RECORD_PHASE_MAX,
        _RECORD_PHASE_INVALID = -EINVAL,
} RecordPhase;

typedef struct VolumeRecord {
        char volume_id[STATE_KEY_MAX + 1];
        char kernel_name[KERNEL_NAME_MAX];
        char device_name[KERNEL_NAME_MAX]; /* the block-device mapping (sdf), or "" */
        RecordState state;
        RecordPhase phase;
        uint64_t size_bytes;
        uint64_t hydrated_bytes;
        uint64_t empty_bytes; /* of size_bytes: the snapshot stores nothing of them */
        uint64_t errors;      /* unreadable ranges */
        bool free_space_cold;
        bool fs_aware;       /* the plan knows metadata and hot paths; without, all is "used" */
        uint64_t diskseq;    /* the kernel's number for this attachment of the disk; 0 unknown */
        pid_t pid;           /* the ebs-hydrated that wrote it */
        uint64_t start_time; /* when it started (proc(5) starttime: clock ticks after boot),
                              * which tells it from a later process of the same PID; 0 unknown */
        char aws[RECORD_WORD_MAX];                    /* EBS_HYDRATE_AWS_*, "" without findings */
        char aws_snapshot_id[RECORD_SNAPSHOT_ID_MAX]; /* "" unknown */
        int64_t aws_progress;                         /* percent; < 0 unknown (and when absent) */
        int64_t aws_eta_seconds;                      /* < 0 unknown */
} VolumeRecord;

const char *record_state_to_string(RecordState s);
RecordState record_state_from_string(const char *s);
/* "metadata", "hot-paths", "used", "free", "done" */
const char *record_phase_to_string(RecordPhase p);
RecordPhase record_phase_from_string(const char *s);

/* record_format() - @r as its file's text in @buf. Returns its length, or -ENOBUFS. */
int record_format(const VolumeRecord *r, char *buf, size_t size);

/*
 * record_parse() - read the text of a record (@size bytes, any bytes). Returns 0, or -EBADMSG if
 * VOLUME_ID=, STATE= or PHASE= is missing or invalid, a number is not one, a value is too long or
 * holds anything but printable ASCII, or a line is not KEY=VALUE. Pure.
 */
int record_parse(const char *text, size_t size, VolumeRecord *ret);

/*
 * record_save() - write @r as "<volume_id>.record" in @dir_fd, through a temporary file and a
 * rename (mode 0644; write_file_atomic_at()), so that a reader sees the old record or the new
 * one; padded by a comment to RECORD_PAD_BYTES, the room its run's last record needs in place.
 * Returns 0 or -errno.
 */
int record_save(int dir_fd, const VolumeRecord *r);

/*
 * record_rewrite_in_place() - when record_save() cannot (a full file system), write @r over the
 * record of the same run (PID= and START_TIME= as in @r) in the blocks it has: the new text and
 * a comment padding it to the old length, in one write. -ESTALE when the record there is not
 * this run's, -ENOSPC when the new text is longer, or another -errno.
 */
int record_rewrite_in_place(int dir_fd, const VolumeRecord *r);

/*
 * record_load_at() - read the record @name in @dir_fd: only a regular file of at most
 * RECORD_FILE_MAX bytes is opened (never a FIFO, a device or a link). Returns 0, -ENOENT,
 * -EBADMSG (not a record, or one whose VOLUME_ID= does not match its name), -EFBIG, -EBADFD (not
 * a regular file) or another -errno.
 */
int record_load_at(int dir_fd, const char *name, VolumeRecord *ret);

/* record_name_key() - the key of a file name "<key>.record" into @ret_key, or false. */
bool record_name_key(const char *name, char ret_key[static STATE_KEY_MAX + 1]);
