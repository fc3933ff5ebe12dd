/* SPDX-License-Identifier: MIT */
/*
 * The EBS direct APIs' ListSnapshotBlocks answer (API version 2019-11-02, REST-JSON; shapes from
 * the service model botocore ships): one page of the indexes of the blocks a snapshot stores,
 * the block size, the volume size and the token of the next page. Parsed with json-c, bounded
 * and checked: an answer is input, never trusted. Real servers send BlockIndex as a number;
 * moto's server mode sends it as a string of digits, which is accepted as the same number.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ec2-xml.h" /* AwsError, EC2_UNKNOWN */

#define EBS_API_VERSION "2019-11-02"
/* EBS's block: what the list counts in, and what the answer's BlockSize must say. */
#define EBS_BLOCK_SIZE 524288
/* A page: MaxResults is 100 to 10000. */
#define EBS_PAGE_BLOCKS_MAX 10000
/* NextToken (and pageToken): at most 256 of [A-Za-z0-9+/=]. */
#define EBS_TOKEN_MAX (256 + 1)
/* The largest index of a 64 TiB volume's blocks, with room: what a BlockIndex may be. */
#define EBS_BLOCK_INDEX_MAX INT32_MAX
/* JSON nesting deeper than this is no answer of this API. */
#define EBS_JSON_DEPTH_MAX 16

typedef struct EbsBlocksPage {
        uint32_t *blocks; /* indexes in the order of the answer (unsorted, duplicates kept) */
        size_t n;
        int64_t block_size;      /* bytes, or EC2_UNKNOWN when absent */
        int64_t volume_size_gib; /* or EC2_UNKNOWN */
        uint64_t expiry_usec;    /* when the block tokens (and NextToken) expire; 0 unknown */
        char next_token[EBS_TOKEN_MAX]; /* "": the last page */
} EbsBlocksPage;

/*
 * ebs_parse_blocks_page() - one ListSnapshotBlocks page. 0; -EBADMSG when it is not one (not
 * JSON, trailing bytes, nesting too deep, a known key with a value of the wrong type or range,
 * more than EBS_PAGE_BLOCKS_MAX blocks, a token of other characters); -ENOMEM. Unknown keys are
 * ignored. @ret is filled only on success (free with ebs_blocks_page_done()).
 */
int ebs_parse_blocks_page(const char *json, size_t size, EbsBlocksPage *ret);
void ebs_blocks_page_done(EbsBlocksPage *p);

/*
 * ebs_parse_error() - an error answer of the EBS direct APIs with HTTP @status: @ret's code is
 * the exception's name ("__type" when the body gives it, else the name the status and the
 * Reason imply: AccessDeniedException, ResourceNotFoundException, RequestThrottledException,
 * ValidationException, ...), its message "REASON: Message". 0, or -EBADMSG (then @ret still
 * holds the code the status implies).
 */
int ebs_parse_error(const char *json, size_t size, long status, AwsError *ret);
