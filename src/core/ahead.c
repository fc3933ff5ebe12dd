/* SPDX-License-Identifier: MIT */
/*
 * The list of reads wanted ahead of the plan (ahead.h): chunk runs in the order the discovery
 * asked for them, and a cursor past those that are all claimed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ahead.h"
#include "alloc-util.h"
#include "util.h"

int ahead_add(Ahead *a, const ChunkMap *m, uint64_t offset, uint64_t length) {
        AheadRun *last = a->n > a->next ? &a->runs[a->n - 1] : NULL;
        uint64_t first, end;

        if (length == 0 || offset >= m->size)
                return 0;
        length = MIN(length, m->size - offset);
        first = offset / m->chunk_size;
        end = (offset + length - 1) / m->chunk_size + 1;
        if (last && first >= last->first && first <= last->first + last->count) {
                last->count = MAX(last->count, end - last->first);
                return 0;
        }
        /* Reuse the room of the runs the cursor has passed. */
        if (a->next > 0 && a->next == a->n)
                a->n = a->next = 0;
        else if (a->next > 0 && a->next >= a->allocated / 2) {
                memmove(a->runs, a->runs + a->next, (a->n - a->next) * sizeof(AheadRun));
                a->n -= a->next;
                a->next = 0;
        }
        if (ARRAY_GROW(a->runs, a->allocated, a->n + 1) < 0)
                return -ENOMEM;
        a->runs[a->n++] = (AheadRun){first, end - first};
        return 0;
}

static bool claimable(const ChunkMap *m, uint64_t c) {
        return !chunkmap_is_done(m, c) && !chunkmap_is_busy(m, c);
}

int ahead_next(Ahead *a, const ChunkMap *m, uint64_t max_count, uint64_t *ret_first,
               uint64_t *ret_count) {
        for (; a->next < a->n; a->next++) {
                AheadRun *run = &a->runs[a->next];
                uint64_t end = run->first + run->count, c = run->first, n = 0;

                while (c < end && !claimable(m, c))
                        c++;
                /* What lies before the first claimable chunk stays claimed: a run shrinks. */
                run->count = end - c;
                run->first = c;
                if (c >= end)
                        continue;
                while (n < max_count && c + n < end && claimable(m, c + n))
                        n++;
                *ret_first = c;
                *ret_count = n;
                return 0;
        }
        return -ENOENT;
}

size_t ahead_pending(const Ahead *a) {
        return a->n - a->next;
}

void ahead_done(Ahead *a) {
        free(a->runs);
        *a = (Ahead){};
}
