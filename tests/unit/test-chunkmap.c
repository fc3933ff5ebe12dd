/* SPDX-License-Identifier: MIT */
/* Chunk map: sizing, the short last chunk, out-of-order completion and the free-run scan. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "chunkmap.h"
#include "util.h"

#define K UINT64_C(1024)
#define M (K * K)

static int setup_map(void **state) {
        ChunkMap *m;

        /* 10 chunks of 512 KiB, the last one 4 KiB short: sizes need not divide evenly. */
        assert_int_equal(chunkmap_new(&m, 10 * 512 * K - 4096, 512 * K), 0);
        *state = m;
        return 0;
}

static int teardown_map(void **state) {
        chunkmap_free(*state);
        return 0;
}

static void test_chunkmap_size_for(void **state) {
        assert_int_equal(chunk_size_for(256 * M), 512 * K);
        assert_int_equal(chunk_size_for(UINT64_C(8) << 40), 512 * K);
        assert_int_equal(chunk_size_for(UINT64_C(16) << 40), 1 * M);
        assert_int_equal(chunk_size_for(UINT64_C(64) << 40), 4 * M);
}

/* Rounding up must not wrap near UINT64_MAX as (a + b - 1) / b does: a state file once decoded
 * as a 16 EiB device of zero chunks, complete (tests/fuzz/corpus/state/regress-size-wraps). */
static void test_chunkmap_div_round_up_no_overflow(void **state) {
        assert_true(DIV_ROUND_UP(UINT64_MAX, UINT64_C(1) << 30) == UINT64_C(1) << 34);
        assert_true(DIV_ROUND_UP(UINT64_MAX - (UINT64_C(1) << 29), UINT64_C(1) << 30) ==
                    UINT64_C(1) << 34);
        assert_true(DIV_ROUND_UP(UINT64_C(0), 8u) == 0);
        assert_true(DIV_ROUND_UP(UINT64_C(9), 8u) == 2);
        assert_int_equal(chunk_size_for(UINT64_MAX), CHUNK_SIZE_MAX);
}

static void test_chunkmap_rejects_bad_geometry(void **state) {
        ChunkMap *m = NULL;

        assert_int_equal(chunkmap_new(&m, 0, 512 * K), -EINVAL);
        assert_int_equal(chunkmap_new(&m, M, 3 * 256 * K), -EINVAL);
        assert_int_equal(chunkmap_new(&m, M, 4096), -EINVAL);
        assert_null(m);
}

static void test_chunkmap_short_last_chunk(void **state) {
        ChunkMap *m = *state;

        assert_int_equal(m->n_chunks, 10);
        assert_int_equal(chunkmap_range_bytes(m, 9, 1), 512 * K - 4096);
        assert_int_equal(chunkmap_range_bytes(m, 8, 5), 2 * 512 * K - 4096);
        chunkmap_mark_done(m, 9, 1);
        assert_int_equal(chunkmap_done_bytes(m), 512 * K - 4096);
        chunkmap_mark_done(m, 0, 9);
        assert_true(chunkmap_complete(m));
        assert_int_equal(chunkmap_done_bytes(m), m->size);
}

static void test_chunkmap_out_of_order(void **state) {
        ChunkMap *m = *state;

        assert_int_equal(chunkmap_mark_done(m, 7, 2), 2);
        assert_int_equal(chunkmap_mark_done(m, 2, 1), 1);
        assert_int_equal(chunkmap_mark_done(m, 7, 1), 0); /* twice counts once */
        assert_int_equal(m->n_done, 3);
        assert_true(chunkmap_is_done(m, 8));
        assert_false(chunkmap_is_done(m, 3));
        assert_false(chunkmap_complete(m));
}

static void test_chunkmap_next_free_skips_done_and_busy(void **state) {
        ChunkMap *m = *state;
        uint64_t first, count;

        chunkmap_mark_done(m, 0, 2);
        chunkmap_set_busy(m, 2, 1, true);
        chunkmap_mark_done(m, 5, 1);
        assert_int_equal(chunkmap_next_free(m, 0, 8, &first, &count), 0);
        assert_int_equal(first, 3);
        assert_int_equal(count, 2); /* stops at done chunk 5 */
        assert_int_equal(chunkmap_next_free(m, 4, 1, &first, &count), 0);
        assert_int_equal(first, 4);
        assert_int_equal(count, 1);
        assert_int_equal(chunkmap_next_free(m, 6, 100, &first, &count), 0);
        assert_int_equal(first, 6);
        assert_int_equal(count, 4);
        chunkmap_set_busy(m, 6, 4, true);
        assert_int_equal(chunkmap_next_free(m, 5, 100, &first, &count), -ENOENT);
        /* Done clears busy. */
        chunkmap_mark_done(m, 2, 1);
        assert_false(chunkmap_is_busy(m, 2));
}

static void test_chunkmap_next_free_across_words(void **state) {
        ChunkMap *m;
        uint64_t first, count;

        assert_int_equal(chunkmap_new(&m, 300 * 512 * K, 512 * K), 0);
        chunkmap_mark_done(m, 0, 200);
        chunkmap_set_busy(m, 201, 60, true);
        assert_int_equal(chunkmap_next_free(m, 0, 4, &first, &count), 0);
        assert_int_equal(first, 200);
        assert_int_equal(count, 1);
        assert_int_equal(chunkmap_next_free(m, 201, 4, &first, &count), 0);
        assert_int_equal(first, 261);
        assert_int_equal(count, 4);
        chunkmap_mark_done(m, 200, 100);
        assert_true(chunkmap_complete(m));
        assert_int_equal(chunkmap_next_free(m, 0, 4, &first, &count), -ENOENT);
        chunkmap_free(m);
}

static void test_chunkmap_bitmap_roundtrip(void **state) {
        ChunkMap *m = *state, *n;
        uint8_t bits[2];

        chunkmap_mark_done(m, 0, 1);
        chunkmap_mark_done(m, 9, 1);
        assert_int_equal(chunkmap_bitmap_bytes(m), 2);
        chunkmap_bitmap_export(m, bits);
        assert_int_equal(bits[0], 0x01);
        assert_int_equal(bits[1], 0x02);

        assert_int_equal(chunkmap_new(&n, m->size, m->chunk_size), 0);
        assert_int_equal(chunkmap_bitmap_import(n, bits, sizeof(bits)), 0);
        assert_int_equal(n->n_done, 2);
        assert_true(chunkmap_is_done(n, 9));
        bits[1] |= 0x80; /* chunk 15 does not exist */
        assert_int_equal(chunkmap_bitmap_import(n, bits, sizeof(bits)), -EBADMSG);
        assert_int_equal(chunkmap_bitmap_import(n, bits, 1), -EBADMSG);
        chunkmap_free(n);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_chunkmap_size_for),
                cmocka_unit_test(test_chunkmap_div_round_up_no_overflow),
                cmocka_unit_test(test_chunkmap_rejects_bad_geometry),
                cmocka_unit_test_setup_teardown(test_chunkmap_short_last_chunk, setup_map,
                                                teardown_map),
                cmocka_unit_test_setup_teardown(test_chunkmap_out_of_order, setup_map,
                                                teardown_map),
                cmocka_unit_test_setup_teardown(test_chunkmap_next_free_skips_done_and_busy,
                                                setup_map, teardown_map),
                cmocka_unit_test(test_chunkmap_next_free_across_words),
                cmocka_unit_test_setup_teardown(test_chunkmap_bitmap_roundtrip, setup_map,
                                                teardown_map),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
