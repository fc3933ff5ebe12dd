/* SPDX-License-Identifier: MIT */
/*
 * aws-list-blocks SNAPSHOT-ID: ebs_list_snapshot_blocks() with the AWS_* environment, for the
 * tests (tests/aws/helper.sh): prints what the listing found, then the stored 512 KiB blocks as
 * ranges "FIRST-LAST", one a line. Exit 0, or 1 with the reason on stderr.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "aws-config.h"
#include "ebs.h"
#include "util.h"

int main(int argc, char **argv) {
        _cleanup_free_ char *why = NULL;
        AwsConfig c = {};
        AwsError e = {};
        EbsBlockList l;
        int r;

        if (argc != 2)
                return 2;
        curl_global_init(CURL_GLOBAL_DEFAULT);
        r = aws_config_load(&c, &why);
        if (r >= 0)
                r = ebs_list_snapshot_blocks(&c, argv[1], &l, &e, &why);
        aws_config_done(&c);
        curl_global_cleanup();
        if (r < 0) {
                fprintf(stderr, "%s\n", why ? why : "failed");
                return 1;
        }
        printf("pages=%u restarts=%u block_size=%" PRIu32 " volume_gib=%" PRId64 " blocks=%" PRIu64
               " stored=%" PRIu64 " past_end=%" PRIu64 "\n",
               l.pages, l.restarts, l.block_size, l.volume_size_gib, l.n_blocks, l.n_stored,
               l.past_end);
        for (uint64_t i = 0; i < l.n_blocks;) {
                uint64_t j = i;

                if (!ebs_block_stored(&l, i)) {
                        i++;
                        continue;
                }
                while (j + 1 < l.n_blocks && ebs_block_stored(&l, j + 1))
                        j++;
                printf("%" PRIu64 "-%" PRIu64 "\n", i, j);
                i = j + 1;
        }
        ebs_block_list_done(&l);
        return 0;
}
