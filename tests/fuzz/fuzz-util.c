/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the fuzz targets: input splitting and a scratch tree that lives for one input:
 * made on first use, removed by fuzz_scratch_clear() at the end of the input (or on the way to
 * abort() when an invariant fails), so that nothing carries over to the next input.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz-util.h"
#include "util.h"

/* The current input's scratch tree, "" when there is none. */
static char scratch[PATH_MAX];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        return remove(path) < 0 ? -1 : 0;
}

/* Removes the scratch tree; quiet, as it also runs on the way to abort(). */
static int scratch_remove(void) {
        int r = 0;

        if (scratch[0])
                r = nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        scratch[0] = '\0';
        return r;
}

void fuzz_assert_failed(const char *expr, const char *file, int line, const char *func) {
        fprintf(stderr, "%s:%d: %s: invariant violated: %s\n", file, line, func, expr);
        (void)scratch_remove(); /* the input alone reproduces the failure */
        abort();
}

size_t fuzz_split(const uint8_t *data, size_t size, FuzzChunk *chunks, size_t max) {
        size_t n = 0, start = 0;

        memset(chunks, 0, max * sizeof(*chunks));
        for (size_t i = 0; i <= size; i++) {
                bool line_start = i == 0 || data[i - 1] == '\n';
                bool separator = line_start && size - i >= 2 && memcmp(data + i, "%%", 2) == 0 &&
                                 (size - i == 2 || data[i + 2] == '\n');

                if (!separator && i < size)
                        continue;
                if (n < max) /* without the line break before the separator */
                        chunks[n] = (FuzzChunk){data + start, i - start - (separator && i > start)};
                n++;
                if (i == size)
                        break;
                start = MIN(i + 3, size);
                i = start - 1;
        }
        return n;
}

char *fuzz_strdup(const FuzzChunk *c) {
        char *s;

        if (c->size == 0)
                return NULL;
        s = strndup((const char *)c->data, c->size);
        fuzz_assert(s);
        return s;
}

const char *fuzz_scratch_dir(void) {
        const char *tmp = getenv("TMPDIR");
        int n;

        if (scratch[0])
                return scratch;
        if (!tmp || !*tmp)
                tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        n = snprintf(scratch, sizeof(scratch), "%s/ebs-hydrate-fuzz-XXXXXX", tmp);
        fuzz_assert(n > 0 && (size_t)n < sizeof(scratch));
        fuzz_assert(mkdtemp(scratch));
        return scratch;
}

static void scratch_path(char path[static PATH_MAX], const char *rel) {
        int n = snprintf(path, PATH_MAX, "%s/%s", fuzz_scratch_dir(), rel);

        fuzz_assert(n > 0 && n < PATH_MAX);
}

void fuzz_mkdirs(const char *rel) {
        char path[PATH_MAX];
        size_t skip = strlen(fuzz_scratch_dir()) + 1;

        scratch_path(path, rel);
        for (char *p = path + skip;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char c = *p;

                *p = '\0';
                fuzz_assert(mkdir(path, 0700) == 0 || errno == EEXIST);
                *p = c;
                if (c == '\0')
                        break;
        }
}

void fuzz_write_file(const char *rel, const FuzzChunk *c) {
        char path[PATH_MAX], *slash;
        const uint8_t *p = c->data;
        size_t left = c->size;
        int fd;

        if (c->size == 0)
                return;
        slash = strrchr(rel, '/');
        if (slash) {
                char dir[PATH_MAX];

                fuzz_assert((size_t)(slash - rel) < sizeof(dir));
                memcpy(dir, rel, (size_t)(slash - rel));
                dir[slash - rel] = '\0';
                fuzz_mkdirs(dir);
        }
        scratch_path(path, rel);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        fuzz_assert(fd >= 0);
        while (left > 0) {
                ssize_t n = write(fd, p, left);

                fuzz_assert(n > 0);
                p += n;
                left -= (size_t)n;
        }
        fuzz_assert(close(fd) == 0);
}

void fuzz_scratch_clear(void) {
        fuzz_assert(scratch_remove() == 0);
}
