/* SPDX-License-Identifier: MIT */
/*
 * sysfs attributes, read one way everywhere: under one root ($EBS_HYDRATE_SYSFS_ROOT, for tests
 * with a fake tree, else /sys), whole or not at all. A value cut short could pass for another
 * device's (a model, a serial) or another partition's (a start sector), so it is refused.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* The longest attribute read (the kernel's PAGE_SIZE limit on x86); longer is an error, never cut.
 */
#define SYSFS_ATTR_MAX 4096

/* sysfs_root() - $EBS_HYDRATE_SYSFS_ROOT if set, else "/sys". */
const char *sysfs_root(void);

/*
 * sysfs_read_attr_at() - read the attribute @path, relative to @dir_fd (or AT_FDCWD).
 * @ret: receives the value, malloc'ed, without its trailing newlines.
 *
 * Return: 0; -EFBIG if it is longer than SYSFS_ATTR_MAX bytes; -EBADMSG if it holds a NUL byte;
 * or the negative errno of opening (-ENOENT if absent) or reading it.
 */
int sysfs_read_attr_at(int dir_fd, const char *path, char **ret);

/* sysfs_read_u64_at() - an attribute that is one decimal number ("2048\n"). The errors of
 * sysfs_read_attr_at(), or -EBADMSG if the value is not a number that fits. */
int sysfs_read_u64_at(int dir_fd, const char *path, uint64_t *ret);

/* sysfs_disk_seq() - the kernel's sequence number of the disk @kernel_name's attachment
 * (block/NAME/diskseq, Linux 5.15 and later): a disk detached and another attached under the
 * same name differ in it. The errors of sysfs_read_u64_at() (-ENOENT on older kernels). */
int sysfs_disk_seq(const char *kernel_name, uint64_t *ret);

/*
 * sysfs_dev_block() - "<root>/dev/block/MAJ:MIN" of the block device number @dev, with "/@rel"
 * after it unless @rel is NULL (malloc'ed; NULL on ENOMEM). @root is the sysfs root a caller was
 * given, or NULL for sysfs_root().
 */
char *sysfs_dev_block(const char *root, dev_t dev, const char *rel);

/* sysfs_read_devnum_at() - an attribute that is a device number ("259:1\n", a block device's
 * "dev"). The errors of sysfs_read_attr_at(), or -EBADMSG if the value is not MAJ:MIN. */
int sysfs_read_devnum_at(int dir_fd, const char *path, dev_t *ret);

/*
 * sysfs_disks_under() - the whole disks under the block device whose sysfs directory is @dir
 * (<sysfs>/dev/block/MAJ:MIN, <sysfs>/class/block/NAME): itself, the disk of a partition, or
 * those under a device-mapper or md device (its slaves), recursively. @add is called with each
 * disk's kernel name, the same one possibly more than once; a negative return stops the walk.
 * Return: 0, or -errno (-ENOENT: no such node; -ELOOP: nested too deep), or what @add returned.
 */
int sysfs_disks_under(const char *dir, int (*add)(const char *name, void *userdata),
                      void *userdata);
