/* SPDX-License-Identifier: MIT */
/*
 * What AWS said about a volume (ebs-hydrate/findings.h): the record ebs-hydrate-aws writes
 * beside the volume's state and ebs-hydrated reads. Its text, checked strictly when read back
 * (the version, each value's syntax, the volume it names), and its file: replaced whole,
 * believed only when owned by root or by the AWS helper's own user.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <ebs-hydrate/findings.h>

#include "state.h"

#define FINDINGS_SUFFIX EBS_HYDRATE_FINDINGS_SUFFIX
#define FINDINGS_FILE_MAX 4096
#define FINDINGS_ID_MAX 64 /* snap-..., longer is not one */
#define FINDINGS_WORD_MAX 64
#define FINDINGS_TEXT_MAX 512 /* ERROR=, STATUS_ERROR= */
#define FINDINGS_UNKNOWN INT64_C(-1)

typedef enum FindingsSource {
        FINDINGS_SOURCE_SNAPSHOT,
        FINDINGS_SOURCE_EMPTY,
        FINDINGS_SOURCE_COPY,
        _FINDINGS_SOURCE_MAX,
        _FINDINGS_SOURCE_INVALID = -EINVAL,
} FindingsSource;

typedef struct AwsFindings {
        char volume_id[STATE_KEY_MAX + 1];
        uint64_t time_usec;
        char error[FINDINGS_TEXT_MAX]; /* "": AWS answered; the fields below are set */
        FindingsSource source;
        char snapshot_id[FINDINGS_ID_MAX];
        char source_volume_id[FINDINGS_ID_MAX]; /* FINDINGS_SOURCE_COPY's original */
        int64_t fast_restored;                  /* 1, 0, FINDINGS_UNKNOWN */
        int64_t size_gib;
        int64_t initialization_rate; /* MiB/s */
        char status_error[FINDINGS_TEXT_MAX];
        char initialization_state[FINDINGS_WORD_MAX];
        char initialization_type[FINDINGS_WORD_MAX];
        int64_t initialization_progress;      /* percent */
        int64_t initialization_eta;           /* seconds */
        int64_t blocks_stored;                /* of the snapshot, in <volume>.blocks */
        char blocks_error[FINDINGS_TEXT_MAX]; /* why the block list could not be had */
} AwsFindings;

/* findings_init() - nothing known about @volume_id yet. */
void findings_init(AwsFindings *f, const char *volume_id);

const char *findings_source_to_string(FindingsSource s);
FindingsSource findings_source_from_string(const char *s);

/* findings_dir() - where ebs-hydrate-aws leaves its findings: $EBS_HYDRATE_AWS_DIR (tests,
 * another layout), else its unit's state directory. findings_helper_uid(): its user, whose
 * files are believed (with root's); root's uid when there is no such user. */
const char *findings_dir(void);
uid_t findings_helper_uid(void);

/* findings_eta_at() - AWS's initialization ETA (seconds, as of @f's TIME_USEC) counted down to
 * @realtime_usec (CLOCK_REALTIME), never under 0; -1 when AWS gave none. A clock behind
 * TIME_USEC counts nothing off. */
int64_t findings_eta_at(const AwsFindings *f, uint64_t realtime_usec);

/* findings_verdict() - what @f means for the hydration: an EBS_HYDRATE_AWS_* word. */
const char *findings_verdict(const AwsFindings *f);

/* findings_format() - @f as its file's text. Its length, -ENOBUFS, or -EINVAL for a text
 * field with a newline or a control byte (it would forge a line). */
int findings_format(const AwsFindings *f, char *buf, size_t size);
/* findings_parse() - 0, or -EBADMSG: another version, a missing or repeated key, a value
 * that is not one. */
int findings_parse(const char *text, size_t size, AwsFindings *ret);

/*
 * The helper's files beside the volume's state (<volume_id><suffix>: .aws, .blocks):
 * findings_write_file() replaces one whole and synced, mode 0644; findings_read_file() reads
 * one whole if it is a regular file of at most @max_size bytes owned by root or @helper_uid
 * (-EPERM: planted by someone else; -EBADMSG: a link, FIFO, directory, or too big; -ENOENT).
 * -EINVAL for a volume id that is no state key.
 */
int findings_write_file(int dir_fd, const char *volume_id, const char *suffix, const void *data,
                        size_t size);
int findings_read_file(int dir_fd, const char *volume_id, const char *suffix, size_t max_size,
                       uid_t helper_uid, char **ret, size_t *ret_size);
/* findings_remove_file() - <volume_id><suffix> gone (never a link's target): 0, also when
 * there was none, or a negative errno. */
int findings_remove_file(int dir_fd, const char *volume_id, const char *suffix);

/* findings_save() - <volume>.aws in @dir_fd, replaced whole and synced, mode 0644. */
int findings_save(int dir_fd, const AwsFindings *f);
/*
 * findings_load() - <@volume_id>.aws in @dir_fd. 0; -ENOENT; -EPERM when owned by another
 * user than root and @helper_uid (a file planted by someone else is not believed); -EBADMSG
 * when it is not a regular file of at most FINDINGS_FILE_MAX bytes, does not parse, or names
 * another volume.
 */
int findings_load(int dir_fd, const char *volume_id, uid_t helper_uid, AwsFindings *ret);
