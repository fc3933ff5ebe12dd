/* SPDX-License-Identifier: MIT */
/* Plan: chunk classes at range boundaries, reading order, Mode=used and progress per stage. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "plan.h"
#include "util.h"

#define K UINT64_C(1024)
#define CS (512 * K)

typedef struct Fixture {
        ChunkMap *map;
        FsLayout layout;
        FsRange ranges[8];
} Fixture;

/* 10 chunks of 512 KiB, the last one 4 KiB short. */
static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(chunkmap_new(&f->map, 10 * CS - 4096, CS), 0);
        f->layout.ranges = f->ranges;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        chunkmap_free(f->map);
        free(f);
        return 0;
}

static void add_range(Fixture *f, uint64_t offset, uint64_t length, FsRangeKind kind) {
        f->ranges[f->layout.n_ranges++] = (FsRange){offset, length, kind};
}

/*
 * chunk 0: metadata (a superblock at byte 1024, the rest free), chunk 1: free, chunks 2-3:
 * used, with metadata in the last byte of chunk 3, chunks 4-9: free.
 */
static void layout_mixed(Fixture *f) {
        add_range(f, 0, 1024, FS_RANGE_FREE);
        add_range(f, 1024, 4096, FS_RANGE_METADATA);
        add_range(f, 5120, 2 * CS - 5120, FS_RANGE_FREE);
        add_range(f, 2 * CS, 2 * CS - 1, FS_RANGE_USED);
        add_range(f, 4 * CS - 1, 1, FS_RANGE_METADATA);
        add_range(f, 4 * CS, f->map->size - 4 * CS, FS_RANGE_FREE);
        assert_int_equal(fslayout_check(&f->layout, f->map->size), 0);
}

static void test_plan_no_layout_is_all_used(void **state) {
        Fixture *f = *state;
        Plan *p = NULL;

        assert_int_equal(plan_new(&p, f->map, NULL, NULL, 0, false), 0);
        for (uint64_t c = 0; c < f->map->n_chunks; c++)
                assert_int_equal(plan_stage_of(p, c), PLAN_STAGE_USED);
        assert_false(p->fs_aware);
        assert_true(p->total_bytes[PLAN_STAGE_USED] == f->map->size);
        assert_int_equal(plan_current(p), PLAN_STAGE_USED);
        plan_free(p);
}

static void test_plan_chunk_boundaries(void **state) {
        Fixture *f = *state;
        Plan *p = NULL;

        layout_mixed(f);
        assert_int_equal(plan_new(&p, f->map, &f->layout, NULL, 0, false), 0);
        assert_true(p->fs_aware);
        /* A chunk that overlaps metadata and free space is metadata. */
        assert_int_equal(plan_stage_of(p, 0), PLAN_STAGE_METADATA);
        assert_int_equal(plan_stage_of(p, 1), PLAN_STAGE_FREE);
        assert_int_equal(plan_stage_of(p, 2), PLAN_STAGE_USED);
        /* One byte of metadata at the very end of a used chunk. */
        assert_int_equal(plan_stage_of(p, 3), PLAN_STAGE_METADATA);
        /* A free range that starts exactly at a chunk boundary does not touch the chunk before. */
        for (uint64_t c = 4; c < 10; c++)
                assert_int_equal(plan_stage_of(p, c), PLAN_STAGE_FREE);
        assert_true(p->total_bytes[PLAN_STAGE_METADATA] == 2 * CS);
        assert_true(p->total_bytes[PLAN_STAGE_USED] == CS);
        assert_true(p->total_bytes[PLAN_STAGE_FREE] == 7 * CS - 4096);
        assert_true(p->total_bytes[PLAN_STAGE_HOT] == 0);
        plan_free(p);
}

static void test_plan_hot_ranges(void **state) {
        Fixture *f = *state;
        ByteRange hot[] = {
                {CS - 1, 2},        /* the last byte of chunk 0 and the first of chunk 1 */
                {9 * CS, 100 * CS}, /* the short last chunk, reaching past the end */
                {20 * CS, CS},      /* beyond the device: ignored */
                {5 * CS + 7, 0},    /* empty: ignored */
        };
        Plan *p = NULL;

        layout_mixed(f);
        assert_int_equal(plan_new(&p, f->map, &f->layout, hot, ELEMENTSOF(hot), false), 0);
        assert_int_equal(plan_stage_of(p, 0), PLAN_STAGE_METADATA); /* metadata beats hot */
        assert_int_equal(plan_stage_of(p, 1), PLAN_STAGE_HOT);
        assert_int_equal(plan_stage_of(p, 5), PLAN_STAGE_FREE);
        assert_int_equal(plan_stage_of(p, 9), PLAN_STAGE_HOT);
        assert_true(p->total_bytes[PLAN_STAGE_HOT] == 2 * CS - 4096);
        plan_free(p);
}

/* Hot paths added to a plan that took a layout's chunk kinds over give the plan that the layout
 * and the hot paths give together, stage for stage and byte for byte; on a plan that knew
 * nothing but "used" (no array), and with no hot paths at all, too. */
static void test_plan_add_hot(void **state) {
        Fixture *f = *state;
        ByteRange hot[] = {{CS - 1, 2}, {9 * CS, 100 * CS}, {6 * CS, 1}};
        FsLayout by_chunk = {};
        Plan *want = NULL, *got = NULL, *all_used = NULL;

        layout_mixed(f);
        chunkmap_mark_done(f->map, 1, 2);
        assert_int_equal(plan_new(&want, f->map, &f->layout, hot, ELEMENTSOF(hot), false), 0);
        assert_int_equal(fs_chunk_kinds_from_layout(&by_chunk.chunks, &f->layout, f->map->size, CS),
                         0);
        assert_int_equal(plan_new(&got, f->map, &by_chunk, NULL, 0, false), 0);
        assert_null(by_chunk.chunks);
        assert_int_equal(plan_add_hot(got, f->map, NULL, 0), 0);
        assert_true(got->total_bytes[PLAN_STAGE_HOT] == 0);
        assert_int_equal(plan_add_hot(got, f->map, hot, ELEMENTSOF(hot)), 0);
        for (uint64_t c = 0; c < f->map->n_chunks; c++)
                assert_int_equal(plan_stage_of(got, c), plan_stage_of(want, c));
        assert_memory_equal(got->total_bytes, want->total_bytes, sizeof(want->total_bytes));
        assert_memory_equal(got->done_bytes, want->done_bytes, sizeof(want->done_bytes));
        assert_true(got->fs_aware);

        assert_int_equal(plan_new(&all_used, f->map, NULL, NULL, 0, false), 0);
        assert_int_equal(plan_memory(all_used), sizeof(Plan));
        assert_int_equal(plan_add_hot(all_used, f->map, hot + 2, 1), 0);
        assert_int_equal(plan_stage_of(all_used, 6), PLAN_STAGE_HOT);
        assert_int_equal(plan_stage_of(all_used, 5), PLAN_STAGE_USED);
        assert_true(all_used->total_bytes[PLAN_STAGE_HOT] == CS);
        assert_true(all_used->fs_aware);
        plan_free(want);
        plan_free(got);
        plan_free(all_used);
}

/* Reads stage by stage, each in offset order, merging neighbours of the same stage. */
static void test_plan_order(void **state) {
        Fixture *f = *state;
        uint64_t expect[][2] = {{0, 1}, {3, 1}, {2, 1}, {1, 1}, {4, 4}, {8, 2}};
        size_t i = 0;
        Plan *p = NULL;

        layout_mixed(f);
        assert_int_equal(plan_new(&p, f->map, &f->layout, NULL, 0, false), 0);
        for (PlanStage s = 0; s < _PLAN_STAGE_MAX; s++) {
                uint64_t from = 0, first, count;

                while (plan_next(p, f->map, s, from, 4, &first, &count) == 0) {
                        assert_true(i < ELEMENTSOF(expect));
                        assert_true(first == expect[i][0]);
                        assert_true(count == expect[i][1]);
                        chunkmap_set_busy(f->map, first, count, true);
                        from = first + count;
                        i++;
                }
        }
        assert_int_equal(i, ELEMENTSOF(expect));
        plan_free(p);
}

static void test_plan_next_skips_done_and_busy(void **state) {
        Fixture *f = *state;
        uint64_t first, count;
        Plan *p = NULL;

        assert_int_equal(plan_new(&p, f->map, NULL, NULL, 0, false), 0);
        plan_mark_done(p, f->map, 0, 2);
        chunkmap_set_busy(f->map, 4, 1, true);
        assert_int_equal(plan_next(p, f->map, PLAN_STAGE_USED, 0, 8, &first, &count), 0);
        assert_true(first == 2 && count == 2);
        assert_int_equal(plan_next(p, f->map, PLAN_STAGE_USED, 4, 8, &first, &count), 0);
        assert_true(first == 5 && count == 5);
        assert_int_equal(plan_next(p, f->map, PLAN_STAGE_FREE, 0, 8, &first, &count), -ENOENT);
        assert_int_equal(plan_next(p, f->map, PLAN_STAGE_USED, 10, 8, &first, &count), -ENOENT);
        plan_free(p);
}

/* Mode=used: complete when every chunk but the free ones is done. */
static void test_plan_used_mode_skips_free(void **state) {
        Fixture *f = *state;
        Plan *p = NULL;

        layout_mixed(f);
        assert_int_equal(plan_new(&p, f->map, &f->layout, NULL, 0, true), 0);
        assert_int_equal(p->last, PLAN_STAGE_USED);
        plan_mark_done(p, f->map, 0, 1);
        plan_mark_done(p, f->map, 3, 1);
        assert_false(plan_complete(p));
        assert_int_equal(plan_current(p), PLAN_STAGE_USED);
        plan_mark_done(p, f->map, 2, 1);
        assert_true(plan_complete(p));
        assert_int_equal(plan_current(p), _PLAN_STAGE_MAX);
        assert_false(chunkmap_complete(f->map));
        plan_free(p);

        /* The same map in full mode: the free chunks are still to read. */
        assert_int_equal(plan_new(&p, f->map, &f->layout, NULL, 0, false), 0);
        assert_false(plan_complete(p));
        assert_int_equal(plan_current(p), PLAN_STAGE_FREE);
        plan_free(p);
}

/* Done bytes per stage: from the bitmap at creation (a resumed run), then as chunks complete. */
static void test_plan_progress_per_stage(void **state) {
        Fixture *f = *state;
        PlanProgress pp;
        char line[200];
        Plan *p = NULL;

        layout_mixed(f);
        chunkmap_mark_done(f->map, 9, 1); /* from an earlier run */
        assert_int_equal(plan_new(&p, f->map, &f->layout, NULL, 0, false), 0);
        assert_true(p->done_bytes[PLAN_STAGE_FREE] == CS - 4096);
        assert_true(plan_mark_done(p, f->map, 0, 1) == 1);
        assert_true(plan_mark_done(p, f->map, 0, 1) == 0); /* counted once */
        assert_true(p->done_bytes[PLAN_STAGE_METADATA] == CS);
        plan_get_progress(p, &pp);
        assert_int_equal(pp.current, PLAN_STAGE_METADATA);
        assert_string_equal(plan_progress_format(line, sizeof(line), &pp),
                            "metadata 50%, used next, free space 14%");
        plan_mark_done(p, f->map, 3, 1);
        plan_get_progress(p, &pp);
        assert_string_equal(plan_progress_format(line, sizeof(line), &pp),
                            "metadata done, used 0%, free space 14%");
        plan_mark_done(p, f->map, 0, 10);
        plan_get_progress(p, &pp);
        assert_int_equal(pp.current, _PLAN_STAGE_MAX);
        assert_string_equal(plan_progress_format(line, sizeof(line), &pp),
                            "metadata done, used done, free space done");
        plan_free(p);
}

static void test_plan_progress_used_mode(void **state) {
        Fixture *f = *state;
        PlanProgress pp;
        char line[200];
        Plan *p = NULL;

        layout_mixed(f);
        assert_int_equal(plan_new(&p, f->map, &f->layout, NULL, 0, true), 0);
        plan_get_progress(p, &pp);
        assert_true(pp.skip_free);
        assert_string_equal(plan_progress_format(line, sizeof(line), &pp),
                            "metadata 0%, used next, free space skipped (Mode=used)");
        plan_free(p);
}

/* While the file systems are mapped (metadata pending) the placeholder plan reads nothing by
 * itself, reports "metadata" and no stages, and is complete only with every chunk done. */
static void test_plan_pending_metadata(void **state) {
        Fixture *f = *state;
        uint64_t first, count;
        PlanProgress pp;
        Plan *p = NULL;

        assert_int_equal(plan_new(&p, f->map, NULL, NULL, 0, true), 0);
        assert_true(plan_known(p));
        plan_set_pending(p, PLAN_STAGE_METADATA);
        assert_false(plan_known(p));
        for (PlanStage s = 0; s < _PLAN_STAGE_MAX; s++)
                assert_int_equal(plan_next(p, f->map, s, 0, 8, &first, &count), -ENOENT);
        plan_mark_done(p, f->map, 0, 9); /* all but the last chunk, say by reads ahead */
        assert_int_equal(plan_current(p), PLAN_STAGE_METADATA);
        assert_false(plan_complete(p));
        plan_get_progress(p, &pp);
        assert_true(pp.mapping);
        assert_false(pp.hot_pending);
        assert_int_equal(pp.current, PLAN_STAGE_METADATA);
        for (PlanStage s = 0; s < _PLAN_STAGE_MAX; s++)
                assert_true(pp.total_bytes[s] == 0 && pp.done_bytes[s] == 0);
        plan_mark_done(p, f->map, 9, 1);
        assert_true(plan_complete(p)); /* nothing of the device is left, whatever its stages */
        plan_free(p);
}

/* HotPaths= being resolved: metadata is read and reported done when it is; the stages after it
 * are neither read nor reported reached until the hot paths are known. */
static void test_plan_pending_hot(void **state) {
        Fixture *f = *state;
        uint64_t first, count;
        PlanProgress pp;
        char line[200];
        Plan *p = NULL;

        layout_mixed(f);
        assert_int_equal(plan_new(&p, f->map, &f->layout, NULL, 0, true), 0);
        plan_set_pending(p, PLAN_STAGE_HOT);
        assert_int_equal(plan_next(p, f->map, PLAN_STAGE_METADATA, 0, 8, &first, &count), 0);
        assert_true(first == 0 && count == 1);
        assert_int_equal(plan_next(p, f->map, PLAN_STAGE_USED, 0, 8, &first, &count), -ENOENT);
        assert_int_equal(plan_current(p), PLAN_STAGE_METADATA);
        plan_mark_done(p, f->map, 0, 1);
        plan_mark_done(p, f->map, 3, 1);
        assert_int_equal(plan_current(p), PLAN_STAGE_HOT); /* metadata done, no further */
        plan_mark_done(p, f->map, 2, 1);                   /* the used chunk, read ahead */
        assert_int_equal(plan_current(p), PLAN_STAGE_HOT);
        assert_false(plan_complete(p));
        plan_get_progress(p, &pp);
        assert_false(pp.mapping);
        assert_true(pp.hot_pending);
        assert_string_equal(plan_progress_format(line, sizeof(line), &pp),
                            "metadata done, hot paths being mapped, used done, free space skipped "
                            "(Mode=used)");
        plan_set_pending(p, _PLAN_STAGE_MAX);
        assert_true(plan_complete(p));
        plan_free(p);
}

static void test_plan_stage_names(void **state) {
        assert_string_equal(plan_stage_to_string(PLAN_STAGE_METADATA), "metadata");
        assert_string_equal(plan_stage_to_string(PLAN_STAGE_HOT), "hot-paths");
        assert_string_equal(plan_stage_to_string(PLAN_STAGE_USED), "used");
        assert_string_equal(plan_stage_to_string(PLAN_STAGE_FREE), "free");
        assert_string_equal(plan_stage_to_string(_PLAN_STAGE_MAX), "done");
        assert_null(plan_stage_to_string(_PLAN_STAGE_MAX + 1));
        assert_string_equal(plan_stage_to_human(PLAN_STAGE_FREE), "free space");
}

/* Marks the chunks of @empty done, as the hydrator does with those not in flight. */
static void mark_empty_done(ChunkMap *m, const uint64_t *empty) {
        for (uint64_t c = 0; c < m->n_chunks; c++)
                if ((empty[c / 64] >> (c % 64)) & 1)
                        chunkmap_mark_done(m, c, 1);
}

/*
 * The snapshot's list: chunks it stores nothing of are in no stage, never planned, counted
 * apart; the order of the rest is the layout's. Blocks stored: 0 (metadata), 3, 5 twice
 * (duplicates), 9, and blocks past the end of the device (a list of a larger volume).
 */
static void test_plan_empty_chunks(void **state) {
        Fixture *f = *state;
        uint64_t *empty = NULL, first, count;
        uint64_t expect[][2] = {{0, 1}, {3, 1}, {5, 1}, {9, 1}};
        size_t i = 0;
        PlanProgress pp;
        Plan *p = NULL;

        layout_mixed(f);
        assert_int_equal(plan_new(&p, f->map, &f->layout, NULL, 0, false), 0);
        assert_int_equal(plan_empty_new(f->map, &empty), 0);
        plan_empty_stored(f->map, empty, 0, 1);
        plan_empty_stored(f->map, empty, 3, 1);
        plan_empty_stored(f->map, empty, 5, 1);
        plan_empty_stored(f->map, empty, 5, 1);
        plan_empty_stored(f->map, empty, 9, 100); /* on past the end */
        plan_empty_stored(f->map, empty, 10, 5);  /* wholly past it */
        plan_empty_stored(f->map, empty, UINT64_C(1) << 40, 5);
        assert_int_equal(empty[0],
                         (1u << 1) | (1u << 2) | (1u << 4) | (1u << 6) | (1u << 7) | (1u << 8));
        mark_empty_done(f->map, empty);
        plan_set_empty(p, f->map, empty);
        assert_true(plan_is_empty(p, 1) && !plan_is_empty(p, 0) && !plan_is_empty(p, 10));
        plan_get_progress(p, &pp);
        assert_true(pp.listed);
        assert_int_equal(pp.empty_bytes, 6 * CS);
        assert_int_equal(pp.empty_done, 6 * CS);
        assert_int_equal(pp.total_bytes[PLAN_STAGE_METADATA], 2 * CS);    /* chunks 0 and 3 */
        assert_int_equal(pp.total_bytes[PLAN_STAGE_USED], 0);             /* chunk 2: empty */
        assert_int_equal(pp.total_bytes[PLAN_STAGE_FREE], 2 * CS - 4096); /* 5, and 9 short */
        for (PlanStage s = 0; s < _PLAN_STAGE_MAX; s++) {
                uint64_t from = 0;

                while (plan_next(p, f->map, s, from, 4, &first, &count) == 0) {
                        assert_true(i < ELEMENTSOF(expect));
                        assert_true(first == expect[i][0] && count == expect[i][1]);
                        plan_mark_done(p, f->map, first, count);
                        from = first + count;
                        i++;
                }
        }
        assert_int_equal(i, ELEMENTSOF(expect));
        assert_true(plan_complete(p));
        assert_true(chunkmap_complete(f->map));
        plan_free(p);
        free(empty);
}

/* An empty chunk that was in flight when the list came counts as empty once read, in no
 * stage; a list that stores nothing completes the plan at once. */
static void test_plan_empty_in_flight(void **state) {
        Fixture *f = *state;
        uint64_t *empty = NULL;
        PlanProgress pp;
        Plan *p = NULL;

        assert_int_equal(plan_new(&p, f->map, NULL, NULL, 0, false), 0);
        assert_int_equal(plan_empty_new(f->map, &empty), 0);
        for (uint64_t c = 1; c < 10; c++)
                chunkmap_mark_done(f->map, c, 1); /* all but chunk 0, in flight */
        plan_set_empty(p, f->map, empty);
        assert_false(plan_complete(p) && chunkmap_complete(f->map));
        assert_true(plan_complete(p)); /* nothing stored is left */
        plan_mark_done(p, f->map, 0, 1);
        plan_get_progress(p, &pp);
        assert_int_equal(pp.empty_done, f->map->size);
        assert_int_equal(pp.done_bytes[PLAN_STAGE_USED], 0);
        assert_false(pp.fs_aware);
        plan_free(p);
        free(empty);
}

/* Chunks of 2 MiB (volumes over 8 TiB have chunks over 512 KiB): a chunk is empty only when
 * none of its four blocks is stored. */
static void test_plan_empty_large_chunks(void **state) {
        ChunkMap *m = NULL;
        uint64_t *empty = NULL;
        Plan *p = NULL;

        assert_int_equal(chunkmap_new(&m, 8 * 4 * CS, 4 * CS), 0);
        assert_int_equal(plan_new(&p, m, NULL, NULL, 0, false), 0);
        assert_int_equal(plan_empty_new(m, &empty), 0);
        plan_empty_stored(m, empty, 3, 1);  /* the last block of chunk 0 */
        plan_empty_stored(m, empty, 4, 1);  /* the first of chunk 1 */
        plan_empty_stored(m, empty, 11, 6); /* chunks 2 (its last), 3 and 4 (its first) */
        assert_int_equal(empty[0], 0xffu & ~0x1fu);
        plan_set_empty(p, m, empty);
        assert_int_equal(p->empty_bytes, 3 * 4 * CS);
        plan_free(p);
        free(empty);
        chunkmap_free(m);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        const struct CMUnitTest tests[] = {
                T(test_plan_no_layout_is_all_used),
                T(test_plan_chunk_boundaries),
                T(test_plan_hot_ranges),
                T(test_plan_add_hot),
                T(test_plan_order),
                T(test_plan_next_skips_done_and_busy),
                T(test_plan_used_mode_skips_free),
                T(test_plan_progress_per_stage),
                T(test_plan_progress_used_mode),
                T(test_plan_pending_metadata),
                T(test_plan_pending_hot),
                T(test_plan_empty_chunks),
                T(test_plan_empty_in_flight),
                cmocka_unit_test(test_plan_empty_large_chunks),
                cmocka_unit_test(test_plan_stage_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
