/* SPDX-License-Identifier: MIT */
/* ListSnapshotBlocks, every page, into a bitmap of the volume's blocks (ebs.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebs.h"
#include "parse.h"
#include "time-util.h"
#include "util.h"

static bool snapshot_id_valid(const char *s) {
        size_t n = strlen(s);

        return n > 5 && n < 64 && strncmp(s, "snap-", 5) == 0 &&
               strspn(s + 5, "0123456789abcdef") == n - 5;
}

static bool block_size_valid(int64_t b) {
        return b >= EBS_BLOCK_SIZE_MIN && b <= EBS_BLOCK_SIZE_MAX && (b & (b - 1)) == 0;
}

void ebs_block_list_done(EbsBlockList *l) {
        free(l->bits);
        *l = (EbsBlockList){};
}

/* The first page says how large the volume is, in which blocks; the others must agree. */
static int take_geometry(EbsBlockList *l, const EbsBlocksPage *p, char **ret_why) {
        if (p->volume_size_gib == EC2_UNKNOWN || p->block_size == EC2_UNKNOWN)
                return aws_why(ret_why, -EBADMSG,
                               "EBS's ListSnapshotBlocks answer gives no VolumeSize or BlockSize");
        if (l->bits)
                return p->volume_size_gib == l->volume_size_gib && p->block_size == l->block_size
                               ? 0
                               : aws_why(ret_why, -EBADMSG,
                                         "EBS's ListSnapshotBlocks pages disagree on the volume "
                                         "(%" PRId64 " GiB in %" PRId64 "-byte blocks, then "
                                         "%" PRId64 " GiB in %u-byte blocks)",
                                         l->volume_size_gib, (int64_t)l->block_size,
                                         p->volume_size_gib, (unsigned)p->block_size);
        if (!block_size_valid(p->block_size))
                return aws_why(ret_why, -EBADMSG,
                               "EBS answered a BlockSize of %" PRId64 " bytes, which is no "
                               "block size EBS uses",
                               p->block_size);
        if (p->volume_size_gib > EBS_VOLUME_GIB_MAX)
                return aws_why(ret_why, -EBADMSG,
                               "EBS answered a VolumeSize of %" PRId64 " GiB, over EBS's "
                               "largest volume",
                               p->volume_size_gib);
        l->volume_size_gib = p->volume_size_gib;
        l->block_size = (uint32_t)p->block_size;
        l->n_blocks = (uint64_t)p->volume_size_gib * (UINT64_C(1) << 30) / EBS_BLOCK_SIZE;
        l->bits = calloc((l->n_blocks + 63) / 64, sizeof(uint64_t));
        return l->bits ? 0 : -ENOMEM;
}

/* Marks the 512 KiB blocks each of @p's blocks touches. */
static void take_blocks(EbsBlockList *l, const EbsBlocksPage *p) {
        for (size_t i = 0; i < p->n; i++) {
                uint64_t start = (uint64_t)p->blocks[i] * l->block_size;
                uint64_t first = start / EBS_BLOCK_SIZE;
                uint64_t last = (start + l->block_size - 1) / EBS_BLOCK_SIZE;

                if (first >= l->n_blocks) {
                        l->past_end++;
                        continue;
                }
                for (uint64_t b = first; b <= MIN(last, l->n_blocks - 1); b++)
                        l->bits[b / 64] |= UINT64_C(1) << (b % 64);
        }
}

/* One listing from the first page; -ESTALE when its token expired (start over). */
static int list_once(AwsConfig *c, const char *path, EbsBlockList *l, AwsError *ret_error,
                     char **ret_why) {
        char token[EBS_TOKEN_MAX] = "";
        uint64_t start = now_usec(CLOCK_MONOTONIC);

        for (;;) {
                _cleanup_free_ char *query = NULL, *encoded = NULL;
                AwsHttpResponse a = {};
                EbsBlocksPage p;
                int k;

                if (token[0] && now_usec(CLOCK_MONOTONIC) - start > EBS_LIST_RESTART_USEC)
                        return -ESTALE; /* the next token dies before the listing ends */
                encoded = token[0] ? aws_uri_encode(token, false) : NULL;
                if ((token[0] && !encoded) ||
                    asprintf(&query, "maxResults=%d%s%s", EBS_PAGE_BLOCKS_MAX,
                             token[0] ? "&pageToken=" : "", strempty(encoded)) < 0)
                        return -ENOMEM;
                k = aws_call(c,
                             &(AwsCall){.service = "ebs",
                                        .name = "EBS",
                                        .endpoint = &c->ebs,
                                        .method = "GET",
                                        .path = path,
                                        .query = query,
                                        .parse_error = ebs_parse_error},
                             &a, ret_error, ret_why);
                if (k == -EPROTO && token[0] && streq(ret_error->code, "ValidationException") &&
                    strncmp(ret_error->message, "INVALID_PAGE_TOKEN", 18) == 0)
                        return -ESTALE;
                if (k < 0)
                        return k;
                k = ebs_parse_blocks_page(a.body, a.size, &p);
                aws_http_response_done(&a);
                if (k == -EBADMSG)
                        return aws_why(ret_why, k, "EBS's ListSnapshotBlocks answer is not valid");
                if (k < 0)
                        return k;
                k = take_geometry(l, &p, ret_why);
                if (k >= 0) {
                        take_blocks(l, &p);
                        l->pages++;
                        /* a server that never ends: more pages than blocks could fill */
                        if (p.next_token[0] && l->pages > l->n_blocks / 100 + 16)
                                k = aws_why(ret_why, -EBADMSG,
                                            "EBS's ListSnapshotBlocks does not end (%u pages)",
                                            l->pages);
                        (void)snprintf(token, sizeof(token), "%s", p.next_token);
                }
                ebs_blocks_page_done(&p);
                if (k < 0)
                        return k;
                if (!token[0])
                        return 0;
        }
}

int ebs_list_snapshot_blocks(AwsConfig *c, const char *snapshot_id, EbsBlockList *ret,
                             AwsError *ret_error, char **ret_why) {
        _cleanup_free_ char *path = NULL;
        EbsBlockList l = {};
        int k;

        *ret_error = (AwsError){};
        if (!snapshot_id_valid(snapshot_id))
                return aws_why(ret_why, -EINVAL, "'%s' is not a snapshot id",
                               CESCAPE(snapshot_id, SIZE_MAX, CESCAPE_MAX(64)));
        if (asprintf(&path, "/snapshots/%s/blocks", snapshot_id) < 0)
                return -ENOMEM;
        for (;;) {
                k = list_once(c, path, &l, ret_error, ret_why);
                if (k != -ESTALE)
                        break;
                if (l.restarts >= EBS_LIST_RESTARTS_MAX) {
                        k = aws_why(ret_why, -EPROTO,
                                    "EBS's ListSnapshotBlocks page token expired %u times; "
                                    "giving up",
                                    l.restarts + 1);
                        break;
                }
                unsigned restarts = l.restarts + 1;
                ebs_block_list_done(&l);
                l.restarts = restarts;
        }
        if (k < 0) {
                ebs_block_list_done(&l);
                return k;
        }
        for (uint64_t i = 0; i < (l.n_blocks + 63) / 64; i++)
                l.n_stored += (uint64_t)__builtin_popcountll(l.bits[i]);
        *ret = l;
        return 0;
}
