/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets share: splitting one input into several parts at "%%" lines, a
 * scratch directory (on tmpfs unless $TMPDIR says otherwise) for one input at a time, and an
 * assertion that aborts (so libFuzzer and the replay both report it) whatever NDEBUG says.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* One part of an input; size 0 means "absent" to every target. */
typedef struct FuzzChunk {
        const uint8_t *data;
        size_t size;
} FuzzChunk;

#define fuzz_assert(expr)                                                        \
        do {                                                                     \
                if (!(expr))                                                     \
                        fuzz_assert_failed(#expr, __FILE__, __LINE__, __func__); \
        } while (0)

_Noreturn void fuzz_assert_failed(const char *expr, const char *file, int line, const char *func);

/* The entry point each target defines; the replay driver and libFuzzer call it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * fuzz_split() - cut @data at every line that is exactly "%%": "a\n%%\nb" is "a" and "b", and a
 * part that is to end in a newline has a blank line before the separator. Fills up to @max
 * parts, zeroes the rest, and returns how many parts the input had (possibly more than @max).
 */
size_t fuzz_split(const uint8_t *data, size_t size, FuzzChunk *chunks, size_t max);

/* fuzz_strdup() - @c up to its first NUL as a C string (malloc'ed); NULL if @c is absent. */
char *fuzz_strdup(const FuzzChunk *c);

/* fuzz_scratch_dir() - the current input's scratch directory, made on first use under $TMPDIR,
 * else /dev/shm if writable, else /tmp. */
const char *fuzz_scratch_dir(void);

/* fuzz_mkdirs() - make <scratch>/@rel and its parents. */
void fuzz_mkdirs(const char *rel);

/* fuzz_write_file() - write <scratch>/@rel, parents included, unless @c is absent. */
void fuzz_write_file(const char *rel, const FuzzChunk *c);

/* fuzz_scratch_clear() - remove the scratch directory, if any: call it at the end of each input. */
void fuzz_scratch_clear(void);
