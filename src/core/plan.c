/* SPDX-License-Identifier: MIT */
/*
 * The hydration plan: two bits per chunk say in which stage it is read (none at all while
 * nothing is known but "used"). A chunk is as urgent as the most urgent byte it covers, so a
 * chunk that holds a little metadata and much free space is read with the metadata. The stages
 * are the layout's chunk kinds, translated in place. Pure: no I/O.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <ebs-hydrate/volume.h>
#include <string.h>

#include "plan.h"
#include "progress.h"
#include "record.h"
#include "string-table.h"
#include "util.h"

static const char *const stage_human[_PLAN_STAGE_MAX + 1] = {
        [PLAN_STAGE_METADATA] = "metadata", [PLAN_STAGE_HOT] = "hot paths",
        [PLAN_STAGE_USED] = "used",         [PLAN_STAGE_FREE] = "free space",
        [_PLAN_STAGE_MAX] = "done",
};

/* The stages' names are the record's phases (ebs-hydrate/volume.h), in the same order. */
_Static_assert((int)RECORD_PHASE_METADATA == (int)PLAN_STAGE_METADATA &&
                       (int)RECORD_PHASE_HOT == (int)PLAN_STAGE_HOT &&
                       (int)RECORD_PHASE_USED == (int)PLAN_STAGE_USED &&
                       (int)RECORD_PHASE_FREE == (int)PLAN_STAGE_FREE &&
                       (int)RECORD_PHASE_DONE == (int)_PLAN_STAGE_MAX,
               "record phases follow the plan's stages");

const char *plan_stage_to_string(PlanStage s) {
        return record_phase_to_string((RecordPhase)s);
}

const char *plan_stage_to_human(PlanStage s) {
        return string_table_get(stage_human, ELEMENTSOF(stage_human), (ssize_t)s);
}

/* The stage of a chunk of each kind: FS_RANGE_METADATA, _USED, _FREE, and FS_CHUNK_UNKNOWN. */
static const uint8_t stage_of_kind[4] = {
        [FS_RANGE_METADATA] = PLAN_STAGE_METADATA,
        [FS_RANGE_USED] = PLAN_STAGE_USED,
        [FS_RANGE_FREE] = PLAN_STAGE_FREE,
        [FS_CHUNK_UNKNOWN] = PLAN_STAGE_USED,
};

PlanStage plan_stage_of(const Plan *p, uint64_t chunk) {
        return p->stage ? (PlanStage)two_bit_array_get(p->stage, chunk) : PLAN_STAGE_USED;
}

/* Hot ranges: every chunk they touch is read with the hot paths, unless it holds metadata. */
static void add_hot(Plan *p, const ChunkMap *m, const ByteRange *hot, size_t n_hot) {
        for (size_t i = 0; i < n_hot; i++) {
                uint64_t offset = hot[i].offset, length = hot[i].length, first, last;

                if (length == 0 || offset >= m->size)
                        continue;
                length = MIN(length, m->size - offset);
                first = offset / m->chunk_size;
                last = (offset + length - 1) / m->chunk_size;
                two_bit_array_lower(p->stage, first, last - first + 1, PLAN_STAGE_HOT);
        }
}

bool plan_is_empty(const Plan *p, uint64_t chunk) {
        return p->empty && chunk < p->n_chunks && (p->empty[chunk / 64] >> (chunk % 64)) & 1;
}

static void count_bytes(Plan *p, const ChunkMap *m) {
        memset(p->total_bytes, 0, sizeof(p->total_bytes));
        memset(p->done_bytes, 0, sizeof(p->done_bytes));
        p->empty_bytes = p->empty_done = 0;
        for (uint64_t c = 0; c < p->n_chunks; c++) {
                uint64_t bytes = chunkmap_range_bytes(m, c, 1);
                bool done = chunkmap_is_done(m, c);
                PlanStage s = plan_stage_of(p, c);

                if (plan_is_empty(p, c)) {
                        p->empty_bytes += bytes;
                        p->empty_done += done ? bytes : 0;
                        continue;
                }
                p->total_bytes[s] += bytes;
                if (done)
                        p->done_bytes[s] += bytes;
        }
        p->fs_aware = p->total_bytes[PLAN_STAGE_USED] < m->size - p->empty_bytes;
}

int plan_empty_new(const ChunkMap *m, uint64_t **ret) {
        size_t words = (size_t)DIV_ROUND_UP(m->n_chunks, 64);
        uint64_t *e = malloc(words * sizeof(uint64_t));

        if (!e)
                return -ENOMEM;
        memset(e, 0xff, words * sizeof(uint64_t));
        if (m->n_chunks % 64)
                e[words - 1] = (UINT64_C(1) << (m->n_chunks % 64)) - 1;
        *ret = e;
        return 0;
}

void plan_empty_stored(const ChunkMap *m, uint64_t *empty, uint64_t first_block, uint64_t count) {
        uint64_t per_chunk = m->chunk_size / (UINT64_C(512) << 10), first, last;

        if (count == 0 || first_block >= DIV_ROUND_UP(m->size, UINT64_C(512) << 10))
                return;
        first = first_block / per_chunk;
        last = MIN((first_block + count - 1) / per_chunk, m->n_chunks - 1);
        for (uint64_t c = first; c <= last; c++)
                empty[c / 64] &= ~(UINT64_C(1) << (c % 64));
}

void plan_set_empty(Plan *p, const ChunkMap *m, const uint64_t *empty) {
        p->empty = empty;
        count_bytes(p, m);
}

int plan_add_hot(Plan *p, const ChunkMap *m, const ByteRange *hot, size_t n_hot) {
        int r;

        if (n_hot > 0 && !p->stage) {
                r = two_bit_array_new(&p->stage, m->n_chunks, PLAN_STAGE_USED);
                if (r < 0)
                        return r;
        }
        if (p->stage)
                add_hot(p, m, hot, n_hot);
        if (p->stage && two_bit_array_all(p->stage, PLAN_STAGE_USED))
                p->stage = two_bit_array_free(p->stage); /* nothing but "used": no need */
        count_bytes(p, m);
        return 0;
}

/* The chunk kinds of @layout, taken over or made from its ranges; NULL if it has neither. */
static int layout_kinds(const ChunkMap *m, FsLayout *layout, FsChunkKinds **ret) {
        *ret = NULL;
        if (!layout)
                return 0;
        if (layout->chunks) {
                if (layout->chunks->size != m->size || layout->chunks->chunk_size != m->chunk_size)
                        return -EINVAL;
                *ret = TAKE_PTR(layout->chunks);
                return 0;
        }
        if (layout->n_ranges == 0)
                return 0;
        return fs_chunk_kinds_from_layout(ret, layout, m->size, m->chunk_size);
}

/**
 * plan_new() - classify the chunks of a chunk map; see plan.h.
 * @ret: the plan, on success only.
 * @m: the chunk map; its done bitmap gives the bytes already done per stage.
 * @layout: the file systems' ranges or chunk kinds (taken over), or NULL.
 * @hot: byte ranges of hot paths, or NULL.
 * @n_hot: how many.
 * @skip_free: Mode=used.
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int plan_new(Plan **ret, const ChunkMap *m, FsLayout *layout, const ByteRange *hot, size_t n_hot,
             bool skip_free) {
        _cleanup_(plan_freep) Plan *p = NULL;
        _cleanup_(fs_chunk_kinds_freep) FsChunkKinds *kinds = NULL;
        unsigned uniform;
        int r;

        r = layout_kinds(m, layout, &kinds);
        if (r < 0)
                return r;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->n_chunks = m->n_chunks;
        p->last = skip_free ? PLAN_STAGE_USED : PLAN_STAGE_FREE;
        p->pending = _PLAN_STAGE_MAX;
        if (kinds && !(fs_chunk_kinds_uniform(kinds, &uniform) &&
                       stage_of_kind[uniform] == PLAN_STAGE_USED)) {
                /* The kinds become the stages, in place: no second copy. */
                p->stage = fs_chunk_kinds_take(kinds);
                if (!p->stage)
                        return -ENOMEM;
                two_bit_array_translate(p->stage, stage_of_kind);
        }
        r = plan_add_hot(p, m, hot, n_hot);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

Plan *plan_free(Plan *p) {
        if (!p)
                return NULL;
        two_bit_array_free(p->stage);
        free(p);
        return NULL;
}

void plan_set_pending(Plan *p, PlanStage stage) {
        p->pending = MIN(stage, _PLAN_STAGE_MAX);
}

bool plan_known(const Plan *p) {
        return p->pending >= _PLAN_STAGE_MAX;
}

size_t plan_memory(const Plan *p) {
        return sizeof(*p) + (p->stage ? two_bit_array_memory(p->stage) : 0);
}

static bool eligible(const ChunkMap *m, uint64_t c) {
        return !chunkmap_is_done(m, c) && !chunkmap_is_busy(m, c);
}

/* The first chunk at or after @from of @stage: 0, or -ENOENT. */
static int find_stage(const Plan *p, PlanStage stage, uint64_t from, uint64_t *ret) {
        if (p->stage)
                return two_bit_array_find(p->stage, from, stage, ret);
        if (stage != PLAN_STAGE_USED || from >= p->n_chunks)
                return -ENOENT;
        *ret = from;
        return 0;
}

int plan_next(const Plan *p, const ChunkMap *m, PlanStage stage, uint64_t from, uint64_t max_count,
              uint64_t *ret_first, uint64_t *ret_count) {
        uint64_t first = from, count = 0;

        if (stage >= p->pending)
                return -ENOENT;
        if (!p->stage)
                return stage == PLAN_STAGE_USED
                               ? chunkmap_next_free(m, from, max_count, ret_first, ret_count)
                               : -ENOENT;
        for (;; first++) {
                if (find_stage(p, stage, first, &first) < 0)
                        return -ENOENT;
                if (eligible(m, first))
                        break;
        }
        while (count < max_count && first + count < p->n_chunks &&
               plan_stage_of(p, first + count) == stage && eligible(m, first + count))
                count++;
        *ret_first = first;
        *ret_count = count;
        return 0;
}

uint64_t plan_mark_done(Plan *p, ChunkMap *m, uint64_t first, uint64_t count) {
        for (uint64_t c = first; c < first + count && c < p->n_chunks; c++) {
                if (chunkmap_is_done(m, c))
                        continue;
                if (plan_is_empty(p, c)) /* read before the list came: it cost, but is empty */
                        p->empty_done += chunkmap_range_bytes(m, c, 1);
                else
                        p->done_bytes[plan_stage_of(p, c)] += chunkmap_range_bytes(m, c, 1);
        }
        return chunkmap_mark_done(m, first, count);
}

/* Every chunk of the device done, whatever its stage. */
static bool all_done(const Plan *p) {
        for (PlanStage s = 0; s < _PLAN_STAGE_MAX; s++)
                if (p->done_bytes[s] < p->total_bytes[s])
                        return false;
        return true;
}

PlanStage plan_current(const Plan *p) {
        if (all_done(p))
                return _PLAN_STAGE_MAX;
        for (PlanStage s = 0; s <= p->last; s++)
                if (p->done_bytes[s] < p->total_bytes[s])
                        return MIN(s, p->pending);
        return p->pending <= p->last ? p->pending : _PLAN_STAGE_MAX;
}

bool plan_complete(const Plan *p) {
        return plan_current(p) == _PLAN_STAGE_MAX;
}

void plan_get_progress(const Plan *p, PlanProgress *ret) {
        *ret = (PlanProgress){
                .fs_aware = p->fs_aware,
                .skip_free = p->last < PLAN_STAGE_FREE,
                .current = plan_current(p),
                .mapping = p->pending == PLAN_STAGE_METADATA,
                .hot_pending = p->pending == PLAN_STAGE_HOT,
                .listed = p->empty != NULL,
                .empty_bytes = p->empty_bytes,
                .empty_done = p->empty_done,
        };
        if (ret->mapping)
                return; /* a placeholder: no stage is known */
        memcpy(ret->done_bytes, p->done_bytes, sizeof(ret->done_bytes));
        memcpy(ret->total_bytes, p->total_bytes, sizeof(ret->total_bytes));
}

/* "done", "63%", "next", "skipped (Mode=used)": how far one stage is. */
#define STAGE_WORDS_MAX 32
static void format_stage(char *buf, size_t size, const PlanProgress *pp, PlanStage s) {
        unsigned pm = progress_permille(pp->done_bytes[s], pp->total_bytes[s]);

        if (s == PLAN_STAGE_HOT && pp->hot_pending)
                snprintf(buf, size, "being mapped");
        else if (s == PLAN_STAGE_FREE && pp->skip_free && pp->done_bytes[s] < pp->total_bytes[s])
                snprintf(buf, size, "skipped (Mode=used)");
        else if (pp->done_bytes[s] >= pp->total_bytes[s])
                snprintf(buf, size, "done");
        else if (s > pp->current && pp->done_bytes[s] == 0)
                snprintf(buf, size, "next");
        else
                snprintf(buf, size, "%u%%", pm / 10);
}

char *plan_progress_format(char *buf, size_t size, const PlanProgress *pp) {
        size_t n = 0;

        if (size == 0)
                return buf;
        buf[0] = '\0';
        for (PlanStage s = 0; s < _PLAN_STAGE_MAX && n < size; s++) {
                char how[STAGE_WORDS_MAX];

                if (pp->total_bytes[s] == 0 && !(s == PLAN_STAGE_HOT && pp->hot_pending))
                        continue;
                format_stage(how, sizeof(how), pp, s);
                n += (size_t)snprintf(buf + n, size - n, "%s%s %s", n > 0 ? ", " : "",
                                      stage_human[s], how);
        }
        return buf;
}
