/* SPDX-License-Identifier: MIT */
/*
 * blocklist-tool: a test tool for the snapshot's block list files (src/state/blocklist.c), as
 * ebs-hydrate-aws leaves them. Not installed.
 *
 *   blocklist-tool make DIR VOLUME-ID SNAPSHOT-ID BLOCKS [FIRST-LAST]...
 *       writes DIR/VOLUME-ID.blocks: the 512 KiB blocks FIRST to LAST (inclusive) stored, of a
 *       volume of BLOCKS blocks
 *   blocklist-tool decode FILE
 *       checks FILE and prints its lines (volume, snapshot, counts), then one FIRST-LAST line per
 *       run; exit 1 if it does not decode
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocklist.h"
#include "fileio.h"
#include "util.h"

static int print_run(uint64_t first, uint64_t count, void *userdata) {
        printf("%" PRIu64 "-%" PRIu64 "\n", first, first + count - 1);
        return 0;
}

static int make(int argc, char **argv) {
        BlockListInfo info = {};
        _cleanup_close_ int dir_fd = -1;
        uint64_t *bits;
        int r;

        if (argc < 6)
                return 2;
        (void)snprintf(info.volume_id, sizeof(info.volume_id), "%s", argv[3]);
        (void)snprintf(info.snapshot_id, sizeof(info.snapshot_id), "%s", argv[4]);
        info.n_blocks = strtoull(argv[5], NULL, 10);
        if (info.n_blocks == 0 || info.n_blocks > BLOCKLIST_BLOCKS_MAX)
                return 2;
        bits = calloc((size_t)DIV_ROUND_UP(info.n_blocks, 64), sizeof(uint64_t));
        if (!bits)
                return 1;
        for (int i = 6; i < argc; i++) {
                uint64_t a, b;

                if (sscanf(argv[i], "%" SCNu64 "-%" SCNu64, &a, &b) != 2 || a > b ||
                    b >= info.n_blocks) {
                        fprintf(stderr, "blocklist-tool: bad run '%s'\n", argv[i]);
                        free(bits);
                        return 2;
                }
                for (uint64_t j = a; j <= b; j++)
                        bits[j / 64] |= UINT64_C(1) << (j % 64);
        }
        dir_fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = dir_fd < 0 ? -errno : blocklist_save(dir_fd, &info, bits);
        free(bits);
        if (r < 0) {
                fprintf(stderr, "blocklist-tool: %s\n", strerror(-r));
                return 1;
        }
        printf("stored=%" PRIu64 " runs=%" PRIu64 "\n", info.n_stored, info.n_runs);
        return 0;
}

static int decode(const char *path) {
        _cleanup_free_ char *data = NULL;
        BlockListInfo info;
        size_t size;
        int r;

        r = read_full_file_at(AT_FDCWD, path, BLOCKLIST_FILE_MAX, &data, &size);
        if (r >= 0)
                r = blocklist_decode(data, size, &info, NULL, NULL);
        if (r < 0) {
                fprintf(stderr, "blocklist-tool: %s: %s\n", path, strerror(-r));
                return 1;
        }
        printf("volume=%s snapshot=%s blocks=%" PRIu64 " stored=%" PRIu64 " runs=%" PRIu64 "\n",
               info.volume_id, info.snapshot_id, info.n_blocks, info.n_stored, info.n_runs);
        return blocklist_decode(data, size, &info, print_run, NULL) < 0;
}

int main(int argc, char **argv) {
        if (argc >= 2 && streq(argv[1], "make"))
                return make(argc, argv);
        if (argc == 3 && streq(argv[1], "decode"))
                return decode(argv[2]);
        fprintf(stderr, "usage: blocklist-tool make DIR VOLUME-ID SNAPSHOT-ID BLOCKS "
                        "[FIRST-LAST]...\n       blocklist-tool decode FILE\n");
        return 2;
}
