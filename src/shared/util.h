/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by every module: cleanup attributes, ownership transfer and a few
 * arithmetic macros. Nothing here does I/O.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
/* Without (a + b - 1), which wraps for a near the type's maximum. Unsigned operands only. */
#define DIV_ROUND_UP(a, b) ((a) / (b) + ((a) % (b) != 0))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CLAMP(x, lo, hi) MIN(MAX((x), (lo)), (hi))

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Hand ownership of *ptr to the caller: returns the pointer and leaves NULL behind. */
#define TAKE_PTR(ptr)                             \
        ({                                        \
                __typeof__(ptr) *_pptr_ = &(ptr); \
                __typeof__(ptr) _ptr_ = *_pptr_;  \
                *_pptr_ = NULL;                   \
                _ptr_;                            \
        })

#define TAKE_FD(fd)                 \
        ({                          \
                int *_pfd_ = &(fd); \
                int _fd_ = *_pfd_;  \
                *_pfd_ = -1;        \
                _fd_;               \
        })

static inline void freep(void *p) {
        free(*(void **)p);
}

static inline void closep(int *fd) {
        if (*fd >= 0)
                (void)close(*fd);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

static inline int negative_errno(int e) {
        return e > 0 ? -e : -EIO;
}

static inline const char *strempty(const char *s) {
        return s ?: "";
}

static inline int streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}
