/* SPDX-License-Identifier: MIT */
/*
 * Growable arrays (alloc-util.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "util.h"

int array_grow(void **p, size_t *allocated, size_t need, size_t size) {
        size_t n;
        void *q;

        if (size == 0)
                return -EINVAL;
        if (need <= *allocated)
                return 0;
        if (need > SIZE_MAX / size)
                return -ENOMEM;
        n = MAX(need, (size_t)ARRAY_GROW_MIN);
        if (*allocated <= SIZE_MAX / 2 / size)
                n = MAX(n, *allocated * 2);
        n = MIN(n, SIZE_MAX / size); /* ARRAY_GROW_MIN may not fit where @need does */
        q = realloc(*p, n * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *allocated = n;
        return 0;
}
