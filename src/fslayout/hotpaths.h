/* SPDX-License-Identifier: MIT */
/*
 * HotPaths=: where on the device the files that a workload touches first are, so that they are
 * hydrated right after the file system metadata. Files are mapped with FIEMAP; only extents of
 * file systems that sit on the device itself or on one of its partitions count.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "byte-range.h"

#define HOTPATHS_RANGES_MAX (UINT64_C(1) << 20) /* more extents than this are not collected */

/*
 * hotpaths_resolve() - the device byte ranges of the regular files named by @paths.
 * @paths: absolute paths separated by whitespace (HotPaths=); directories are walked
 *         recursively without following symbolic links or crossing file systems.
 * @disk: the device number of the whole disk being hydrated.
 * @sysfs_root: "/sys" normally.
 * @ret, @ret_n: malloc'ed ranges (unsorted, may overlap), NULL and 0 when there are none.
 *
 * A path that cannot be reached, that is on another device, or whose file system cannot map
 * its files is skipped with a warning naming it: never an error.
 * Return: 0 or -ENOMEM.
 */
int hotpaths_resolve(const char *paths, dev_t disk, const char *sysfs_root, ByteRange **ret,
                     size_t *ret_n);

/*
 * hotpaths_partition_offset() - where the block device @part starts on @disk, in bytes: 0 if
 * @part is @disk, the partition's start (<sysfs_root>/dev/block/MAJ:MIN/start, in 512-byte
 * sectors) if it is a partition of @disk. Return: 0, -EXDEV if it is neither, or the negative
 * errno of reading sysfs.
 */
int hotpaths_partition_offset(const char *sysfs_root, dev_t part, dev_t disk, uint64_t *ret);

/*
 * hotpaths_add_range() - append [@offset, @offset + @length) to *@ranges (*@n of them in room for
 * *@allocated, growing), joined to the last one if it ends where this begins. Return: 0, -ENOMEM,
 * or -E2BIG when HOTPATHS_RANGES_MAX is reached.
 */
int hotpaths_add_range(ByteRange **ranges, size_t *n, size_t *allocated, uint64_t offset,
                       uint64_t length);

/*
 * hotpaths_file_extents() - append the physical extents of the file open as @fd, moved by
 * @offset, to *@ranges (*@n of them in room for *@allocated, growing: ARRAY_GROW()). Extents
 * without a known place on the disk (delayed allocation, inline data, unknown) are left out.
 * Return: 0, -ENOMEM, -E2BIG when HOTPATHS_RANGES_MAX is reached, or the negative errno of FIEMAP
 * (-EOPNOTSUPP: the file system cannot map its files).
 */
int hotpaths_file_extents(int fd, uint64_t offset, ByteRange **ranges, size_t *n,
                          size_t *allocated);
