/* SPDX-License-Identifier: MIT */
/*
 * fslayout's ranges: the normalisation of what the scanners report, as the pure function it
 * is, the layout's helpers and its promise (fslayout_check), and discovery's refusals.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixtures-fslayout.h"
#include "fslayout-scan.h"
#include "fslayout.h"
#include "util.h"

static void test_fslayout_normalize(void **state) {
        const FsRange in[] = {
                {900, 500, FS_RANGE_FREE},     /* cut off at the size */
                {0, 100, FS_RANGE_FREE},       /* overlapped by ... */
                {50, 100, FS_RANGE_USED},      /* ... used, which wins, overlapped by ... */
                {120, 10, FS_RANGE_METADATA},  /* ... metadata, which wins */
                {300, 0, FS_RANGE_METADATA},   /* empty */
                {400, 50, FS_RANGE_FREE},      /* merged with ... */
                {450, 50, FS_RANGE_FREE},      /* ... its neighbour */
                {2000, 10, FS_RANGE_METADATA}, /* beyond the end */
                {600, 10, (FsRangeKind)7},     /* invalid: used */
        };
        const FsRange want[] = {
                {0, 50, FS_RANGE_FREE},       /* free until used begins */
                {50, 70, FS_RANGE_USED},      /* used until metadata begins */
                {120, 10, FS_RANGE_METADATA}, /* metadata over both */
                {130, 270, FS_RANGE_USED},    /* up to 400: what nobody covers is used */
                {400, 100, FS_RANGE_FREE},    /* two neighbours, merged */
                {500, 400, FS_RANGE_USED},    /* nothing known: used */
                {900, 100, FS_RANGE_FREE},    /* cut off at 1000 */
        };
        FsLayout l = {};

        assert_int_equal(fs_ranges_normalize(in, ELEMENTSOF(in), 1000, &l.ranges, &l.n_ranges), 0);
        assert_int_equal(l.n_ranges, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_int_equal(l.ranges[i].offset, want[i].offset);
                assert_int_equal(l.ranges[i].length, want[i].length);
                assert_int_equal(l.ranges[i].kind, want[i].kind);
        }
        assert_int_equal(fslayout_check(&l, 1000), 0);
        assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 250);
        assert_int_equal(fslayout_bytes_in(&l, 40, 100, FS_RANGE_USED), 80);
        assert_int_equal(fslayout_find(&l, 125)->kind, FS_RANGE_METADATA);
        assert_int_equal(fslayout_find(&l, 999)->offset, 900);
        assert_null(fslayout_find(&l, 1000));
        fslayout_free(&l);

        /* Nothing known: all used. */
        assert_int_equal(fs_ranges_normalize(NULL, 0, 4096, &l.ranges, &l.n_ranges), 0);
        assert_int_equal(l.n_ranges, 1);
        assert_int_equal(l.ranges[0].kind, FS_RANGE_USED);
        assert_int_equal(l.ranges[0].length, 4096);
        fslayout_free(&l);
}

/* A range of no valid kind is not dropped, leaving the free space under it: unknown is used. */
static void test_fslayout_normalize_invalid_kind(void **state) {
        const FsRange in[] = {{0, 100, FS_RANGE_FREE}, {20, 10, (FsRangeKind)7}};
        FsLayout l = {};

        assert_int_equal(fs_ranges_normalize(in, ELEMENTSOF(in), 100, &l.ranges, &l.n_ranges), 0);
        assert_int_equal(fslayout_check(&l, 100), 0);
        assert_int_equal(fslayout_bytes_in(&l, 20, 10, FS_RANGE_USED), 10);
        assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 90);
        fslayout_free(&l);
}

static void test_fslayout_check(void **state) {
        FsRange r[] = {
                {0, 10, FS_RANGE_METADATA}, {10, 10, FS_RANGE_USED}, {20, 10, FS_RANGE_FREE}};
        FsLayout l = {.ranges = r, .n_ranges = 3};

        assert_int_equal(fslayout_check(&l, 30), 0);
        assert_int_equal(fslayout_check(&l, 31), -EBADMSG); /* short */
        assert_int_equal(fslayout_check(&l, 29), -EBADMSG); /* beyond */
        r[1].offset = 11;                                   /* gap */
        assert_int_equal(fslayout_check(&l, 30), -EBADMSG);
        r[1].offset = 10;
        r[1].kind = FS_RANGE_FREE; /* same kind twice in a row */
        assert_int_equal(fslayout_check(&l, 30), -EBADMSG);
        r[1].kind = FS_RANGE_USED;
        r[2].length = 0; /* empty */
        assert_int_equal(fslayout_check(&l, 20), -EBADMSG);
}

static void test_fslayout_errors(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        FsLayout l = {};

        assert_int_equal(fslayout_discover(dir_fd, 0, NULL, &l, &error), -EINVAL);
        assert_non_null(error);
        error = free_string(error);
        assert_int_equal(fslayout_discover(dir_fd, 4096, NULL, &l, &error), -EISDIR);
        assert_non_null(strstr(error, "Cannot read"));
        error = free_string(error);
        assert_true(fslayout_discover(-1, 4096, NULL, &l, &error) < 0);
        assert_non_null(error);
        assert_null(l.ranges);
}

/* Kinds by chunk (of 100 bytes, the last one 50): metadata and used win wherever they touch, free
 * only where one free range, its pieces added one after the other, covers a chunk whole. */
static void test_fslayout_chunk_kinds(void **state) {
        _cleanup_(fs_chunk_kinds_freep) FsChunkKinds *k = NULL;
        static const FsRangeKind want[] = {
                FS_RANGE_METADATA, /* 0: one byte of metadata in free space */
                FS_RANGE_FREE,     /* 1: free, in two pieces added one after the other */
                FS_RANGE_USED,     /* 2: free in two pieces with another range between */
                FS_RANGE_USED,     /* 3: used, said between chunk 2's two free pieces */
                FS_RANGE_USED,     /* 4: used at its last byte, free before */
                FS_RANGE_FREE,     /* 5: free, ... */
                FS_RANGE_USED,     /* 6: ... up to its last byte but one */
                FS_RANGE_USED,     /* 7: a range of an invalid kind: used */
                FS_RANGE_FREE,     /* 8: the short last chunk, free to the end */
        };

        assert_int_equal(fs_chunk_kinds_new(&k, 850, 100), 0);
        assert_int_equal(k->n_chunks, ELEMENTSOF(want));
        fs_chunk_kinds_add(k, 0, 100, FS_RANGE_FREE);
        fs_chunk_kinds_add(k, 50, 1, FS_RANGE_METADATA);
        fs_chunk_kinds_add(k, 100, 40, FS_RANGE_FREE);
        fs_chunk_kinds_add(k, 140, 60, FS_RANGE_FREE); /* extends the one before */
        fs_chunk_kinds_add(k, 200, 50, FS_RANGE_FREE);
        fs_chunk_kinds_add(k, 330, 10, FS_RANGE_USED); /* in between: not merged */
        fs_chunk_kinds_add(k, 250, 50, FS_RANGE_FREE);
        fs_chunk_kinds_add(k, 400, 99, FS_RANGE_FREE);
        fs_chunk_kinds_add(k, 499, 1, FS_RANGE_USED);
        fs_chunk_kinds_add(k, 500, 199, FS_RANGE_FREE);
        fs_chunk_kinds_add(k, 720, 10, (FsRangeKind)7);
        fs_chunk_kinds_add(k, 800, 1000, FS_RANGE_FREE); /* past the end: cut off */
        fs_chunk_kinds_flush(k);
        for (size_t c = 0; c < ELEMENTSOF(want); c++)
                if (fs_chunk_kind(k, c) != want[c])
                        fail_msg("chunk %zu: %s, want %s", c,
                                 fs_range_kind_to_string(fs_chunk_kind(k, c)),
                                 fs_range_kind_to_string(want[c]));
        assert_int_equal(fs_chunk_kinds_bytes_in(k, 0, 850, FS_RANGE_FREE), 100 + 100 + 50);
        assert_int_equal(fs_chunk_kinds_bytes_in(k, 150, 100, FS_RANGE_FREE), 50);
        assert_int_equal(fs_chunk_kinds_new(&k, 0, 100), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fslayout_normalize),
                cmocka_unit_test(test_fslayout_normalize_invalid_kind),
                cmocka_unit_test(test_fslayout_check),
                cmocka_unit_test(test_fslayout_chunk_kinds),
                FIXTURE_TEST(test_fslayout_errors),
        };

        add_sbin_to_path();
        return cmocka_run_group_tests(tests, NULL, NULL);
}
