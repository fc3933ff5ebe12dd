/* SPDX-License-Identifier: MIT */
/*
 * HotPaths=, the part that asks the kernel: where a partition starts on its disk (sysfs), and
 * where a file's blocks are (FIEMAP), as byte ranges of the disk. hotpaths.c walks the paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "alloc-util.h"
#include "hotpaths.h"
#include "sysfs.h"
#include "util.h"

#define FIEMAP_BATCH 128
#define SKIPPED_EXTENT_FLAGS \
        (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_DATA_INLINE)

static int read_sysfs_u64(const char *sysfs_root, dev_t dev, const char *rel, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;

        path = sysfs_dev_block(sysfs_root, dev, rel);
        if (!path)
                return -ENOMEM;
        return sysfs_read_u64_at(AT_FDCWD, path, ret);
}

/* The "MAJ:MIN" in <sysfs>/dev/block/MAJ:MIN/../dev: the disk a partition belongs to. */
static int parent_disk(const char *sysfs_root, dev_t part, dev_t *ret) {
        _cleanup_free_ char *path = NULL;

        path = sysfs_dev_block(sysfs_root, part, "../dev");
        if (!path)
                return -ENOMEM;
        return sysfs_read_devnum_at(AT_FDCWD, path, ret);
}

int hotpaths_partition_offset(const char *sysfs_root, dev_t part, dev_t disk, uint64_t *ret) {
        uint64_t start;
        dev_t parent = 0;
        int r;

        if (part == disk) {
                *ret = 0;
                return 0;
        }
        r = parent_disk(sysfs_root, part, &parent);
        if (r == -ENOENT)
                return -EXDEV; /* not a block device, or a disk of its own */
        if (r < 0)
                return r;
        if (parent != disk)
                return -EXDEV;
        r = read_sysfs_u64(sysfs_root, part, "start", &start);
        if (r == -ENOENT)
                return -EXDEV; /* the parent is a whole disk only for partitions */
        if (r < 0)
                return r;
        if (start > UINT64_MAX / 512)
                return -EBADMSG;
        *ret = start * 512;
        return 0;
}

int hotpaths_add_range(ByteRange **ranges, size_t *n, size_t *allocated, uint64_t offset,
                       uint64_t length) {
        if (*n >= HOTPATHS_RANGES_MAX)
                return -E2BIG;
        if (*n > 0 && (*ranges)[*n - 1].offset + (*ranges)[*n - 1].length == offset) {
                (*ranges)[*n - 1].length += length; /* physically contiguous: one range */
                return 0;
        }
        if (ARRAY_GROW(*ranges, *allocated, *n + 1) < 0)
                return -ENOMEM;
        (*ranges)[(*n)++] = (ByteRange){offset, length};
        return 0;
}

int hotpaths_file_extents(int fd, uint64_t offset, ByteRange **ranges, size_t *n,
                          size_t *allocated) {
        _cleanup_free_ struct fiemap *fm = NULL;
        uint64_t start = 0;

        fm = calloc(1, sizeof(*fm) + FIEMAP_BATCH * sizeof(struct fiemap_extent));
        if (!fm)
                return -ENOMEM;
        for (;;) {
                bool last = false;

                *fm = (struct fiemap){.fm_start = start,
                                      .fm_length = FIEMAP_MAX_OFFSET - start,
                                      .fm_extent_count = FIEMAP_BATCH};
                if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
                        return -errno;
                if (fm->fm_mapped_extents == 0)
                        return 0;
                for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
                        const struct fiemap_extent *e = &fm->fm_extents[i];
                        int r;

                        last = last || (e->fe_flags & FIEMAP_EXTENT_LAST);
                        start = e->fe_logical + e->fe_length;
                        if ((e->fe_flags & SKIPPED_EXTENT_FLAGS) || e->fe_length == 0)
                                continue;
                        r = hotpaths_add_range(ranges, n, allocated, offset + e->fe_physical,
                                               e->fe_length);
                        if (r < 0)
                                return r;
                }
                if (last || start >= FIEMAP_MAX_OFFSET)
                        return 0;
        }
}
