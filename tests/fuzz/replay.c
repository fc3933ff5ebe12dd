/* SPDX-License-Identifier: MIT */
/*
 * Replays files through a fuzz target without libFuzzer, so that every build (gcc included)
 * runs the seed corpus and the crashes found earlier as ctest's fuzz/<target>. Each argument is
 * a file or a directory of files (dot files skipped), replayed in name order; an empty directory
 * is an error, since a replay of nothing proves nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "fuzz-util.h"
#include "util.h"

#define REPLAY_INPUT_MAX ((size_t)1 << 30)

/* Reads @path into an exact-size buffer, so that a read past the end is caught as in libFuzzer
 * (read_full_file_at() leaves room after the end). */
static int read_input(const char *path, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ char *data = NULL;
        uint8_t *buf;
        size_t size;
        int r;

        r = read_full_file_at(AT_FDCWD, path, REPLAY_INPUT_MAX, &data, &size);
        if (r < 0)
                return r;
        buf = malloc(MAX(size, (size_t)1));
        if (!buf)
                return -ENOMEM;
        memcpy(buf, data, size);
        *ret = buf;
        *ret_size = size;
        return 0;
}

static int replay_file(const char *path) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size = 0;
        int r;

        r = read_input(path, &buf, &size);
        if (r < 0) {
                fprintf(stderr, "Failed to read %s: %s\n", path, strerror(-r));
                return r;
        }
        fprintf(stderr, "Running: %s (%zu bytes)\n", path, size);
        (void)LLVMFuzzerTestOneInput(buf, size);
        return 0;
}

static int not_hidden(const struct dirent *de) {
        return de->d_name[0] != '.';
}

/* Returns the number of files replayed, or a negative errno. */
static int replay_dir(const char *dir) {
        struct dirent **entries = NULL;
        int n, count = 0, r = 0;

        n = scandir(dir, &entries, not_hidden, alphasort);
        if (n < 0)
                return -errno;
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                struct stat st;

                if (r >= 0 && asprintf(&path, "%s/%s", dir, entries[i]->d_name) < 0) {
                        path = NULL;
                        r = -ENOMEM;
                }
                if (r >= 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                        r = replay_file(path);
                        count++;
                }
                free(entries[i]);
        }
        free(entries);
        return r < 0 ? r : count;
}

int main(int argc, char *argv[]) {
        if (argc < 2) {
                fprintf(stderr, "Usage: %s FILE|DIRECTORY...\n", program_invocation_short_name);
                return 2;
        }
        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "Cannot access %s: %m\n", argv[i]);
                        return 1;
                }
                r = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]) < 0 ? -EIO : 1;
                if (r < 0) {
                        fprintf(stderr, "Failed to replay %s: %s\n", argv[i], strerror(-r));
                        return 1;
                }
                if (r == 0) {
                        fprintf(stderr, "%s holds no input\n", argv[i]);
                        return 1;
                }
                printf("%s: %d inputs replayed\n", argv[i], r);
        }
        return 0;
}
