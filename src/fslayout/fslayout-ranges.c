/* SPDX-License-Identifier: MIT */
/*
 * The ranges of a file system layout: the list the scanners fill, the normalisation that turns
 * it into sorted, merged ranges covering the device exactly (unknown bytes are used), and the
 * questions asked of a finished layout. Pure, no I/O.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "fslayout-scan.h"
#include "fslayout.h"
#include "string-table.h"
#include "util.h"

int fs_range_list_add(FsRangeList *l, uint64_t offset, uint64_t length, FsRangeKind kind) {
        FsRange *last = l->n > 0 ? &l->ranges[l->n - 1] : NULL;

        if (l->chunks)
                return fs_chunk_kinds_add(l->chunks, offset, length, kind);
        if (length == 0)
                return 0;
        length = MIN(length, UINT64_MAX - offset);
        if (last && last->kind == kind && last->offset + last->length == offset) {
                last->length += length;
                return 0;
        }
        if (ARRAY_GROW(l->ranges, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        l->ranges[l->n++] = (FsRange){.offset = offset, .length = length, .kind = kind};
        return 0;
}

int fs_range_list_append(FsRangeList *to, const FsRangeList *from) {
        for (size_t i = 0; i < from->n; i++) {
                const FsRange *r = &from->ranges[i];
                int e = fs_range_list_add(to, r->offset, r->length, r->kind);

                if (e < 0)
                        return e;
        }
        return 0;
}

void fs_hint_ahead(const FsLayoutHints *hints, const FsRangeList *l) {
        _cleanup_free_ ByteRange *v = NULL;

        if (!hints || !hints->ahead || l->n == 0)
                return;
        v = malloc(MIN(l->n, (size_t)FSLAYOUT_HINTS_MAX) * sizeof(ByteRange));
        if (!v)
                return;
        for (size_t done = 0; done < l->n;) {
                size_t n = MIN(l->n - done, (size_t)FSLAYOUT_HINTS_MAX);

                for (size_t i = 0; i < n; i++)
                        v[i] = (ByteRange){l->ranges[done + i].offset, l->ranges[done + i].length};
                hints->ahead(v, n, hints->userdata);
                done += n;
        }
}

void fs_range_list_done(FsRangeList *l) {
        free(l->ranges);
        *l = (FsRangeList){};
}

static const char *const fs_range_kind_table[_FS_RANGE_KIND_MAX] = {
        [FS_RANGE_METADATA] = "metadata",
        [FS_RANGE_USED] = "used",
        [FS_RANGE_FREE] = "free",
};

DEFINE_STRING_TABLE_TO_STRING(fs_range_kind, FsRangeKind)

/* A range's start (+1) or end (-1) at a position, for the sweep in fs_ranges_normalize(). */
typedef struct Edge {
        uint64_t position;
        FsRangeKind kind;
        int delta;
} Edge;

static int edge_compare(const void *a, const void *b) {
        const Edge *x = a, *y = b;

        return x->position < y->position ? -1 : x->position > y->position;
}

/* The kind that wins among the ranges open at a point; none open means unknown, so used. */
static FsRangeKind winning_kind(const size_t open[_FS_RANGE_KIND_MAX]) {
        for (FsRangeKind k = 0; k < _FS_RANGE_KIND_MAX; k++)
                if (open[k] > 0)
                        return k;
        return FS_RANGE_USED;
}

/* A range of no valid kind is not dropped: unknown, so used, it outranks free space. */
static size_t edges_of(const FsRange *in, size_t n, uint64_t size, Edge *edges) {
        size_t n_edges = 0;

        for (size_t i = 0; i < n; i++) {
                FsRangeKind kind =
                        (unsigned)in[i].kind < _FS_RANGE_KIND_MAX ? in[i].kind : FS_RANGE_USED;
                uint64_t start = in[i].offset, end;

                if (start >= size)
                        continue;
                end = start + MIN(in[i].length, size - start);
                if (end == start)
                        continue;
                edges[n_edges++] = (Edge){start, kind, +1};
                edges[n_edges++] = (Edge){end, kind, -1};
        }
        return n_edges;
}

int fs_ranges_normalize(const FsRange *in, size_t n, uint64_t size, FsRange **ret, size_t *ret_n) {
        _cleanup_free_ Edge *edges = NULL;
        FsRangeList out = {};
        size_t open[_FS_RANGE_KIND_MAX] = {}, n_edges, i = 0;
        uint64_t position = 0;
        int r = 0;

        if (n > SIZE_MAX / 2 / sizeof(Edge))
                return -ENOMEM;
        edges = malloc(MAX(n, (size_t)1) * 2 * sizeof(Edge));
        if (!edges)
                return -ENOMEM;
        n_edges = edges_of(in, n, size, edges);
        qsort(edges, n_edges, sizeof(Edge), edge_compare);

        while (r >= 0 && i < n_edges) {
                uint64_t here = edges[i].position;

                r = fs_range_list_add(&out, position, here - position, winning_kind(open));
                position = here;
                for (; i < n_edges && edges[i].position == here; i++)
                        open[edges[i].kind] += (size_t)edges[i].delta;
        }
        if (r >= 0)
                r = fs_range_list_add(&out, position, size - position, winning_kind(open));
        if (r < 0) {
                fs_range_list_done(&out);
                return r;
        }
        *ret = out.ranges;
        *ret_n = out.n;
        return 0;
}

int fslayout_check(const FsLayout *l, uint64_t device_size) {
        uint64_t position = 0;

        for (size_t i = 0; i < l->n_ranges; i++) {
                const FsRange *r = &l->ranges[i];

                if (r->offset != position || r->length == 0 || r->length > device_size - position)
                        return -EBADMSG;
                if ((unsigned)r->kind >= _FS_RANGE_KIND_MAX)
                        return -EBADMSG;
                if (i > 0 && l->ranges[i - 1].kind == r->kind)
                        return -EBADMSG;
                position += r->length;
        }
        return position == device_size ? 0 : -EBADMSG;
}

/* Index of the first range that ends after @offset (n_ranges if none). */
static size_t first_ending_after(const FsLayout *l, uint64_t offset) {
        size_t lo = 0, hi = l->n_ranges;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const FsRange *r = &l->ranges[mid];

                if (r->offset + r->length <= offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

const FsRange *fslayout_find(const FsLayout *l, uint64_t offset) {
        size_t i = first_ending_after(l, offset);

        return i < l->n_ranges && l->ranges[i].offset <= offset ? &l->ranges[i] : NULL;
}

uint64_t fslayout_bytes_in(const FsLayout *l, uint64_t offset, uint64_t length, FsRangeKind kind) {
        uint64_t end = offset + MIN(length, UINT64_MAX - offset), sum = 0;

        if (l->chunks)
                return fs_chunk_kinds_bytes_in(l->chunks, offset, length, kind);
        for (size_t i = first_ending_after(l, offset); i < l->n_ranges; i++) {
                const FsRange *r = &l->ranges[i];
                uint64_t start = MAX(r->offset, offset), stop = MIN(r->offset + r->length, end);

                if (r->offset >= end)
                        break;
                if (r->kind == kind && stop > start)
                        sum += stop - start;
        }
        return sum;
}

uint64_t fslayout_bytes(const FsLayout *l, FsRangeKind kind) {
        return fslayout_bytes_in(l, 0, UINT64_MAX, kind);
}

void fslayout_free(FsLayout *l) {
        if (!l)
                return;
        free(l->ranges);
        fs_chunk_kinds_free(l->chunks);
        for (size_t i = 0; i < l->n_notes; i++)
                free(l->notes[i]);
        free(l->notes);
        *l = (FsLayout){};
}
