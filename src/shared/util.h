/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by every module: cleanup attributes and the macro that makes them,
 * ownership transfer, a few arithmetic macros, time units and the size of a kernel name.
 * Nothing here does I/O.
 */
#pragma once

#include <dirent.h>
#include <stdio.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define _STRINGIFY(x) #x
#define STRINGIFY(x) _STRINGIFY(x)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
/* Without (a + b - 1), which wraps for a near the type's maximum. Unsigned operands only. */
#define DIV_ROUND_UP(a, b) ((a) / (b) + ((a) % (b) != 0))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CLAMP(x, lo, hi) MIN(MAX((x), (lo)), (hi))

/* Time in the units the code counts in: microseconds (sd-event's), and what converts to them. */
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_PER_SEC UINT64_C(1000000)
#define MSEC_PER_SEC UINT64_C(1000)

/* Room for a decimal integer of @type with its sign and NUL: 2 + the digits of its maximum. */
#define DECIMAL_STR_MAX(type) \
        (2 + (sizeof(type) <= 1 ? 3 : sizeof(type) <= 2 ? 5 : sizeof(type) <= 4 ? 10 : 20))
/* "/proc/self/fd/<fd>", "/proc/<pid>/stat": a path under /proc named by a number. */
#define PROC_PID_PATH_MAX (sizeof("/proc/self/fd/") + sizeof("/stat") + DECIMAL_STR_MAX(int64_t))

/* A block device's kernel name (nvme1n1, loop3, nvme1n1p1) with its NUL: longer is refused. */
#define KERNEL_NAME_MAX 64

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

/*
 * DEFINE_TRIVIAL_CLEANUP_FUNC() - define funcp(type *p), which calls func(*p) unless *p is NULL:
 * for _cleanup_(funcp) on a variable of @type. Whatever func returns is ignored.
 */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) {   \
                if (*p)                         \
                        (void)func(*p);         \
        }

static inline void freep(void *p) {
        free(*(void **)p);
}

static inline void closep(int *fd) {
        if (*fd >= 0)
                (void)close(*fd);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)
DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose)

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

static inline int negative_errno(int e) {
        return e > 0 ? -e : -EIO;
}

static inline const char *strempty(const char *s) {
        return s ?: "";
}

#define streq(a, b) (strcmp((a), (b)) == 0)

/* What follows @prefix in @s, or NULL when @s does not start with it. */
static inline const char *startswith(const char *s, const char *prefix) {
        size_t n = strlen(prefix);

        return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

static inline bool isempty(const char *s) {
        return !s || !*s;
}

static inline int streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}
