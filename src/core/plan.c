/* SPDX-License-Identifier: MIT */
/*
 * The hydration plan: one byte per chunk says in which stage it is read. A chunk is as urgent
 * as the most urgent byte it covers, so a chunk that holds a little metadata and much free
 * space is read with the metadata. Pure: no I/O.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "progress.h"
#include "util.h"

static const char *const stage_names[_PLAN_STAGE_MAX + 1] = {
        [PLAN_STAGE_METADATA] = "metadata", [PLAN_STAGE_HOT] = "hot-paths",
        [PLAN_STAGE_USED] = "used",         [PLAN_STAGE_FREE] = "free",
        [_PLAN_STAGE_MAX] = "done",
};

static const char *const stage_human[_PLAN_STAGE_MAX + 1] = {
        [PLAN_STAGE_METADATA] = "metadata", [PLAN_STAGE_HOT] = "hot paths",
        [PLAN_STAGE_USED] = "used",         [PLAN_STAGE_FREE] = "free space",
        [_PLAN_STAGE_MAX] = "done",
};

const char *plan_stage_to_string(PlanStage s) {
        return s <= _PLAN_STAGE_MAX ? stage_names[s] : NULL;
}

const char *plan_stage_to_human(PlanStage s) {
        return s <= _PLAN_STAGE_MAX ? stage_human[s] : NULL;
}

static PlanStage stage_for_kind(FsRangeKind kind) {
        switch (kind) {
        case FS_RANGE_METADATA:
                return PLAN_STAGE_METADATA;
        case FS_RANGE_FREE:
                return PLAN_STAGE_FREE;
        default:
                return PLAN_STAGE_USED;
        }
}

/* Lowers the stage of every chunk that [offset, offset + length) touches to @stage at most. */
static void raise_priority(Plan *p, const ChunkMap *m, uint64_t offset, uint64_t length,
                           PlanStage stage) {
        uint64_t first, last;

        if (length == 0 || offset >= m->size)
                return;
        length = MIN(length, m->size - offset);
        first = offset / m->chunk_size;
        last = (offset + length - 1) / m->chunk_size;
        for (uint64_t c = first; c <= last; c++)
                p->stage[c] = MIN(p->stage[c], (uint8_t)stage);
}

static void count_bytes(Plan *p, const ChunkMap *m) {
        for (uint64_t c = 0; c < p->n_chunks; c++) {
                uint64_t bytes = chunkmap_range_bytes(m, c, 1);

                p->total_bytes[p->stage[c]] += bytes;
                if (chunkmap_is_done(m, c))
                        p->done_bytes[p->stage[c]] += bytes;
        }
        p->fs_aware = p->total_bytes[PLAN_STAGE_USED] < m->size;
}

/**
 * plan_new() - classify the chunks of a chunk map; see plan.h.
 * @ret: the plan, on success only.
 * @m: the chunk map; its done bitmap gives the bytes already done per stage.
 * @layout: the file systems' ranges, or NULL.
 * @hot: byte ranges of hot paths, or NULL.
 * @n_hot: how many.
 * @skip_free: Mode=used.
 *
 * Return: 0 or -ENOMEM.
 */
int plan_new(Plan **ret, const ChunkMap *m, const FsLayout *layout, const ByteRange *hot,
             size_t n_hot, bool skip_free) {
        _cleanup_(plan_freep) Plan *p = NULL;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->n_chunks = m->n_chunks;
        p->stage = malloc(m->n_chunks);
        if (!p->stage)
                return -ENOMEM;
        p->last = skip_free ? PLAN_STAGE_USED : PLAN_STAGE_FREE;
        p->pending = _PLAN_STAGE_MAX;
        if (!layout || layout->n_ranges == 0) {
                memset(p->stage, PLAN_STAGE_USED, m->n_chunks);
        } else {
                /* The layout covers the device exactly; 0xff marks what it might not. */
                memset(p->stage, 0xff, m->n_chunks);
                for (size_t i = 0; i < layout->n_ranges; i++)
                        raise_priority(p, m, layout->ranges[i].offset, layout->ranges[i].length,
                                       stage_for_kind(layout->ranges[i].kind));
                for (uint64_t c = 0; c < m->n_chunks; c++)
                        if (p->stage[c] == 0xff)
                                p->stage[c] = PLAN_STAGE_USED;
        }
        for (size_t i = 0; i < n_hot; i++)
                raise_priority(p, m, hot[i].offset, hot[i].length, PLAN_STAGE_HOT);
        count_bytes(p, m);
        *ret = TAKE_PTR(p);
        return 0;
}

Plan *plan_free(Plan *p) {
        if (!p)
                return NULL;
        free(p->stage);
        free(p);
        return NULL;
}

void plan_set_pending(Plan *p, PlanStage stage) {
        p->pending = MIN(stage, _PLAN_STAGE_MAX);
}

bool plan_known(const Plan *p) {
        return p->pending >= _PLAN_STAGE_MAX;
}

PlanStage plan_stage_of(const Plan *p, uint64_t chunk) {
        return (PlanStage)p->stage[chunk];
}

static bool eligible(const Plan *p, const ChunkMap *m, PlanStage stage, uint64_t c) {
        return p->stage[c] == stage && !chunkmap_is_done(m, c) && !chunkmap_is_busy(m, c);
}

int plan_next(const Plan *p, const ChunkMap *m, PlanStage stage, uint64_t from, uint64_t max_count,
              uint64_t *ret_first, uint64_t *ret_count) {
        uint64_t first = from, count = 0;

        if (stage >= p->pending)
                return -ENOENT;
        while (first < p->n_chunks && !eligible(p, m, stage, first))
                first++;
        if (first >= p->n_chunks)
                return -ENOENT;
        while (count < max_count && first + count < p->n_chunks &&
               eligible(p, m, stage, first + count))
                count++;
        *ret_first = first;
        *ret_count = count;
        return 0;
}

uint64_t plan_mark_done(Plan *p, ChunkMap *m, uint64_t first, uint64_t count) {
        for (uint64_t c = first; c < first + count && c < p->n_chunks; c++)
                if (!chunkmap_is_done(m, c))
                        p->done_bytes[p->stage[c]] += chunkmap_range_bytes(m, c, 1);
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
        };
        if (ret->mapping)
                return; /* a placeholder: no stage is known */
        memcpy(ret->done_bytes, p->done_bytes, sizeof(ret->done_bytes));
        memcpy(ret->total_bytes, p->total_bytes, sizeof(ret->total_bytes));
}

/* "done", "63%", "next": how far one stage is. */
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
                char how[32];

                if (pp->total_bytes[s] == 0 && !(s == PLAN_STAGE_HOT && pp->hot_pending))
                        continue;
                format_stage(how, sizeof(how), pp, s);
                n += (size_t)snprintf(buf + n, size - n, "%s%s %s", n > 0 ? ", " : "",
                                      stage_human[s], how);
        }
        return buf;
}
