/* SPDX-License-Identifier: MIT */
/* Growable arrays (alloc-util.h) and the cleanup helpers DEFINE_TRIVIAL_CLEANUP_FUNC makes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "alloc-util.h"
#include "util.h"

typedef struct Item {
        uint64_t a, b;
} Item;

static void test_alloc_util_grow_from_empty(void **state) {
        _cleanup_free_ Item *items = NULL;
        size_t allocated = 0;

        (void)state;
        assert_int_equal(ARRAY_GROW(items, allocated, 1), 0);
        assert_non_null(items);
        assert_int_equal(allocated, ARRAY_GROW_MIN);
}

/* One at a time, as the lists do: every element survives each move, and growth doubles. */
static void test_alloc_util_grow_keeps_elements(void **state) {
        _cleanup_free_ Item *items = NULL;
        size_t n = 0, allocated = 0, grown = 0;

        (void)state;
        for (uint64_t i = 0; i < 10000; i++) {
                size_t before = allocated;

                assert_int_equal(ARRAY_GROW(items, allocated, n + 1), 0);
                assert_true(allocated >= n + 1);
                if (allocated != before) {
                        grown++;
                        assert_true(before == 0 || allocated == 2 * before);
                }
                items[n++] = (Item){i, ~i};
        }
        for (uint64_t i = 0; i < n; i++) {
                assert_true(items[i].a == i);
                assert_true(items[i].b == ~i);
        }
        assert_true(grown <= 11); /* 16, 32 ... 16384 */
}

static void test_alloc_util_grow_enough_room(void **state) {
        _cleanup_free_ Item *items = NULL;
        size_t allocated = 0;
        Item *before;

        (void)state;
        assert_int_equal(ARRAY_GROW(items, allocated, 100), 0);
        assert_int_equal(allocated, 100); /* at least what is asked, more than the minimum */
        before = items;
        assert_int_equal(ARRAY_GROW(items, allocated, 100), 0);
        assert_int_equal(ARRAY_GROW(items, allocated, 0), 0);
        assert_ptr_equal(items, before);
        assert_int_equal(allocated, 100);
}

/* A count whose size in bytes does not fit a size_t is refused whole, never allocated short. */
static void test_alloc_util_grow_overflow(void **state) {
        Item *items = NULL;
        size_t allocated = 0;
        void *p = NULL;

        (void)state;
        assert_int_equal(ARRAY_GROW(items, allocated, SIZE_MAX / sizeof(Item) + 1), -ENOMEM);
        assert_int_equal(ARRAY_GROW(items, allocated, SIZE_MAX), -ENOMEM);
        assert_null(items);
        assert_int_equal(allocated, 0);

        assert_int_equal(array_grow(&p, &allocated, 1, 0), -EINVAL);
        assert_null(p);
}

static unsigned closed;

typedef struct Thing {
        int id;
} Thing;

static Thing *thing_close(Thing *t) {
        closed += (unsigned)t->id;
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Thing *, thing_close)

static void test_alloc_util_trivial_cleanup(void **state) {
        Thing one = {1}, two = {2};

        (void)state;
        closed = 0;
        {
                _cleanup_(thing_closep) Thing *a = &one;
                _cleanup_(thing_closep) Thing *b = &two;
                _cleanup_(thing_closep) Thing *none = NULL;

                (void)a;
                (void)b;
                (void)none;
        }
        assert_int_equal(closed, 3); /* each once, and nothing for NULL */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_alloc_util_grow_from_empty),
                cmocka_unit_test(test_alloc_util_grow_keeps_elements),
                cmocka_unit_test(test_alloc_util_grow_enough_room),
                cmocka_unit_test(test_alloc_util_grow_overflow),
                cmocka_unit_test(test_alloc_util_trivial_cleanup),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
