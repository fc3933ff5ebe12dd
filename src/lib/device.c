/* SPDX-License-Identifier: MIT */
/*
 * Block device access for hydration. The descriptor is only ever opened O_RDONLY: nothing in
 * this program can write to a volume.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "device.h"
#include "util.h"

char *device_path_from_arg(const char *arg) {
        char *p;

        if (strchr(arg, '/'))
                return strdup(arg);
        return asprintf(&p, "/dev/%s", arg) < 0 ? NULL : p;
}

/* The sysfs node of a block device number: /sys/dev/block/MAJ:MIN -> .../block/nvme1n1[/nvme1n1p1]
 */
static int sysfs_block_node(const char *sysfs_root, dev_t rdev, char **ret) {
        _cleanup_free_ char *link = NULL;
        char *resolved;

        if (asprintf(&link, "%s/dev/block/%u:%u", sysfs_root, major(rdev), minor(rdev)) < 0)
                return -ENOMEM;
        resolved = realpath(link, NULL);
        if (!resolved)
                return -errno;
        *ret = resolved;
        return 0;
}

static int copy_name(char dst[64], const char *src) {
        if (strlen(src) >= 64)
                return -ENAMETOOLONG;
        strcpy(dst, src);
        return 0;
}

int device_kernel_name(const char *sysfs_root, int fd, char ret_name[64], char ret_whole[64]) {
        _cleanup_free_ char *node = NULL, *partition = NULL;
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISBLK(st.st_mode))
                return -ENOTBLK;
        r = sysfs_block_node(sysfs_root, st.st_rdev, &node);
        if (r < 0)
                return r;
        r = copy_name(ret_name, basename(node));
        if (r < 0)
                return r;
        if (asprintf(&partition, "%s/partition", node) < 0)
                return -ENOMEM;
        if (access(partition, F_OK) == 0) {
                r = copy_name(ret_whole, basename(dirname(node)));
                return r < 0 ? r : -EISDIR;
        }
        return 0;
}

int block_device_open(const char *path, const char *sysfs_root, BlockDevice *ret,
                      char ret_whole[64]) {
        _cleanup_close_ int fd = -1;
        BlockDevice d = {.fd = -1};
        int lbs, r;

        fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        r = device_kernel_name(sysfs_root, fd, d.kernel_name, ret_whole);
        if (r < 0)
                return r;
        if (ioctl(fd, BLKGETSIZE64, &d.size) < 0 || ioctl(fd, BLKSSZGET, &lbs) < 0)
                return -errno;
        if (d.size == 0)
                return -ENODATA;
        if (lbs < 512 || (lbs & (lbs - 1)) != 0)
                return -EINVAL;
        d.logical_block_size = (uint32_t)lbs;
        d.path = strdup(path);
        if (!d.path)
                return -ENOMEM;
        d.fd = TAKE_FD(fd);
        *ret = d;
        return 0;
}

void block_device_close(BlockDevice *d) {
        if (d->fd >= 0)
                (void)close(d->fd);
        d->fd = -1;
        free(d->path);
        d->path = NULL;
}
