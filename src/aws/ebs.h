/* SPDX-License-Identifier: MIT */
/*
 * ListSnapshotBlocks (the EBS direct APIs): every block a snapshot stores, all pages of it,
 * as a bitmap over the volume's 512 KiB blocks. Through aws_call() (signed as "ebs", retried on
 * throttling and server errors); a page token that expired (INVALID_PAGE_TOKEN, or a listing
 * older than EBS_LIST_RESTART_USEC: tokens live 60 minutes) starts the listing over, at most
 * EBS_LIST_RESTARTS_MAX times.
 */
#pragma once

#include <stdint.h>

#include "aws-call.h"
#include "ebs-blocks.h"

#define EBS_LIST_RESTART_USEC (55 * 60 * USEC_PER_SEC)
#define EBS_LIST_RESTARTS_MAX 2
/* EBS's largest volume: 64 TiB, 128 Mi blocks, a bitmap of 16 MiB. */
#define EBS_VOLUME_GIB_MAX (64 * 1024)
/* A block size other than EBS's is accepted when a power of two in this range (moto's 512):
 * its blocks are counted in the 512 KiB blocks they touch. */
#define EBS_BLOCK_SIZE_MIN 512
#define EBS_BLOCK_SIZE_MAX (16u << 20)

typedef struct EbsBlockList {
        uint64_t *bits;          /* bit i: the volume's 512 KiB block i is stored */
        uint64_t n_blocks;       /* the volume's 512 KiB blocks: VolumeSize GiB × 2048 */
        uint64_t n_stored;       /* bits set */
        uint64_t past_end;       /* indexes the answer gave past the volume's end: ignored */
        int64_t volume_size_gib; /* VolumeSize */
        uint32_t block_size;     /* BlockSize as answered */
        unsigned pages;          /* of the listing that completed */
        unsigned restarts;       /* listings started over */
} EbsBlockList;

/*
 * ebs_list_snapshot_blocks() - every block @snapshot_id stores. 0; -EPROTO with @ret_error
 * (AccessDeniedException, ResourceNotFoundException, RequestThrottledException after the
 * retries, ...); -EBADMSG for an answer that is not one (a page that is not JSON, no
 * VolumeSize, a block size EBS does not use, pages that disagree, no end); -EINVAL for a
 * snapshot id that is not one; a transport -errno; -ENOMEM. @ret_why says it in one sentence.
 */
int ebs_list_snapshot_blocks(AwsConfig *c, const char *snapshot_id, EbsBlockList *ret,
                             AwsError *ret_error, char **ret_why);
void ebs_block_list_done(EbsBlockList *l);
/* ebs_block_stored() - whether the volume's 512 KiB block @i is stored. */
static inline bool ebs_block_stored(const EbsBlockList *l, uint64_t i) {
        return i < l->n_blocks && (l->bits[i / 64] >> (i % 64)) & 1;
}
