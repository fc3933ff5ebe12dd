/* SPDX-License-Identifier: MIT */
/*
 * Which whole disks hold a target: a kernel name (a disk, a partition, a device-mapper or md
 * device), a block device node, or a file on a mounted file system (by its st_dev, or by the
 * mount table where st_dev is anonymous: btrfs, and overlayfs through its layers). A name that
 * is none of these (a volume id, a mapping name, a disk not attached yet) is left to the caller.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* The whole disks found, by kernel name (nvme1n1), each once, in the order found. */
typedef struct DiskSet {
        char **names;
        size_t n, allocated;
} DiskSet;

void disk_set_done(DiskSet *s);

/* Why the disks of a target were not found, told to the caller's explain() as it is found out,
 * so that the caller phrases it: a layer's failure comes before its overlay's. */
typedef enum DisksFailure {
        DISKS_NO_MEMORY,
        DISKS_STAT,            /* @path cannot be looked at (@error) */
        DISKS_NOT_BLOCK,       /* @path is on no block device: @dev, its st_dev, names none */
        DISKS_OVERLAY_DEEP,    /* @path is on overlays nested too deep to follow */
        DISKS_OVERLAY_UNNAMED, /* @path is on an overlay whose layers the mount table omits */
        DISKS_OVERLAY_LAYER,   /* @path is on an overlay whose layer @layer failed (told before) */
} DisksFailure;

typedef struct DisksError {
        DisksFailure failure;
        int error; /* the negative errno returned for it */
        const char *path;
        const char *layer; /* DISKS_OVERLAY_LAYER */
        dev_t dev;         /* DISKS_NOT_BLOCK */
} DisksError;

typedef void (*disks_explain_t)(const DisksError *e, void *userdata);

/*
 * disks_of_target() - the whole disks that @target names, added to @s. Without a '/' it is a
 * kernel name under <sysfs_root>/class/block; with one, a path: a block device, or a file whose
 * file system's disks are found (sysfs_disks_under()). A path under /dev/ that does not exist
 * and has no other '/' is a mapping name (/dev/sdf) or a disk not attached yet (/dev/nvme1n1).
 *
 * Return: 0 with the disks in @s; 1 when @target is a name to be matched as it is (a volume id,
 * a mapping name, a disk not attached yet); -ENOENT, -ENOTDIR or -ENODEV for a path that can
 * never name a disk; another -errno for one that could not be looked at (-EACCES), -ELOOP or
 * -ENOMEM. Each failure is told to @explain (may be NULL) first.
 */
int disks_of_target(const char *target, DiskSet *s, disks_explain_t explain, void *userdata);
