/* SPDX-License-Identifier: MIT */
/* The two lookups behind DEFINE_STRING_TABLE_LOOKUP (string-table.h). */
#include <string.h>

#include "string-table.h"

const char *string_table_get(const char *const *table, size_t n, ssize_t i) {
        return i >= 0 && (size_t)i < n ? table[i] : NULL;
}

ssize_t string_table_lookup(const char *const *table, size_t n, const char *s) {
        for (size_t i = 0; s && i < n; i++)
                if (table[i] && strcmp(table[i], s) == 0)
                        return (ssize_t)i;
        return -EINVAL;
}
