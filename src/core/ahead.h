/* SPDX-License-Identifier: MIT */
/*
 * Reads wanted ahead of the plan: the blocks the file-system discovery is about to read with
 * single blocking reads (group descriptors, bitmaps, AG headers, btree levels), in the order it
 * will read them. The hydrator fetches them first, at queue depth, so that the discovery finds
 * them warm instead of waiting for one cold read after another. A list of chunk runs with a
 * cursor; pure, no I/O.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "chunkmap.h"

typedef struct AheadRun {
        uint64_t first; /* chunk */
        uint64_t count;
} AheadRun;

typedef struct Ahead {
        AheadRun *runs;
        size_t n, allocated;
        size_t next; /* runs before it hold no chunk that is neither done nor busy */
} Ahead;

/*
 * ahead_add() - append the chunks that bytes [@offset, @offset + @length) of @m touch (cut off
 * at the end of the device), merged into the last run when they follow it or overlap it.
 * Return: 0 or -ENOMEM.
 */
int ahead_add(Ahead *a, const ChunkMap *m, uint64_t offset, uint64_t length);

/*
 * ahead_next() - the first chunk of the runs, from the cursor on and in their order, that is
 * neither done nor busy in @m, and the run of such chunks that follows it inside its run, at
 * most @max_count long. The cursor passes the runs it finds all claimed (their memory is
 * reused). Return: 0, or -ENOENT when none is left.
 */
int ahead_next(Ahead *a, const ChunkMap *m, uint64_t max_count, uint64_t *ret_first,
               uint64_t *ret_count);

/* ahead_pending() - runs not yet passed by the cursor. */
size_t ahead_pending(const Ahead *a);

/* ahead_done() - free the runs and empty @a. */
void ahead_done(Ahead *a);
