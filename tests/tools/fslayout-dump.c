/* SPDX-License-Identifier: MIT */
/*
 * fslayout-dump: a test tool that maps a block device or image with the library's
 * fslayout_discover() and prints its notes, its ranges and the bytes of each kind, for the
 * fslayout tests and for people to look at a real disk. Read-only. Not installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "fslayout.h"
#include "parse.h"
#include "util.h"

#define EXIT_ERROR 1
#define EXIT_USAGE 2

static int device_size(int fd, uint64_t *ret) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISBLK(st.st_mode))
                return ioctl(fd, BLKGETSIZE64, ret) < 0 ? -errno : 0;
        if (!S_ISREG(st.st_mode))
                return -ENOTBLK;
        *ret = (uint64_t)st.st_size;
        return 0;
}

static void print_layout(const FsLayout *l, bool ranges) {
        for (size_t i = 0; i < l->n_notes; i++)
                printf("note %s\n", l->notes[i]);
        for (size_t i = 0; ranges && i < l->n_ranges; i++)
                printf("range %" PRIu64 " %" PRIu64 " %s\n", l->ranges[i].offset,
                       l->ranges[i].length, fs_range_kind_to_string(l->ranges[i].kind));
        for (FsRangeKind k = 0; k < _FS_RANGE_KIND_MAX; k++) {
                char human[FORMAT_BYTES_MAX];
                uint64_t bytes = fslayout_bytes(l, k);

                printf("%s %" PRIu64 " (%s)\n", fs_range_kind_to_string(k), bytes,
                       format_bytes(human, sizeof(human), bytes));
        }
}

static int usage(void) {
        fprintf(stderr, "Usage: fslayout-dump [--summary] DEVICE|IMAGE\n"
                        "Print which byte ranges of DEVICE hold file system metadata, which are "
                        "used and\nwhich are free: 'note TEXT' lines, 'range OFFSET LENGTH KIND' "
                        "lines (left out\nwith --summary), then the bytes of each kind.\n");
        return EXIT_USAGE;
}

int main(int argc, char *argv[]) {
        _cleanup_(fslayout_free) FsLayout layout = {};
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = -1;
        bool summary = argc == 3 && strcmp(argv[1], "--summary") == 0;
        const char *path = argv[argc - 1];
        uint64_t size;
        int r;

        if ((argc != 2 && !summary) || path[0] == '-')
                return usage();
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                fprintf(stderr, "fslayout-dump: %s: %s\n", path, strerror(errno));
                return EXIT_ERROR;
        }
        r = device_size(fd, &size);
        if (r < 0) {
                fprintf(stderr, "fslayout-dump: %s: %s\n", path, strerror(-r));
                return EXIT_ERROR;
        }
        r = fslayout_discover(fd, size, NULL, &layout, &error);
        if (r < 0) {
                fprintf(stderr, "fslayout-dump: %s: %s\n", path, error ?: strerror(-r));
                return EXIT_ERROR;
        }
        r = fslayout_check(&layout, size);
        if (r < 0) {
                fprintf(stderr, "fslayout-dump: %s: inconsistent layout\n", path);
                return EXIT_ERROR;
        }
        print_layout(&layout, !summary);
        return 0;
}
