/* SPDX-License-Identifier: MIT */
/*
 * The order of a file-system-aware hydration: every chunk of the chunk map gets the stage of
 * the most urgent bytes it covers (file system metadata, then hot paths, then used blocks, then
 * free space), and the hydrator reads stage by stage, each in offset order. Without a layout
 * every chunk is "used": the whole device in offset order, as before. While the file systems
 * are still being mapped, a plan is provisional from its first stage not known yet on
 * ("pending"): nothing is read from there on, and no stage from there on is reported reached.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chunkmap.h"
#include "fslayout.h"
#include "state.h"
#include "two-bit-array.h"
#include "util.h"

/* In reading order. */
typedef enum PlanStage {
        PLAN_STAGE_METADATA,
        PLAN_STAGE_HOT,
        PLAN_STAGE_USED,
        PLAN_STAGE_FREE,
        _PLAN_STAGE_MAX, /* also: nothing left to read ("done") */
} PlanStage;

typedef struct Plan {
        uint64_t n_chunks;
        TwoBitArray *stage; /* a PlanStage per chunk; NULL: every chunk is used */
        uint64_t total_bytes[_PLAN_STAGE_MAX];
        uint64_t done_bytes[_PLAN_STAGE_MAX];
        PlanStage last; /* the last stage read: PLAN_STAGE_FREE, or PLAN_STAGE_USED (Mode=used) */
        bool fs_aware;  /* something is not "used": metadata, hot paths or free space known */
        PlanStage pending; /* the first stage not known yet, _PLAN_STAGE_MAX when all are */
        /* The snapshot's block list: chunks it stores nothing of (a bit each, borrowed; NULL:
         * no list). They are in no stage: never read, and counted here instead. */
        const uint64_t *empty;
        uint64_t empty_bytes, empty_done;
} Plan;

/* What the status line, the bus and the summary show of a plan. */
typedef struct PlanProgress {
        bool fs_aware;
        bool skip_free;    /* Mode=used */
        PlanStage current; /* the first stage not done, _PLAN_STAGE_MAX when all are */
        bool mapping;      /* the layout is not known yet: no stage is (plan_set_pending()) */
        bool hot_pending;  /* HotPaths= is not resolved yet */
        uint64_t done_bytes[_PLAN_STAGE_MAX];
        uint64_t total_bytes[_PLAN_STAGE_MAX];
        bool listed;          /* the snapshot's block list is known */
        uint64_t empty_bytes; /* of chunks the snapshot stores nothing of */
        uint64_t empty_done;  /* of those, done (all but reads that were in flight) */
} PlanProgress;

/*
 * plan_new() - classify the chunks of @m.
 * @layout: from fslayout_discover() (its ranges) or fslayout_discover_chunks() (its chunk kinds,
 *          which the plan takes over: layout->chunks becomes NULL), or NULL: every chunk is used.
 * @hot: byte ranges of hot files (any order, may overlap, may reach past the end), or NULL.
 * @skip_free: Mode=used: free chunks are never read, and the plan is complete without them.
 * Done bytes per stage are counted from @m's done bitmap. Nothing is pending. Memory: two bits a
 * chunk when the plan knows more than "all used" (the chunk kinds' own, when it takes them
 * over), else nothing.
 * Return: 0; -EINVAL if @layout's chunks are not @m's; -ENOMEM.
 */
int plan_new(Plan **ret, const ChunkMap *m, FsLayout *layout, const ByteRange *hot, size_t n_hot,
             bool skip_free);
Plan *plan_free(Plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free)

/*
 * plan_set_pending() - @stage is the first stage whose content is not known yet:
 * PLAN_STAGE_METADATA while the file systems are being mapped (the plan is a placeholder),
 * PLAN_STAGE_HOT while HotPaths= is being resolved, _PLAN_STAGE_MAX once all is known.
 * plan_next() finds nothing in it or after it, and plan_current() goes no further than it,
 * unless every chunk is done: a provisional plan never says a stage is done that may not be.
 */
void plan_set_pending(Plan *p, PlanStage stage);

/* plan_known() - nothing pending: the plan is final. */
bool plan_known(const Plan *p);

/*
 * plan_add_hot() - @hot joins the plan as plan_new() would have taken it: every chunk it touches
 * is read with the hot paths unless it holds metadata. For a plan whose chunk kinds were taken
 * over from a layout (fslayout_discover_chunks()), which cannot be planned from again: the
 * stages change in place, no second copy. Bytes per stage are counted again from @m; what is
 * pending does not change. Return: 0, or -ENOMEM (the plan unchanged).
 */
int plan_add_hot(Plan *p, const ChunkMap *m, const ByteRange *hot, size_t n_hot);

PlanStage plan_stage_of(const Plan *p, uint64_t chunk);

/*
 * The snapshot's block list, by chunk: plan_empty_new() makes a bitmap of @m's chunks with
 * every chunk empty, plan_empty_stored() takes a run of stored 512 KiB blocks out of it (a
 * chunk larger than a block stays in while any of its blocks is stored; blocks past the device
 * are ignored). plan_set_empty() gives it to the plan (borrowed, NULL: none), which counts its
 * chunks apart from every stage; the caller marks them done in @m.
 */
int plan_empty_new(const ChunkMap *m, uint64_t **ret);
void plan_empty_stored(const ChunkMap *m, uint64_t *empty, uint64_t first_block, uint64_t count);
void plan_set_empty(Plan *p, const ChunkMap *m, const uint64_t *empty);
bool plan_is_empty(const Plan *p, uint64_t chunk);

/* plan_memory() - bytes the plan holds on the heap. */
size_t plan_memory(const Plan *p);

/*
 * plan_next() - like chunkmap_next_free(), within @stage: the first chunk at or after @from
 * of @stage that is neither done nor busy, and the run of such chunks that follows it, at
 * most @max_count long. Returns 0, or -ENOENT if there is none up to the end (always for a
 * stage that is pending, or after one).
 */
int plan_next(const Plan *p, const ChunkMap *m, PlanStage stage, uint64_t from, uint64_t max_count,
              uint64_t *ret_first, uint64_t *ret_count);

/* plan_mark_done() - chunkmap_mark_done(), counting the newly done bytes in their stages. */
uint64_t plan_mark_done(Plan *p, ChunkMap *m, uint64_t first, uint64_t count);

/* plan_complete() - is every chunk of every stage up to p->last done, and nothing pending (or
 * every chunk of the device done)? */
bool plan_complete(const Plan *p);
/* plan_current() - the first stage up to p->last that is not done, no further than the pending
 * one; _PLAN_STAGE_MAX when there is none. */
PlanStage plan_current(const Plan *p);
/* plan_get_progress() - what the reports show. A placeholder plan (metadata pending) has no
 * stages to show: its totals are zero. */
void plan_get_progress(const Plan *p, PlanProgress *ret);

/* plan_stage_to_string() - "metadata", "hot-paths", "used", "free", "done" (_PLAN_STAGE_MAX). */
const char *plan_stage_to_string(PlanStage s);
/* plan_stage_to_human() - "metadata", "hot paths", "used", "free space", "done". */
const char *plan_stage_to_human(PlanStage s);

/*
 * plan_progress_format() - "metadata done, hot paths 63%, used 12%, free space next" into
 * @buf: every stage with bytes, the current one and those partly done in percent (rounded
 * down), a skipped free stage as "free space skipped (Mode=used)", hot paths still being
 * resolved as "hot paths being mapped". Returns @buf, which PLAN_PROGRESS_FORMAT_MAX holds.
 */
#define PLAN_PROGRESS_FORMAT_MAX 160
char *plan_progress_format(char *buf, size_t size, const PlanProgress *pp);
