/* SPDX-License-Identifier: MIT */
/*
 * The chunk map: which fixed-size chunks of a device have been read ("done", persisted in the
 * state file) and which are claimed by this run ("busy": in flight, waiting for a retry, or
 * given up as unreadable). Completions arrive out of order, so this is a bitmap, not a cursor.
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
        uint64_t *busy;
} ChunkMap;

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
void chunkmap_set_busy(ChunkMap *m, uint64_t first, uint64_t count, bool busy);

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
/* chunkmap_bitmap_import() - replace the done bitmap; -EBADMSG if a tail bit past n_chunks is set.
 */
int chunkmap_bitmap_import(ChunkMap *m, const uint8_t *bits, size_t size);
