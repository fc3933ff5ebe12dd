/* SPDX-License-Identifier: MIT */
/*
 * Block device access for hydration. The descriptor is only ever opened O_RDONLY: nothing in
 * this program can write to a volume.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "device.h"
#include "parse.h"
#include "sysfs.h"
#include "util.h"

char *device_path_from_arg(const char *arg) {
        char *p;

        if (strchr(arg, '/'))
                return strdup(arg);
        return asprintf(&p, "/dev/%s", arg) < 0 ? NULL : p;
}

/* The sysfs node of a block device number: /sys/dev/block/MAJ:MIN -> .../block/nvme1n1[/nvme1n1p1]
 */
static int sysfs_block_node(const char *sysfs_root, dev_t rdev, char **ret, char **ret_error) {
        _cleanup_free_ char *link = NULL;
        char *resolved;

        link = sysfs_dev_block(sysfs_root, rdev, NULL);
        if (!link)
                return -ENOMEM;
        resolved = realpath(link, NULL);
        if (!resolved) {
                int r = -errno;

                if (ret_error &&
                    asprintf(ret_error, "Cannot resolve %s: %s", link, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        *ret = resolved;
        return 0;
}

static int copy_name(char dst[KERNEL_NAME_MAX], const char *src) {
        if (strlen(src) >= KERNEL_NAME_MAX)
                return -ENAMETOOLONG;
        strcpy(dst, src);
        return 0;
}

static int kernel_name_of(const char *sysfs_root, const struct stat *st,
                          char ret_name[KERNEL_NAME_MAX], char ret_whole[KERNEL_NAME_MAX],
                          char **ret_error) {
        _cleanup_free_ char *node = NULL, *partition = NULL;
        int r;

        if (!S_ISBLK(st->st_mode))
                return -ENOTBLK;
        r = sysfs_block_node(sysfs_root, st->st_rdev, &node, ret_error);
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

int device_kernel_name(const char *sysfs_root, int fd, char ret_name[KERNEL_NAME_MAX],
                       char ret_whole[KERNEL_NAME_MAX]) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        return kernel_name_of(sysfs_root, &st, ret_name, ret_whole, NULL);
}

int block_device_verdict(mode_t mode, uint64_t size, uint32_t logical_block_size) {
        if (!S_ISBLK(mode))
                return -ENOTBLK;
        /* 512 to 64 KiB, a power of two: what the block layer allows, and a state file holds. */
        if (logical_block_size < 512 || logical_block_size > 65536 ||
            (logical_block_size & (logical_block_size - 1)) != 0)
                return -EINVAL;
        if (size == 0)
                return -ENODATA;
        /* O_DIRECT reads whole logical blocks: a tail shorter than one can never be read, so a
         * device with one could never be hydrated to the end. Real disks are whole blocks. */
        if (size % logical_block_size != 0)
                return -ERANGE;
        return 0;
}

/* -ENOTBLK, and the message that says what @path is instead. */
static int not_a_block_device(const char *path, mode_t mode, char **ret_error) {
        const char *what = file_type_name(mode);

        if (asprintf(ret_error, "%s is not a block device: it is %s", path, what) < 0)
                *ret_error = NULL;
        return -ENOTBLK;
}

/* An attribute of <sysfs>/block/<name>/queue, or 0 when it cannot be read. */
static uint64_t queue_limit(const char *sysfs_root, const char *name, const char *attr) {
        _cleanup_free_ char *path = NULL;
        uint64_t v;

        if (asprintf(&path, "%s/block/%s/queue/%s", sysfs_root, name, attr) < 0 ||
            sysfs_read_u64_at(AT_FDCWD, path, &v) < 0 || v > UINT32_MAX)
                return 0;
        return v;
}

/* The queue's limits; left 0 (unknown) when they cannot be read. A request carries at most
 * max_sectors_kb, and at most max_segments segments: of a buffer in ordinary memory, one page
 * each (its pages are rarely contiguous). */
static void read_queue_limits(const char *sysfs_root, BlockDevice *d) {
        uint64_t sectors_kb = queue_limit(sysfs_root, d->kernel_name, "max_sectors_kb");
        uint64_t segments = queue_limit(sysfs_root, d->kernel_name, "max_segments");

        d->queue_requests = (unsigned)queue_limit(sysfs_root, d->kernel_name, "nr_requests");
        d->max_request_bytes = sectors_kb * 1024;
        d->max_sectors_bytes = sectors_kb * 1024;
        if (segments > 0)
                d->max_request_bytes =
                        MIN(d->max_request_bytes > 0 ? d->max_request_bytes : UINT64_MAX,
                            segments * (uint64_t)sysconf(_SC_PAGESIZE));
}

int block_device_open(const char *path, const char *sysfs_root, BlockDevice *ret,
                      char ret_whole[KERNEL_NAME_MAX], char **ret_error) {
        _cleanup_close_ int fd = -1;
        BlockDevice d = {.fd = -1};
        struct stat st;
        int lbs, r;

        *ret_error = NULL;
        /* Looked at before it is opened: a character device is never opened (a tape rewinds, a
         * terminal becomes ours), a FIFO never blocks, a directory never reaches O_DIRECT. */
        if (stat(path, &st) < 0)
                return -errno;
        if (!S_ISBLK(st.st_mode))
                return not_a_block_device(path, st.st_mode, ret_error);
        /* O_NONBLOCK in case it was swapped for a FIFO since; cleared again below. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISBLK(st.st_mode))
                return not_a_block_device(path, st.st_mode, ret_error);
        if (fcntl(fd, F_SETFL, O_DIRECT) < 0)
                return -errno;
        r = kernel_name_of(sysfs_root, &st, d.kernel_name, ret_whole, ret_error);
        if (r < 0)
                return r;
        if (ioctl(fd, BLKGETSIZE64, &d.size) < 0 || ioctl(fd, BLKSSZGET, &lbs) < 0)
                return -errno;
        d.logical_block_size = lbs > 0 ? (uint32_t)lbs : 0;
        r = block_device_verdict(st.st_mode, d.size, d.logical_block_size);
        if (r == -ERANGE &&
            asprintf(ret_error,
                     "%s is %" PRIu64 " bytes, not a whole number of its %" PRIu32
                     "-byte logical blocks: the last %" PRIu64
                     " bytes can never be read with direct I/O, so it could "
                     "never be hydrated to the end",
                     path, d.size, d.logical_block_size, d.size % d.logical_block_size) < 0)
                *ret_error = NULL;
        if (r == -EINVAL &&
            asprintf(ret_error, "%s reports a logical block size of %d bytes", path, lbs) < 0)
                *ret_error = NULL;
        if (r < 0)
                return r;
        read_queue_limits(sysfs_root, &d);
        d.path = strdup(path);
        if (!d.path)
                return -ENOMEM;
        d.fd = TAKE_FD(fd);
        *ret = d;
        return 0;
}

unsigned block_device_requests_per_read(const BlockDevice *d, uint64_t request) {
        if (d->max_request_bytes == 0 || request == 0)
                return 1;
        return (unsigned)MIN(DIV_ROUND_UP(request, d->max_request_bytes), (uint64_t)UINT_MAX);
}

unsigned block_device_requests_per_read_min(const BlockDevice *d, uint64_t request) {
        if (d->max_sectors_bytes == 0 || request == 0)
                return 1;
        return (unsigned)MIN(MIN(DIV_ROUND_UP(request, d->max_sectors_bytes), (uint64_t)UINT_MAX),
                             (uint64_t)block_device_requests_per_read(d, request));
}

unsigned block_device_max_reads(const BlockDevice *d, uint64_t request) {
        uint64_t n;

        if (d->queue_requests == 0 || request == 0)
                return 0;
        n = (uint64_t)d->queue_requests * 3 / 4 / block_device_requests_per_read(d, request);
        return (unsigned)MAX(n, UINT64_C(1));
}

void block_device_close(BlockDevice *d) {
        if (d->fd >= 0)
                (void)close(d->fd);
        d->fd = -1;
        free(d->path);
        d->path = NULL;
}
