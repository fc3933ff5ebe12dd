/* SPDX-License-Identifier: MIT */
/*
 * One table per enumeration: an array of names indexed by the enum's values, and the two
 * lookups every enumeration with names needs, generated from it so that no enumeration spells
 * its names twice. In the manner of systemd's string tables; written here.
 *
 *   static const char *const fruit_table[_FRUIT_MAX] = {[FRUIT_APPLE] = "apple", ...};
 *   DEFINE_STRING_TABLE_LOOKUP(fruit, Fruit);
 *
 * defines `const char *fruit_to_string(Fruit)` (NULL for a value outside the table or without a
 * name) and `Fruit fruit_from_string(const char *)` (-EINVAL for NULL or an unknown name; so an
 * enumeration's _INVALID value is -EINVAL).
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <sys/types.h>

#include "util.h"

/* string_table_get() - @table[@i], or NULL when @i is outside it (negative included). */
const char *string_table_get(const char *const *table, size_t n, ssize_t i);
/* string_table_lookup() - the index of @s in @table (NULL entries skipped), or -EINVAL. */
ssize_t string_table_lookup(const char *const *table, size_t n, const char *s);

#define _DEFINE_STRING_TABLE_TO_STRING(name, type, scope)                                    \
        scope const char *name##_to_string(type i) {                                         \
                return string_table_get(name##_table, ELEMENTSOF(name##_table), (ssize_t)i); \
        }

#define _DEFINE_STRING_TABLE_FROM_STRING(name, type, scope)                                  \
        scope type name##_from_string(const char *s) {                                       \
                return (type)string_table_lookup(name##_table, ELEMENTSOF(name##_table), s); \
        }

#define DEFINE_STRING_TABLE_TO_STRING(name, type) _DEFINE_STRING_TABLE_TO_STRING(name, type, )
#define DEFINE_STRING_TABLE_LOOKUP(name, type)       \
        _DEFINE_STRING_TABLE_TO_STRING(name, type, ) \
        _DEFINE_STRING_TABLE_FROM_STRING(name, type, )
/* The same, static: for an enumeration private to one file. */
#define DEFINE_PRIVATE_STRING_TABLE_LOOKUP(name, type)     \
        _DEFINE_STRING_TABLE_TO_STRING(name, type, static) \
        _DEFINE_STRING_TABLE_FROM_STRING(name, type, static)
