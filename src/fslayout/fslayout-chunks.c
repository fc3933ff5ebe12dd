/* SPDX-License-Identifier: MIT */
/*
 * The layout by chunk (FsChunkKinds in fslayout.h): what the scanners report, applied as it comes
 * to two bits a chunk, so that mapping a 64 TiB device costs the same few MiB however many ranges
 * its file systems have. The last range is held back while the next one may still extend it, so
 * that a free run the scanners hand over in pieces frees the chunks it covers whole. Until a range
 * covers less than the whole device, every chunk is of one kind and no array is made: a device
 * with nothing on it costs nothing. Pure, no I/O.
 */
#include <errno.h>
#include <stdlib.h>

#include "fslayout.h"
#include "util.h"

int fs_chunk_kinds_new(FsChunkKinds **ret, uint64_t size, uint32_t chunk_size) {
        FsChunkKinds *k;

        if (size == 0 || chunk_size == 0)
                return -EINVAL;
        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        k->size = size;
        k->chunk_size = chunk_size;
        k->n_chunks = DIV_ROUND_UP(size, chunk_size);
        k->uniform = FS_CHUNK_UNKNOWN;
        *ret = k;
        return 0;
}

FsChunkKinds *fs_chunk_kinds_free(FsChunkKinds *k) {
        if (!k)
                return NULL;
        two_bit_array_free(k->kinds);
        free(k);
        return NULL;
}

/* Chunks [first, stop) are of @kind at most. While every chunk is of one kind and these are all
 * of them, no array is needed. */
static int lower(FsChunkKinds *k, uint64_t first, uint64_t stop, unsigned kind) {
        int r;

        if (!k->kinds && first == 0 && stop == k->n_chunks) {
                k->uniform = MIN(k->uniform, kind);
                return 0;
        }
        if (!k->kinds) {
                r = two_bit_array_new(&k->kinds, k->n_chunks, k->uniform);
                if (r < 0)
                        return r;
        }
        two_bit_array_lower(k->kinds, first, stop - first, kind);
        return 0;
}

/* A range of metadata or used bytes makes every chunk it touches that urgent; a free range frees
 * only the chunks it covers whole (the last chunk of the device may be short). */
static int apply(FsChunkKinds *k, FsRange r) {
        uint64_t end, first, stop;

        if (r.length == 0 || r.offset >= k->size)
                return 0;
        end = r.offset + MIN(r.length, k->size - r.offset);
        if ((unsigned)r.kind >= _FS_RANGE_KIND_MAX)
                r.kind = FS_RANGE_USED; /* unknown: used */
        if (r.kind == FS_RANGE_FREE) {
                first = DIV_ROUND_UP(r.offset, k->chunk_size);
                stop = end == k->size ? k->n_chunks : end / k->chunk_size;
        } else {
                first = r.offset / k->chunk_size;
                stop = DIV_ROUND_UP(end, k->chunk_size);
        }
        return stop > first ? lower(k, first, stop, (unsigned)r.kind) : 0;
}

int fs_chunk_kinds_add(FsChunkKinds *k, uint64_t offset, uint64_t length, FsRangeKind kind) {
        FsRange *p = &k->pending;
        int r;

        if (length == 0)
                return 0;
        length = MIN(length, UINT64_MAX - offset);
        if (p->length > 0 && p->kind == kind && p->offset + p->length == offset) {
                p->length += MIN(length, UINT64_MAX - p->offset - p->length);
                return 0;
        }
        r = apply(k, *p);
        *p = (FsRange){.offset = offset, .length = length, .kind = kind};
        return r;
}

int fs_chunk_kinds_flush(FsChunkKinds *k) {
        int r = apply(k, k->pending);

        k->pending = (FsRange){};
        return r;
}

int fs_chunk_kinds_from_layout(FsChunkKinds **ret, const FsLayout *l, uint64_t size,
                               uint32_t chunk_size) {
        FsChunkKinds *k = NULL;
        int r;

        r = fs_chunk_kinds_new(&k, size, chunk_size);
        for (size_t i = 0; r >= 0 && i < l->n_ranges; i++)
                r = fs_chunk_kinds_add(k, l->ranges[i].offset, l->ranges[i].length,
                                       l->ranges[i].kind);
        if (r >= 0)
                r = fs_chunk_kinds_flush(k);
        if (r < 0) {
                fs_chunk_kinds_free(k);
                return r;
        }
        *ret = k;
        return 0;
}

TwoBitArray *fs_chunk_kinds_take(FsChunkKinds *k) {
        if (!k->kinds && two_bit_array_new(&k->kinds, k->n_chunks, k->uniform) < 0)
                return NULL;
        return TAKE_PTR(k->kinds);
}

bool fs_chunk_kinds_uniform(const FsChunkKinds *k, unsigned *ret) {
        if (k->kinds)
                return false;
        *ret = k->uniform;
        return true;
}

FsRangeKind fs_chunk_kind(const FsChunkKinds *k, uint64_t chunk) {
        unsigned v = k->kinds ? two_bit_array_get(k->kinds, chunk) : k->uniform;

        return v == FS_CHUNK_UNKNOWN ? FS_RANGE_USED : (FsRangeKind)v;
}

/* Bytes of [@start, @stop) (within one chunk, @c) if the chunk is of @kind. */
static uint64_t part_of(const FsChunkKinds *k, uint64_t c, uint64_t start, uint64_t stop,
                        FsRangeKind kind) {
        return stop > start && fs_chunk_kind(k, c) == kind ? stop - start : 0;
}

/* How many of the chunks [first, first + count) are of @kind (unknown ones are used). */
static uint64_t count_kind(const FsChunkKinds *k, uint64_t first, uint64_t count,
                           FsRangeKind kind) {
        uint64_t n;

        if (!k->kinds)
                return fs_chunk_kind(k, first) == kind ? count : 0;
        n = two_bit_array_count(k->kinds, first, count, kind);
        if (kind == FS_RANGE_USED)
                n += two_bit_array_count(k->kinds, first, count, FS_CHUNK_UNKNOWN);
        return n;
}

uint64_t fs_chunk_kinds_bytes_in(const FsChunkKinds *k, uint64_t offset, uint64_t length,
                                 FsRangeKind kind) {
        uint64_t end, first, last, sum;

        if (offset >= k->size || length == 0)
                return 0;
        end = offset + MIN(length, k->size - offset);
        first = offset / k->chunk_size;
        last = (end - 1) / k->chunk_size;
        if (first == last)
                return part_of(k, first, offset, end, kind);
        /* The chunks at both ends in part, those between whole (counted a word at a time). */
        sum = part_of(k, first, offset, (first + 1) * k->chunk_size, kind) +
              part_of(k, last, last * k->chunk_size, end, kind);
        if (last > first + 1)
                sum += count_kind(k, first + 1, last - first - 1, kind) * k->chunk_size;
        return sum;
}

size_t fs_chunk_kinds_memory(const FsChunkKinds *k) {
        return sizeof(*k) + (k->kinds ? two_bit_array_memory(k->kinds) : 0);
}
