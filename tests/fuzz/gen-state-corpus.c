/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpus of the state fuzz target with the real encoder: fresh, partly done,
 * complete, a non-EBS key with a short last chunk and several unreadable ranges, and a map that
 * is not a whole number of bytes. Run it again whenever the state format changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"
#include "util.h"

#define K UINT64_C(1024)
#define M (K * K)

typedef struct Seed {
        const char *name;
        const char *key;
        uint64_t size;
        uint32_t lbs;
        uint32_t chunk_size;
        uint64_t done_every; /* mark every n-th chunk done; 1: all; 0: none */
        uint64_t bad[3][2];  /* offset, length; zero length ends the list */
} Seed;

static const Seed seeds[] = {
        {"fresh.state", "vol-0123456789abcdef0", 10 * 512 * K - 4096, 4096, 512 * K, 0, {}},
        {"partial.state",
         "vol-0fedcba9876543210",
         64 * M,
         4096,
         512 * K,
         3,
         {{5 * 512 * K, 512 * K}}},
        {"complete.state", "vol-12345678", 8 * M, 512, 512 * K, 1, {}},
        {"serial-key.state",
         "QEMU_NVMe_Ctrl_deadbeef",
         37 * M + 512,
         512,
         1 * M,
         2,
         {{0, 4096}, {3 * M, 512}, {37 * M, 512}}},
        {"odd-map.state",
         "nvme.1b36-6465616462656566-00000001",
         1 * K *M + 4096,
         4096,
         512 * K,
         7,
         {{100 * M, 2 * M}}},
};

static int write_seed(const char *dir, const Seed *seed) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        size_t size = 0;
        int r;

        r = state_new(&s, seed->key, seed->size, seed->lbs, seed->chunk_size);
        if (r < 0)
                return r;
        for (uint64_t i = 0; seed->done_every > 0 && i < s->map->n_chunks; i += seed->done_every)
                (void)chunkmap_mark_done(s->map, i, 1);
        s->complete = chunkmap_complete(s->map);
        for (size_t i = 0; i < ELEMENTSOF(seed->bad) && seed->bad[i][1] > 0; i++) {
                r = state_add_bad(s, seed->bad[i][0], seed->bad[i][1]);
                if (r < 0)
                        return r;
        }
        s->created_usec = UINT64_C(1700000000000000);
        s->updated_usec = s->created_usec + 3600 * UINT64_C(1000000);
        s->active_usec = 1800 * UINT64_C(1000000);
        s->bytes_read = chunkmap_done_bytes(s->map);
        r = state_encode(s, &buf, &size);
        if (r < 0)
                return r;
        if (asprintf(&path, "%s/%s", dir, seed->name) < 0) {
                path = NULL;
                return -ENOMEM;
        }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, size) != (ssize_t)size)
                return -errno;
        printf("%s: %zu bytes\n", path, size);
        return 0;
}

int main(int argc, char *argv[]) {
        if (argc != 2) {
                fprintf(stderr, "Usage: %s DIRECTORY\n", argv[0]);
                return 2;
        }
        for (size_t i = 0; i < ELEMENTSOF(seeds); i++) {
                int r = write_seed(argv[1], &seeds[i]);

                if (r < 0) {
                        fprintf(stderr, "%s: %s\n", seeds[i].name, strerror(-r));
                        return 1;
                }
        }
        return 0;
}
