/* SPDX-License-Identifier: MIT */
/*
 * Opening the block device to hydrate: read-only and O_DIRECT, always. Resolves the kernel
 * name from the device number (so /dev/disk/by-id links work), rejects partitions and
 * non-block files, and reads the size and logical block size from the kernel.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "util.h"

typedef struct BlockDevice {
        int fd;                            /* O_RDONLY | O_DIRECT */
        char *path;                        /* as given or /dev/<name> */
        char kernel_name[KERNEL_NAME_MAX]; /* nvme1n1 */
        uint64_t size;                     /* bytes, BLKGETSIZE64 */
        uint32_t logical_block_size;       /* BLKSSZGET */
        unsigned queue_requests;           /* queue/nr_requests: requests it holds; 0 unknown */
        uint64_t max_request_bytes; /* the most one request carries: queue/max_sectors_kb, and
                                     * queue/max_segments pages of a buffer whose pages are
                                     * not contiguous; 0 unknown */
        uint64_t max_sectors_bytes; /* queue/max_sectors_kb alone: the fewest requests a read
                                     * becomes, whatever its buffer; 0 unknown */
} BlockDevice;

/*
 * block_device_max_reads() - how many reads of @request bytes @d takes at once without
 * io_submit() blocking for a free request (a read larger than max_request_bytes is several),
 * leaving a quarter of its requests to everyone else's I/O; 0 when its queue is not known.
 */
unsigned block_device_max_reads(const BlockDevice *d, uint64_t request);
/* block_device_requests_per_read() - the requests a read of @request bytes becomes on @d (1
 * when its limits are not known). */
unsigned block_device_requests_per_read(const BlockDevice *d, uint64_t request);
/* block_device_requests_per_read_min() - the fewest requests a read of @request bytes becomes
 * on @d: its buffer's pages may be contiguous (a huge page), and then only max_sectors_kb
 * splits it (1 when not known). */
unsigned block_device_requests_per_read_min(const BlockDevice *d, uint64_t request);

/* device_path_from_arg() - "/dev/nvme1n1" stays, "nvme1n1" becomes "/dev/nvme1n1" (malloc'ed). */
char *device_path_from_arg(const char *arg);

/*
 * device_kernel_name() - the kernel name of the block device open as @fd, from its device
 * number through <sysfs_root>/dev/block/MAJ:MIN (so any /dev path or link works).
 * Returns 0; -EISDIR for a partition, with its name in @ret_name and the whole disk's in
 * @ret_whole; -ENOTBLK if @fd is not a block device.
 */
int device_kernel_name(const char *sysfs_root, int fd, char ret_name[KERNEL_NAME_MAX],
                       char ret_whole[KERNEL_NAME_MAX]);

/*
 * block_device_verdict() - whether a file with @mode, @size bytes and @logical_block_size can be
 * hydrated: 0; -ENOTBLK (not a block device), -EINVAL (a block size that is not a power of two
 * from 512 to 64 KiB), -ENODATA (size 0), -ERANGE (a size that is not a whole number of logical
 * blocks: its tail cannot be read with O_DIRECT). Pure: the fuzzer drives it.
 */
int block_device_verdict(mode_t mode, uint64_t size, uint32_t logical_block_size);

/*
 * block_device_open() - open @path for hydration. @sysfs_root is "/sys" normally. The path is
 * looked at first, and opened only if it is a block device (never blocks on a FIFO).
 * Errors: those of block_device_verdict(), -EISDIR with *ret_whole set (a partition: the whole
 * disk's kernel name goes there), or the errno of stat/open/ioctl or of the sysfs lookup. Where
 * more can be said than the errno, *ret_error is a malloc'ed message naming the file (the path,
 * or the sysfs path that could not be resolved); NULL otherwise.
 */
int block_device_open(const char *path, const char *sysfs_root, BlockDevice *ret,
                      char ret_whole[KERNEL_NAME_MAX], char **ret_error);
void block_device_close(BlockDevice *d);
