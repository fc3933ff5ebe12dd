/* SPDX-License-Identifier: MIT */
/*
 * The snapshot's block list (ebs-hydrate/findings.h, <volume>.blocks): which 512 KiB blocks of
 * a volume its snapshot stores. ebs-hydrate-aws writes it from ListSnapshotBlocks' answer; the
 * hydrator reads it, run by run, into whatever it keeps (it never holds a bitmap of blocks).
 * Compact: runs of stored blocks as LEB128 numbers in one zlib stream, so that a volume whose
 * snapshot stores a few extents takes bytes, and the worst (every other block of 64 TiB) a few
 * MiB. Every count is checked when read back; the file is believed only from root or the AWS
 * helper's user, like the findings.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ebs-hydrate/findings.h>

#include "findings.h"
#include "state.h"

#define BLOCKLIST_SUFFIX EBS_HYDRATE_BLOCKS_SUFFIX
#define BLOCKLIST_BLOCK_SIZE UINT64_C(524288)
/* 64 TiB, EBS's largest volume, in 512 KiB blocks. */
#define BLOCKLIST_BLOCKS_MAX (UINT64_C(1) << 27)
#define BLOCKLIST_HEADER_MAX 1024
/* Larger than the worst list can be (every other block of 64 TiB compresses to a few MiB). */
#define BLOCKLIST_FILE_MAX (UINT64_C(64) << 20)

typedef struct BlockListInfo {
        char volume_id[STATE_KEY_MAX + 1];
        char snapshot_id[FINDINGS_ID_MAX];
        uint64_t n_blocks; /* the snapshot's volume, in 512 KiB blocks */
        uint64_t n_stored;
        uint64_t n_runs;
} BlockListInfo;

/* A run of stored blocks [@first, @first + @count), in offset order; 0 or a negative errno,
 * which ends the decoding with it. */
typedef int (*blocklist_run_t)(uint64_t first, uint64_t count, void *userdata);

/*
 * blocklist_encode() - the file's bytes for @info (its ids and n_blocks; n_stored and n_runs
 * are counted here) and @bits (bit i of word i / 64: block i is stored). 0, -EINVAL for ids or
 * a size that are not valid, -ENOMEM.
 */
int blocklist_encode(BlockListInfo *info, const uint64_t *bits, char **ret, size_t *ret_size);
/*
 * blocklist_decode() - check the file's bytes and hand every run to @f (NULL: only check).
 * 0; -EBADMSG for another version, a missing or repeated line, a count that does not add up,
 * runs out of order, overlapping, touching or past the end, a stream that is corrupt or has
 * bytes after its end. On an error what @f was given must be thrown away.
 */
int blocklist_decode(const char *data, size_t size, BlockListInfo *ret, blocklist_run_t f,
                     void *userdata);

/* blocklist_save() - <volume>.blocks in @dir_fd, replaced whole and synced, mode 0644. */
int blocklist_save(int dir_fd, BlockListInfo *info, const uint64_t *bits);
/* blocklist_remove() - <@volume_id>.blocks in @dir_fd gone: 0 (also when there was none), or
 * a negative errno. */
int blocklist_remove(int dir_fd, const char *volume_id);
/*
 * blocklist_load() - <@volume_id>.blocks in @dir_fd through blocklist_decode(). 0; -ENOENT;
 * -EPERM when owned by another user than root and @helper_uid; -EBADMSG when it is not a
 * regular file of at most BLOCKLIST_FILE_MAX bytes, does not decode, or names another volume.
 */
int blocklist_load(int dir_fd, const char *volume_id, uid_t helper_uid, BlockListInfo *ret,
                   blocklist_run_t f, void *userdata);
