/* SPDX-License-Identifier: MIT */
/* One table per enumeration (shared/string-table.h): both lookups, their edges, the macros. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "string-table.h"

typedef enum Fruit {
        FRUIT_APPLE,
        FRUIT_PEAR,
        FRUIT_NAMELESS, /* in the enumeration, not in the table's names */
        FRUIT_QUINCE,
        _FRUIT_MAX,
        _FRUIT_INVALID = -EINVAL,
} Fruit;

static const char *const fruit_table[_FRUIT_MAX] = {
        [FRUIT_APPLE] = "apple",
        [FRUIT_PEAR] = "pear",
        [FRUIT_QUINCE] = "quince",
};

DEFINE_PRIVATE_STRING_TABLE_LOOKUP(fruit, Fruit)

static void test_string_table_to_string(void **state) {
        assert_string_equal(fruit_to_string(FRUIT_APPLE), "apple");
        assert_string_equal(fruit_to_string(FRUIT_QUINCE), "quince");
        assert_null(fruit_to_string(FRUIT_NAMELESS));
        assert_null(fruit_to_string(_FRUIT_MAX));
        assert_null(fruit_to_string(_FRUIT_INVALID));
        assert_null(fruit_to_string((Fruit)-1));
}

static void test_string_table_from_string(void **state) {
        assert_int_equal(fruit_from_string("apple"), FRUIT_APPLE);
        assert_int_equal(fruit_from_string("quince"), FRUIT_QUINCE);
        /* a name is matched whole and exactly */
        assert_int_equal(fruit_from_string("Apple"), _FRUIT_INVALID);
        assert_int_equal(fruit_from_string("appl"), _FRUIT_INVALID);
        assert_int_equal(fruit_from_string("apples"), _FRUIT_INVALID);
        assert_int_equal(fruit_from_string(""), _FRUIT_INVALID);
        assert_int_equal(fruit_from_string(NULL), _FRUIT_INVALID);
}

static void test_string_table_round_trip(void **state) {
        for (Fruit f = 0; f < _FRUIT_MAX; f++) {
                const char *s = fruit_to_string(f);

                if (s)
                        assert_int_equal(fruit_from_string(s), f);
        }
}

static void test_string_table_get_bounds(void **state) {
        static const char *const t[] = {"a", "b"};

        assert_string_equal(string_table_get(t, 2, 1), "b");
        assert_null(string_table_get(t, 2, 2));
        assert_null(string_table_get(t, 2, -1));
        assert_null(string_table_get(t, 0, 0));
        assert_int_equal(string_table_lookup(t, 1, "b"),
                         -EINVAL); /* only the first n are looked at */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_string_table_to_string),
                cmocka_unit_test(test_string_table_from_string),
                cmocka_unit_test(test_string_table_round_trip),
                cmocka_unit_test(test_string_table_get_bounds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
