/* SPDX-License-Identifier: MIT */
/*
 * The volume record: one file per running or finished instance, <volume>.record in the runtime
 * directory (/run/ebs-hydrate), KEY=VALUE lines in the style of os-release(5), lines starting
 * with '#' ignored. `ebs-hydratectl wait` and other programs read it without the bus; it is
 * replaced whole (rename), never seen half-written. Unknown keys are to be ignored.
 */
#ifndef EBS_HYDRATE_RECORD_H
#define EBS_HYDRATE_RECORD_H

#include <ebs-hydrate/volume.h>

#define EBS_HYDRATE_RECORD_SUFFIX ".record"

#define EBS_HYDRATE_RECORD_VOLUME_ID "VOLUME_ID"     /* vol-..., or the state key */
#define EBS_HYDRATE_RECORD_KERNEL_NAME "KERNEL_NAME" /* nvme1n1 */
#define EBS_HYDRATE_RECORD_DEVICE_NAME "DEVICE_NAME" /* the mapping name (sdf), or empty */
#define EBS_HYDRATE_RECORD_STATE "STATE"             /* EBS_HYDRATE_STATE_* */
#define EBS_HYDRATE_RECORD_PHASE "PHASE"             /* EBS_HYDRATE_PHASE_* */
#define EBS_HYDRATE_RECORD_SIZE_BYTES "SIZE_BYTES"
#define EBS_HYDRATE_RECORD_HYDRATED_BYTES "HYDRATED_BYTES"
/* Of SIZE_BYTES, what the snapshot stores nothing of (its block list): never read, counted in
 * HYDRATED_BYTES; progress is (HYDRATED - EMPTY) / (SIZE - EMPTY). Absent: 0. */
#define EBS_HYDRATE_RECORD_EMPTY_BYTES "EMPTY_BYTES"
#define EBS_HYDRATE_RECORD_ERRORS "ERRORS"                   /* unreadable ranges */
#define EBS_HYDRATE_RECORD_FREE_SPACE_COLD "FREE_SPACE_COLD" /* 1: Mode=used, free space unread */
#define EBS_HYDRATE_RECORD_FS_AWARE "FS_AWARE"               /* 1: the plan knew the file systems */
#define EBS_HYDRATE_RECORD_DISKSEQ "DISKSEQ"                 /* the disk's diskseq, or 0 */
#define EBS_HYDRATE_RECORD_PID "PID"                         /* the writer */
#define EBS_HYDRATE_RECORD_START_TIME "START_TIME" /* the writer's start time, proc(5) field 22 */
/* What AWS said (ebs-hydrate/findings.h), when the run has findings: */
#define EBS_HYDRATE_RECORD_AWS "AWS"                         /* EBS_HYDRATE_AWS_* */
#define EBS_HYDRATE_RECORD_AWS_SNAPSHOT_ID "AWS_SNAPSHOT_ID" /* snap-..., or absent */
#define EBS_HYDRATE_RECORD_AWS_PROGRESS "AWS_PROGRESS"       /* AWS's initialization, percent */
#define EBS_HYDRATE_RECORD_AWS_ETA_SECONDS "AWS_ETA_SECONDS" /* ... and its estimate */

#endif
