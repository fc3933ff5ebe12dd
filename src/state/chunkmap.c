/* SPDX-License-Identifier: MIT */
/*
 * Chunk map: two bitmaps (done, busy) over the chunks of a device, with a scan for the next run
 * of chunks still to read. Word-at-a-time scanning keeps a 16 M-chunk map cheap to walk.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunkmap.h"
#include "util.h"

#define WORD_BITS 64u

static uint64_t n_words(uint64_t n_chunks) {
        return DIV_ROUND_UP(n_chunks, WORD_BITS);
}

static bool bit_get(const uint64_t *map, uint64_t i) {
        return map[i / WORD_BITS] >> (i % WORD_BITS) & 1u;
}

static void bit_set(uint64_t *map, uint64_t i, bool v) {
        uint64_t mask = UINT64_C(1) << (i % WORD_BITS);

        if (v)
                map[i / WORD_BITS] |= mask;
        else
                map[i / WORD_BITS] &= ~mask;
}

uint32_t chunk_size_for(uint64_t size) {
        uint32_t c = CHUNK_SIZE_MIN;

        while (c < CHUNK_SIZE_MAX && DIV_ROUND_UP(size, c) > CHUNK_COUNT_TARGET)
                c <<= 1;
        return c;
}

bool chunk_size_valid(uint64_t chunk_size) {
        return chunk_size >= CHUNK_SIZE_MIN && chunk_size <= CHUNK_SIZE_MAX &&
               (chunk_size & (chunk_size - 1)) == 0;
}

int chunkmap_new(ChunkMap **ret, uint64_t size, uint32_t chunk_size) {
        ChunkMap *m;

        if (size == 0 || !chunk_size_valid(chunk_size))
                return -EINVAL;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->size = size;
        m->chunk_size = chunk_size;
        m->n_chunks = DIV_ROUND_UP(size, chunk_size);
        m->done = calloc(n_words(m->n_chunks), sizeof(uint64_t));
        m->busy = calloc(n_words(m->n_chunks), sizeof(uint64_t));
        if (!m->done || !m->busy) {
                chunkmap_free(m);
                return -ENOMEM;
        }

        *ret = m;
        return 0;
}

ChunkMap *chunkmap_free(ChunkMap *m) {
        if (!m)
                return NULL;
        free(m->done);
        free(m->busy);
        free(m);
        return NULL;
}

uint64_t chunkmap_offset(const ChunkMap *m, uint64_t chunk) {
        return chunk * m->chunk_size;
}

uint64_t chunkmap_range_bytes(const ChunkMap *m, uint64_t first, uint64_t count) {
        uint64_t start = chunkmap_offset(m, first);
        uint64_t end = chunkmap_offset(m, first + count);

        assert(first < m->n_chunks && count > 0);

        return MIN(end, m->size) - start;
}

bool chunkmap_is_done(const ChunkMap *m, uint64_t chunk) {
        assert(chunk < m->n_chunks);
        return bit_get(m->done, chunk);
}

bool chunkmap_is_busy(const ChunkMap *m, uint64_t chunk) {
        assert(chunk < m->n_chunks);
        return bit_get(m->busy, chunk);
}

bool chunkmap_complete(const ChunkMap *m) {
        return m->n_done == m->n_chunks;
}

uint64_t chunkmap_done_bytes(const ChunkMap *m) {
        uint64_t bytes = m->n_done * m->chunk_size;
        uint64_t last = m->n_chunks - 1;

        if (chunkmap_is_done(m, last))
                bytes -= (uint64_t)m->chunk_size - chunkmap_range_bytes(m, last, 1);
        assert(bytes <= m->size);
        return bytes;
}

uint64_t chunkmap_mark_done(ChunkMap *m, uint64_t first, uint64_t count) {
        uint64_t fresh = 0;

        for (uint64_t i = first; i < first + count && i < m->n_chunks; i++) {
                if (!bit_get(m->done, i)) {
                        bit_set(m->done, i, true);
                        fresh++;
                }
                bit_set(m->busy, i, false);
        }
        m->n_done += fresh;
        assert(m->n_done <= m->n_chunks); /* counted once per chunk: "complete" means every one */
        return fresh;
}

void chunkmap_set_busy(ChunkMap *m, uint64_t first, uint64_t count, bool busy) {
        for (uint64_t i = first; i < first + count && i < m->n_chunks; i++)
                bit_set(m->busy, i, busy);
}

static bool chunk_free(const ChunkMap *m, uint64_t i) {
        return !bit_get(m->done, i) && !bit_get(m->busy, i);
}

int chunkmap_next_free(const ChunkMap *m, uint64_t from, uint64_t max_count, uint64_t *ret_first,
                       uint64_t *ret_count) {
        uint64_t i = from, count = 0;

        /* Skip whole words in which every chunk is taken, then finish bit by bit. */
        while (i < m->n_chunks) {
                uint64_t w = i / WORD_BITS;
                uint64_t taken = m->done[w] | m->busy[w];

                taken |= (UINT64_C(1) << (i % WORD_BITS)) - 1; /* bits before i do not count */
                if (taken != UINT64_MAX) {
                        i = w * WORD_BITS + (uint64_t)__builtin_ctzll(~taken);
                        break;
                }
                i = (w + 1) * WORD_BITS;
        }
        if (i >= m->n_chunks)
                return -ENOENT;

        while (count < max_count && i + count < m->n_chunks && chunk_free(m, i + count))
                count++;

        *ret_first = i;
        *ret_count = count;
        return 0;
}

size_t chunkmap_bitmap_bytes(const ChunkMap *m) {
        return DIV_ROUND_UP(m->n_chunks, 8);
}

void chunkmap_bitmap_export(const ChunkMap *m, uint8_t *ret) {
        size_t n = chunkmap_bitmap_bytes(m);

        for (size_t b = 0; b < n; b++)
                ret[b] = (uint8_t)(m->done[b / 8] >> (8 * (b % 8)));
}

int chunkmap_bitmap_import(ChunkMap *m, const uint8_t *bits, size_t size) {
        uint64_t n_done = 0;

        if (size != chunkmap_bitmap_bytes(m))
                return -EBADMSG;
        if (m->n_chunks % 8 != 0 && (bits[size - 1] >> (m->n_chunks % 8)) != 0)
                return -EBADMSG;

        memset(m->done, 0, n_words(m->n_chunks) * sizeof(uint64_t));
        for (size_t b = 0; b < size; b++) {
                m->done[b / 8] |= (uint64_t)bits[b] << (8 * (b % 8));
                n_done += (uint64_t)__builtin_popcount(bits[b]);
        }
        m->n_done = n_done;
        return 0;
}
