/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for blocklist_decode(), the reader of the snapshot's block list
 * (src/state/blocklist.c), by which the hydrator leaves blocks unread. Any bytes: a list that
 * decodes hands over its runs in offset order, within the volume, neither touching nor
 * overlapping, adding up to the stored count it states; encoded again from those runs it
 * decodes to the same runs, and the encoding is a fixed point.
 */
#include <stdlib.h>
#include <string.h>

#include "blocklist.h"
#include "fuzz-util.h"

#define FUZZ_BLOCKS_MAX (UINT64_C(1) << 20) /* re-encoded only up to 512 GiB: memory */

typedef struct Runs {
        uint64_t *bits; /* NULL: only checked */
        uint64_t n_blocks, end, stored, runs;
} Runs;

static int on_run(uint64_t first, uint64_t count, void *userdata) {
        Runs *s = userdata;

        fuzz_assert(count > 0);
        fuzz_assert(first >= s->end && (s->runs == 0 || first > s->end));
        fuzz_assert(first < s->n_blocks && count <= s->n_blocks - first);
        s->end = first + count;
        s->stored += count;
        s->runs++;
        if (s->bits)
                for (uint64_t i = first; i < first + count; i++)
                        s->bits[i / 64] |= UINT64_C(1) << (i % 64);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        BlockListInfo info, again;
        Runs s = {.n_blocks = BLOCKLIST_BLOCKS_MAX}, t;
        char *encoded = NULL, *encoded2 = NULL;
        size_t n, n2;

        if (blocklist_decode((const char *)data, size, &info, on_run, &s) < 0)
                return 0;
        fuzz_assert(info.n_blocks > 0 && info.n_blocks <= BLOCKLIST_BLOCKS_MAX);
        fuzz_assert(s.end <= info.n_blocks);
        fuzz_assert(s.stored == info.n_stored && s.runs == info.n_runs);
        fuzz_assert(state_key_valid(info.volume_id, strlen(info.volume_id)));
        if (info.n_blocks > FUZZ_BLOCKS_MAX)
                return 0;
        s = (Runs){.n_blocks = info.n_blocks,
                   .bits = calloc((size_t)(info.n_blocks + 63) / 64, sizeof(uint64_t))};
        fuzz_assert(s.bits);
        fuzz_assert(blocklist_decode((const char *)data, size, &info, on_run, &s) == 0);
        again = info;
        fuzz_assert(blocklist_encode(&again, s.bits, &encoded, &n) == 0);
        fuzz_assert(again.n_stored == info.n_stored && again.n_runs == info.n_runs);
        t = (Runs){.n_blocks = info.n_blocks};
        fuzz_assert(blocklist_decode(encoded, n, &again, on_run, &t) == 0);
        fuzz_assert(t.stored == info.n_stored && t.runs == info.n_runs);
        fuzz_assert(blocklist_encode(&again, s.bits, &encoded2, &n2) == 0);
        fuzz_assert(n == n2 && memcmp(encoded, encoded2, n) == 0);
        free(encoded);
        free(encoded2);
        free(s.bits);
        return 0;
}
