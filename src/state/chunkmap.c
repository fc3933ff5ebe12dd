/* SPDX-License-Identifier: MIT */
/*
 * Chunk map: two bitmaps (done, busy) over the chunks of a device, with a scan for the next run
 * of chunks still to read. Word-at-a-time scanning keeps a 16 M-chunk map cheap to walk. The busy
 * bitmap is paged: a page exists only while one of its chunks is busy, so it costs a few pages
 * around the reads in flight, not a bit per chunk of the device.
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

/* Word @w of the busy bitmap; a page that does not exist is all clear. */
static uint64_t busy_word(const ChunkMap *m, uint64_t w) {
        const uint64_t *page = m->busy_pages[w / CHUNKMAP_BUSY_PAGE_WORDS];

        return page ? page[w % CHUNKMAP_BUSY_PAGE_WORDS] : 0;
}

static bool busy_get(const ChunkMap *m, uint64_t i) {
        return busy_word(m, i / WORD_BITS) >> (i % WORD_BITS) & 1u;
}

/* Makes the pages of the busy bitmap that hold chunks [first, end) exist; on failure, drops again
 * those it made (none of their chunks is busy yet). */
static int busy_pages_make(ChunkMap *m, uint64_t first, uint64_t end) {
        uint64_t first_page = first / CHUNKMAP_BUSY_PAGE_CHUNKS;
        uint64_t end_page = DIV_ROUND_UP(end, CHUNKMAP_BUSY_PAGE_CHUNKS);

        for (uint64_t p = first_page; p < end_page; p++) {
                if (m->busy_pages[p])
                        continue;
                m->busy_pages[p] = calloc(CHUNKMAP_BUSY_PAGE_WORDS, sizeof(uint64_t));
                if (!m->busy_pages[p]) {
                        while (p-- > first_page)
                                if (m->busy_counts[p] == 0) {
                                        free(m->busy_pages[p]);
                                        m->busy_pages[p] = NULL;
                                        m->n_busy_allocated--;
                                }
                        return -ENOMEM;
                }
                m->n_busy_allocated++;
        }
        return 0;
}

/* Marks chunk @i busy; its page exists. */
static void busy_mark(ChunkMap *m, uint64_t i) {
        uint64_t p = i / CHUNKMAP_BUSY_PAGE_CHUNKS, *page = m->busy_pages[p];
        uint64_t bit = i % CHUNKMAP_BUSY_PAGE_CHUNKS;

        assert(page);
        if (!bit_get(page, bit)) {
                bit_set(page, bit, true);
                m->busy_counts[p]++;
        }
}

/* Clears chunk @i, dropping its page when that was the page's last busy chunk. */
static void busy_clear(ChunkMap *m, uint64_t i) {
        uint64_t p = i / CHUNKMAP_BUSY_PAGE_CHUNKS, *page = m->busy_pages[p];
        uint64_t bit = i % CHUNKMAP_BUSY_PAGE_CHUNKS;

        if (!page || !bit_get(page, bit))
                return;
        bit_set(page, bit, false);
        assert(m->busy_counts[p] > 0);
        if (--m->busy_counts[p] == 0) {
                free(page);
                m->busy_pages[p] = NULL;
                m->n_busy_allocated--;
        }
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
        m->n_busy_pages = DIV_ROUND_UP(m->n_chunks, CHUNKMAP_BUSY_PAGE_CHUNKS);
        m->done = calloc(n_words(m->n_chunks), sizeof(uint64_t));
        m->busy_pages = calloc(m->n_busy_pages, sizeof(*m->busy_pages));
        m->busy_counts = calloc(m->n_busy_pages, sizeof(*m->busy_counts));
        if (!m->done || !m->busy_pages || !m->busy_counts) {
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
        for (uint64_t p = 0; m->busy_pages && p < m->n_busy_pages; p++)
                free(m->busy_pages[p]);
        free(m->busy_pages);
        free(m->busy_counts);
        free(m);
        return NULL;
}

size_t chunkmap_memory(const ChunkMap *m) {
        return sizeof(*m) + n_words(m->n_chunks) * sizeof(uint64_t) +
               m->n_busy_pages * (sizeof(*m->busy_pages) + sizeof(*m->busy_counts)) +
               m->n_busy_allocated * CHUNKMAP_BUSY_PAGE_WORDS * sizeof(uint64_t);
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
        return busy_get(m, chunk);
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
                busy_clear(m, i);
        }
        m->n_done += fresh;
        assert(m->n_done <= m->n_chunks); /* counted once per chunk: "complete" means every one */
        return fresh;
}

int chunkmap_set_busy(ChunkMap *m, uint64_t first, uint64_t count, bool busy) {
        uint64_t end = MIN(first + count, m->n_chunks);

        if (first >= end)
                return 0;
        if (busy && busy_pages_make(m, first, end) < 0)
                return -ENOMEM;
        for (uint64_t i = first; i < end; i++)
                if (busy)
                        busy_mark(m, i);
                else
                        busy_clear(m, i);
        return 0;
}

static bool chunk_free(const ChunkMap *m, uint64_t i) {
        return !bit_get(m->done, i) && !busy_get(m, i);
}

int chunkmap_next_free(const ChunkMap *m, uint64_t from, uint64_t max_count, uint64_t *ret_first,
                       uint64_t *ret_count) {
        uint64_t i = from, count = 0;

        /* Skip whole words in which every chunk is taken, then finish bit by bit. */
        while (i < m->n_chunks) {
                uint64_t w = i / WORD_BITS;
                uint64_t taken = m->done[w] | busy_word(m, w);

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

static uint8_t done_byte(const ChunkMap *m, size_t b) {
        return (uint8_t)(m->done[b / 8] >> (8 * (b % 8)));
}

void chunkmap_bitmap_export_part(const ChunkMap *m, size_t offset, uint8_t *ret, size_t n) {
        assert(offset <= chunkmap_bitmap_bytes(m) && n <= chunkmap_bitmap_bytes(m) - offset);

        for (size_t b = 0; b < n; b++)
                ret[b] = done_byte(m, offset + b);
}

void chunkmap_bitmap_export(const ChunkMap *m, uint8_t *ret) {
        chunkmap_bitmap_export_part(m, 0, ret, chunkmap_bitmap_bytes(m));
}

int chunkmap_bitmap_import_part(ChunkMap *m, size_t offset, const uint8_t *bits, size_t n) {
        size_t size = chunkmap_bitmap_bytes(m);

        if (offset > size || n > size - offset)
                return -EBADMSG;
        /* The last byte's bits past the last chunk must be clear. */
        if (n > 0 && offset + n == size && m->n_chunks % 8 != 0 &&
            (bits[n - 1] >> (m->n_chunks % 8)) != 0)
                return -EBADMSG;

        for (size_t i = 0; i < n; i++) {
                size_t b = offset + i;
                uint64_t *word = &m->done[b / 8];
                unsigned shift = 8 * (b % 8);

                m->n_done -= (uint64_t)__builtin_popcount(done_byte(m, b));
                m->n_done += (uint64_t)__builtin_popcount(bits[i]);
                *word = (*word & ~(UINT64_C(0xff) << shift)) | (uint64_t)bits[i] << shift;
        }
        return 0;
}

int chunkmap_bitmap_import(ChunkMap *m, const uint8_t *bits, size_t size) {
        if (size != chunkmap_bitmap_bytes(m))
                return -EBADMSG;
        return chunkmap_bitmap_import_part(m, 0, bits, size);
}
