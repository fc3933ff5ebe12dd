/* SPDX-License-Identifier: MIT */
/* The list of reads wanted ahead of the plan: chunk runs in the order given, merged when they
 * follow each other, claimed chunks skipped, the room of passed runs reused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ahead.h"
#include "util.h"

#define CS (UINT64_C(512) << 10)

static void test_ahead_order_and_merge(void **state) {
        _cleanup_(chunkmap_freep) ChunkMap *m = NULL;
        Ahead a = {};
        uint64_t first, count;

        assert_int_equal(chunkmap_new(&m, 64 * CS - 4096, CS), 0);
        assert_int_equal(ahead_add(&a, m, 40 * CS + 4096, 4096), 0);  /* chunk 40 */
        assert_int_equal(ahead_add(&a, m, 40 * CS + 65536, 8192), 0); /* 40 again: merged */
        assert_int_equal(ahead_add(&a, m, 41 * CS, 2 * CS), 0);       /* 41-42: merged */
        assert_int_equal(ahead_add(&a, m, 3 * CS - 1, 2), 0);         /* 2-3: a run of its own */
        assert_int_equal(ahead_add(&a, m, 63 * CS, 10 * CS), 0);      /* cut at the end */
        assert_int_equal(ahead_add(&a, m, 64 * CS, CS), 0);           /* beyond: nothing */
        assert_int_equal(ahead_add(&a, m, 5 * CS, 0), 0);             /* empty: nothing */
        assert_int_equal(ahead_pending(&a), 3);

        /* In the order given, not in offset order; at most max_count at once. */
        assert_int_equal(ahead_next(&a, m, 2, &first, &count), 0);
        assert_true(first == 40 && count == 2);
        chunkmap_set_busy(m, first, count, true);
        assert_int_equal(ahead_next(&a, m, 2, &first, &count), 0);
        assert_true(first == 42 && count == 1);
        chunkmap_set_busy(m, first, count, true);
        /* Chunk 3 was read by the plan meanwhile: only 2 is left of that run. */
        chunkmap_mark_done(m, 3, 1);
        assert_int_equal(ahead_next(&a, m, 2, &first, &count), 0);
        assert_true(first == 2 && count == 1);
        chunkmap_set_busy(m, first, count, true);
        assert_int_equal(ahead_next(&a, m, 2, &first, &count), 0);
        assert_true(first == 63 && count == 1);
        chunkmap_set_busy(m, first, count, true);
        assert_int_equal(ahead_next(&a, m, 2, &first, &count), -ENOENT);
        assert_int_equal(ahead_pending(&a), 0);
        ahead_done(&a);
}

/* A run with claimed chunks in its middle hands out the claimable parts one after another. */
static void test_ahead_skips_claimed(void **state) {
        _cleanup_(chunkmap_freep) ChunkMap *m = NULL;
        Ahead a = {};
        uint64_t first, count;

        assert_int_equal(chunkmap_new(&m, 16 * CS, CS), 0);
        assert_int_equal(ahead_add(&a, m, 0, 8 * CS), 0);
        chunkmap_mark_done(m, 0, 1);
        chunkmap_set_busy(m, 3, 1, true);
        assert_int_equal(ahead_next(&a, m, 8, &first, &count), 0);
        assert_true(first == 1 && count == 2);
        chunkmap_set_busy(m, first, count, true);
        assert_int_equal(ahead_next(&a, m, 8, &first, &count), 0);
        assert_true(first == 4 && count == 4);
        ahead_done(&a);
}

/* Runs the cursor has passed make room for new ones: the list does not grow with every hint. */
static void test_ahead_reuses_room(void **state) {
        _cleanup_(chunkmap_freep) ChunkMap *m = NULL;
        Ahead a = {};
        uint64_t first, count;
        size_t allocated;

        assert_int_equal(chunkmap_new(&m, 4096 * CS, CS), 0);
        for (uint64_t c = 0; c < 64; c += 2)
                assert_int_equal(ahead_add(&a, m, c * CS, CS), 0);
        allocated = a.allocated;
        for (unsigned round = 0; round < 60; round++) { /* up to chunk 3966 of 4096 */
                while (ahead_next(&a, m, 1, &first, &count) == 0)
                        chunkmap_set_busy(m, first, count, true);
                for (uint64_t c = 64 + round * 64; c < 128 + round * 64; c += 2)
                        assert_int_equal(ahead_add(&a, m, c * CS, CS), 0);
        }
        assert_int_equal(a.allocated, allocated);
        assert_int_equal(ahead_pending(&a), 32);
        ahead_done(&a);
        assert_null(a.runs);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ahead_order_and_merge),
                cmocka_unit_test(test_ahead_skips_claimed),
                cmocka_unit_test(test_ahead_reuses_room),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
