/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the EBS direct APIs' answers (src/aws/ebs-blocks.c): a ListSnapshotBlocks
 * page and an error, parsed from any bytes with json-c. Whatever comes, the result is one of
 * the documented ones; a page taken holds at most a page of indexes in range, and a token of
 * the allowed characters; an error's words end within their buffers.
 */
#include <errno.h>
#include <string.h>

#include "ebs-blocks.h"
#include "fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *json = (const char *)data;
        EbsBlocksPage p;
        AwsError e;
        int r;

        r = ebs_parse_blocks_page(json, size, &p);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == 0) {
                fuzz_assert(p.n <= EBS_PAGE_BLOCKS_MAX);
                fuzz_assert(p.n == 0 || p.blocks);
                for (size_t i = 0; i < p.n; i++)
                        fuzz_assert(p.blocks[i] <= EBS_BLOCK_INDEX_MAX);
                fuzz_assert(strnlen(p.next_token, sizeof(p.next_token)) < sizeof(p.next_token));
                fuzz_assert(strspn(p.next_token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvw"
                                                 "xyz0123456789+/=") == strlen(p.next_token));
                fuzz_assert(p.block_size == EC2_UNKNOWN || p.block_size > 0);
                ebs_blocks_page_done(&p);
        }
        r = ebs_parse_error(json, size, 400, &e);
        fuzz_assert(r == 0 || r == -EBADMSG);
        fuzz_assert(strnlen(e.code, sizeof(e.code)) < sizeof(e.code));
        fuzz_assert(strnlen(e.message, sizeof(e.message)) < sizeof(e.message));
        fuzz_assert(e.code[0] != '\0'); /* 400 always names something */
        return 0;
}
