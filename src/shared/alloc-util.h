/* SPDX-License-Identifier: MIT */
/*
 * Growable arrays: one way to make room for more elements, with the size arithmetic checked, for
 * every list the program builds one element at a time.
 */
#pragma once

#include <stddef.h>

/* The capacity of an array's first allocation, in elements. */
#define ARRAY_GROW_MIN 16u

/*
 * array_grow() - make room for at least @need elements of @size bytes at *@p, which holds
 * *@allocated. Grows to twice the current capacity (at least @need, at least ARRAY_GROW_MIN), so
 * that adding one element at a time costs amortised constant time; if doubling would overflow,
 * exactly @need is tried.
 *
 * Return: 0 (also when there already is room), -EINVAL if @size is 0, or -ENOMEM when out of
 * memory or when @need elements of @size bytes do not fit in a size_t. On failure *@p and
 * *@allocated are untouched, and the array is still the caller's to free.
 */
int array_grow(void **p, size_t *allocated, size_t need, size_t size);

/*
 * ARRAY_GROW() - array_grow() for a typed array and its size_t capacity:
 * "r = ARRAY_GROW(l->items, l->allocated, l->n + 1);".
 */
#define ARRAY_GROW(array, allocated, need)                                                \
        ({                                                                                \
                void *_array_ = (array);                                                  \
                int _r_ = array_grow(&_array_, &(allocated), (need), sizeof((array)[0])); \
                (array) = _array_;                                                        \
                _r_;                                                                      \
        })
