/* SPDX-License-Identifier: MIT */
/*
 * The chunk map: which fixed-size chunks of a device have been read ("done", persisted in the
 * state file) and which are claimed by this run ("busy": in flight, waiting for a retry, or
 * given up as unreadable). Completions arrive out of order, so this is a bitmap, not a cursor.
 * Memory: the done bitmap is one bit a chunk (2 MiB at CHUNK_COUNT_TARGET); the busy bitmap is
 * paged, and only pages that hold a busy chunk exist (a few, around the reads in flight).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define CHUNK_SIZE_MIN (UINT32_C(512) << 10) /* the EBS snapshot block size */
#define CHUNK_SIZE_MAX (UINT32_C(1) << 30)
#define CHUNK_COUNT_TARGET (UINT64_C(1) << 24) /* keeps the bitmap at 2 MiB up to 8 TiB */

typedef struct ChunkMap {
        uint64_t size;       /* device size in bytes */
        uint32_t chunk_size; /* power of two, >= CHUNK_SIZE_MIN */
        uint64_t n_chunks;   /* the last chunk may be shorter */
        uint64_t n_done;
        uint64_t *done;
        uint64_t **busy_pages; /* CHUNKMAP_BUSY_PAGE_CHUNKS bits each; NULL: none of them busy */
        uint16_t *busy_counts; /* busy chunks per page */
        uint64_t n_busy_pages;
        uint64_t n_busy_allocated; /* pages that exist now */
} ChunkMap;

#define CHUNKMAP_BUSY_PAGE_WORDS 64u /* 512 bytes */
#define CHUNKMAP_BUSY_PAGE_CHUNKS (CHUNKMAP_BUSY_PAGE_WORDS * 64u)

/* chunk_size_for() - CHUNK_SIZE_MIN, doubled until the map has at most CHUNK_COUNT_TARGET chunks.
 */
uint32_t chunk_size_for(uint64_t size);

/* chunk_size_valid() - a power of two within [CHUNK_SIZE_MIN, CHUNK_SIZE_MAX]. */
bool chunk_size_valid(uint64_t chunk_size);

/* chunkmap_new() - an empty map; -EINVAL unless @chunk_size is a power of two in range and @size >
 * 0. */
int chunkmap_new(ChunkMap **ret, uint64_t size, uint32_t chunk_size);
ChunkMap *chunkmap_free(ChunkMap *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(ChunkMap *, chunkmap_free)

uint64_t chunkmap_offset(const ChunkMap *m, uint64_t chunk);
/* chunkmap_range_bytes() - bytes covered by chunks [first, first + count), the short tail included.
 */
uint64_t chunkmap_range_bytes(const ChunkMap *m, uint64_t first, uint64_t count);

bool chunkmap_is_done(const ChunkMap *m, uint64_t chunk);
bool chunkmap_is_busy(const ChunkMap *m, uint64_t chunk);
bool chunkmap_complete(const ChunkMap *m);
uint64_t chunkmap_done_bytes(const ChunkMap *m);

/* chunkmap_mark_done() - mark [first, first + count) done and not busy; returns how many were new.
 */
uint64_t chunkmap_mark_done(ChunkMap *m, uint64_t first, uint64_t count);
/* chunkmap_set_busy() - mark [first, first + count) busy or not. Marking busy may need a page of
 * the busy bitmap: 0, or -ENOMEM (then nothing changed). Clearing never fails. */
int chunkmap_set_busy(ChunkMap *m, uint64_t first, uint64_t count, bool busy);

/* chunkmap_memory() - bytes the map holds on the heap now: the map, its done bitmap and the
 * pages of its busy bitmap. */
size_t chunkmap_memory(const ChunkMap *m);

/*
 * chunkmap_next_free() - find the first chunk at or after @from that is neither done nor busy,
 * and the run of such chunks that follows it, at most @max_count long.
 * Returns 0 with *ret_first and *ret_count set, or -ENOENT if there is none up to the end.
 */
int chunkmap_next_free(const ChunkMap *m, uint64_t from, uint64_t max_count, uint64_t *ret_first,
                       uint64_t *ret_count);

/* Persisted form of the done bitmap: chunk i is bit (i % 8) of byte i / 8; unused tail bits are 0.
 */
size_t chunkmap_bitmap_bytes(const ChunkMap *m);
void chunkmap_bitmap_export(const ChunkMap *m, uint8_t *ret);
/* chunkmap_bitmap_export_part() - bytes [@offset, @offset + @n) of the persisted form, so that a
 * writer needs no copy of the whole bitmap. */
void chunkmap_bitmap_export_part(const ChunkMap *m, size_t offset, uint8_t *ret, size_t n);
/* chunkmap_bitmap_import() - replace the done bitmap; -EBADMSG if a tail bit past n_chunks is set.
 */
int chunkmap_bitmap_import(ChunkMap *m, const uint8_t *bits, size_t size);
/* chunkmap_bitmap_import_part() - replace bytes [@offset, @offset + @n) of the done bitmap, n_done
 * kept right; -EBADMSG if they reach past the bitmap or set a tail bit past n_chunks. */
int chunkmap_bitmap_import_part(ChunkMap *m, size_t offset, const uint8_t *bits, size_t n);
