/* SPDX-License-Identifier: MIT */
/*
 * What AWS said about a volume: <volume>.aws beside the volume's state (/var/lib/ebs-hydrate),
 * written whole (rename) by ebs-hydrate-aws and read by ebs-hydrated; KEY=VALUE lines in the
 * style of os-release(5), lines starting with '#' ignored, unknown keys to be ignored. The
 * first line names the format's version. ebs-hydrate-aws prints the same lines on stdout.
 */
#ifndef EBS_HYDRATE_FINDINGS_H
#define EBS_HYDRATE_FINDINGS_H

#define EBS_HYDRATE_FINDINGS_SUFFIX ".aws"
#define EBS_HYDRATE_FINDINGS_VERSION 1

#define EBS_HYDRATE_FINDINGS_FORMAT "EBS_HYDRATE_AWS_FINDINGS" /* the version: 1 */
#define EBS_HYDRATE_FINDINGS_VOLUME_ID "VOLUME_ID"
#define EBS_HYDRATE_FINDINGS_TIME "TIME_USEC" /* when AWS answered, µs since the epoch */
/* Where the answer stops: set when AWS could not be asked (no IMDS, no credentials, denied,
 * throttled beyond the retries); one line saying why. The keys below are then absent. */
#define EBS_HYDRATE_FINDINGS_ERROR "ERROR"
#define EBS_HYDRATE_FINDINGS_SOURCE "SOURCE" /* EBS_HYDRATE_SOURCE_* */
#define EBS_HYDRATE_FINDINGS_SNAPSHOT_ID "SNAPSHOT_ID"
#define EBS_HYDRATE_FINDINGS_SOURCE_VOLUME_ID "SOURCE_VOLUME_ID" /* SOURCE=copy: of this volume */
#define EBS_HYDRATE_FINDINGS_FAST_RESTORED "FAST_RESTORED"       /* yes, no, unknown */
#define EBS_HYDRATE_FINDINGS_SIZE_GIB "SIZE_GIB"
#define EBS_HYDRATE_FINDINGS_INITIALIZATION_RATE "INITIALIZATION_RATE_MIBPS" /* provisioned */
/* DescribeVolumeStatus; STATUS_ERROR instead when it could not be had. */
#define EBS_HYDRATE_FINDINGS_STATUS_ERROR "STATUS_ERROR"
#define EBS_HYDRATE_FINDINGS_INITIALIZATION_STATE "INITIALIZATION_STATE"       /* AWS's word */
#define EBS_HYDRATE_FINDINGS_INITIALIZATION_TYPE "INITIALIZATION_TYPE"         /* AWS's word */
#define EBS_HYDRATE_FINDINGS_INITIALIZATION_PROGRESS "INITIALIZATION_PROGRESS" /* percent */
#define EBS_HYDRATE_FINDINGS_INITIALIZATION_ETA "INITIALIZATION_ETA_SECONDS"

/* The snapshot's block list (ListSnapshotBlocks): BLOCKS_STORED=N of the 512 KiB blocks are
 * stored, listed in <volume>.blocks; BLOCKS_ERROR instead when it could not be had. */
#define EBS_HYDRATE_FINDINGS_BLOCKS_STORED "BLOCKS_STORED"
#define EBS_HYDRATE_FINDINGS_BLOCKS_ERROR "BLOCKS_ERROR"

/*
 * <volume>.blocks: the 512 KiB blocks the volume's snapshot stores. KEY=VALUE lines as above,
 * ended by an empty line, then one zlib stream (RFC 1950) of unsigned LEB128 numbers, two per
 * run of stored blocks in offset order: the blocks not stored before it (since the end of the
 * run before), and its length less one. Runs neither overlap nor touch; the stream ends with
 * the last run. Last, the CRC-32 (zlib's) of every byte before it, little endian. Readers
 * check every count against the lines.
 */
#define EBS_HYDRATE_BLOCKS_SUFFIX ".blocks"
#define EBS_HYDRATE_BLOCKS_VERSION 1
#define EBS_HYDRATE_BLOCKS_FORMAT "EBS_HYDRATE_BLOCKS" /* the version: 1 */
#define EBS_HYDRATE_BLOCKS_SNAPSHOT_ID "SNAPSHOT_ID"
#define EBS_HYDRATE_BLOCKS_BLOCK_SIZE "BLOCK_SIZE" /* 524288 */
#define EBS_HYDRATE_BLOCKS_BLOCKS "BLOCKS"         /* of the snapshot's volume */
#define EBS_HYDRATE_BLOCKS_STORED "STORED"
#define EBS_HYDRATE_BLOCKS_RUNS "RUNS"

#define EBS_HYDRATE_SOURCE_SNAPSHOT "snapshot" /* created from SNAPSHOT_ID */
#define EBS_HYDRATE_SOURCE_EMPTY "empty"       /* created empty: nothing is cold */
#define EBS_HYDRATE_SOURCE_COPY "copy"         /* a copy of SOURCE_VOLUME_ID (CopyVolumes) */

/* What the findings mean for the hydration, in one word: the volume record's AWS=, the D-Bus
 * property Aws, ebs-hydratectl's AWS column, JSON and metrics. */
#define EBS_HYDRATE_AWS_EMPTY "empty"                 /* created empty: nothing to hydrate */
#define EBS_HYDRATE_AWS_FAST_RESTORED "fast-restored" /* nothing is cold */
#define EBS_HYDRATE_AWS_INITIALIZED "initialized"     /* AWS's initialization completed */
#define EBS_HYDRATE_AWS_INITIALIZING                                                       \
        "initializing"                            /* AWS initializes it (provisioned rate, \
                                                   * volume copy): ebs-hydrated follows */
#define EBS_HYDRATE_AWS_SNAPSHOT "snapshot"       /* restored from a snapshot: hydrated */
#define EBS_HYDRATE_AWS_UNAVAILABLE "unavailable" /* AWS could not be asked (ERROR=) */

#endif
