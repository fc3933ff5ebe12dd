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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fslayout_normalize),
                cmocka_unit_test(test_fslayout_normalize_invalid_kind),
                cmocka_unit_test(test_fslayout_check),
                FIXTURE_TEST(test_fslayout_errors),
        };

        add_sbin_to_path();
        return cmocka_run_group_tests(tests, NULL, NULL);
}
