/* SPDX-License-Identifier: MIT */
/*
 * The layout of a mounted ext4 or XFS file system, from the kernel itself: the mount point is
 * found in /proc/self/mountinfo by device number, then FS_IOC_GETFSMAP lists the file system's
 * space, free extents and owners, in bytes of its own block device. Nothing is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fsmap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fslayout-scan.h"
#include "mountinfo.h"
#include "util.h"

#define FSMAP_BATCH 1024u
/* The inode owner (XFS's inode chunks, ext4's inode tables): the kernel's XFS_FMR_OWN_INODES and
 * EXT4_FMR_OWN_INODES, not in the UAPI header. */
#define FSMAP_OWN_INODES FMR_OWNER('X', 5)

/* A descriptor of the directory @path that really is on @dev: not over-mounted by something
 * else, nor hidden by a mount namespace (-EXDEV then, also when it is not there at all). */
static int open_on_device(const char *path, dev_t dev) {
        _cleanup_close_ int fd =
                open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;

        if (fd < 0)
                return errno == ENOENT ? -EXDEV : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_dev != dev)
                return -EXDEV;
        return TAKE_FD(fd);
}

typedef struct MountSearch {
        dev_t dev;
        char *path; /* the mount point found, with @fd */
        int fd;
        char *first; /* else the first mount point of @dev */
        int error;   /* and why it could not be opened */
} MountSearch;

static int find_mount_cb(const MountEntry *m, void *userdata) {
        MountSearch *q = userdata;
        int fd;

        if (m->dev != q->dev)
                return 0;
        fd = open_on_device(m->mount_point, q->dev);
        if (fd >= 0) {
                q->path = strdup(m->mount_point);
                if (!q->path) {
                        (void)close(fd);
                        return -ENOMEM;
                }
                q->fd = fd;
                return 1;
        }
        q->error = fd;
        if (!q->first) {
                q->first = strdup(m->mount_point);
                if (!q->first)
                        return -ENOMEM;
        }
        return 0;
}

int fslayout_find_mount(dev_t dev, char **ret_path, int *ret_fd) {
        MountSearch q = {.dev = dev, .fd = -1, .error = -ENOENT};
        int r = mountinfo_foreach(find_mount_cb, &q);

        if (r > 0) {
                free(q.first);
                *ret_path = q.path;
                *ret_fd = q.fd;
                return 0;
        }
        if (r < 0) {
                free(q.first);
                return r;
        }
        if (q.first)
                *ret_path = q.first;
        return q.error;
}

/* The kernel's new_encode_dev(): how GETFSMAP reports a dev_t in fmr_device (FMH_OF_DEV_T). */
static uint32_t kernel_encode_dev(dev_t dev) {
        uint32_t maj = major(dev), min = minor(dev);

        return (min & 0xffu) | (maj << 8) | ((min & ~0xffu) << 12);
}

static FsRangeKind record_kind(const struct fsmap *rec, bool inodes_used) {
        if (rec->fmr_flags & FMR_OF_SPECIAL_OWNER) {
                if (rec->fmr_owner == FMR_OWN_FREE)
                        return FS_RANGE_FREE;
                if (rec->fmr_owner == FMR_OWN_UNKNOWN) /* ext4: in use, owner not tracked */
                        return FS_RANGE_USED;
                if (rec->fmr_owner == FSMAP_OWN_INODES && inodes_used)
                        return FS_RANGE_USED;
                return FS_RANGE_METADATA; /* FS, LOG, AG, INOBT, INODES, REFC, COW, ext4's own */
        }
        if (rec->fmr_flags & (FMR_OF_EXTENT_MAP | FMR_OF_ATTR_FORK))
                return FS_RANGE_METADATA;
        return FS_RANGE_USED; /* file data (also unwritten and shared extents) */
}

typedef struct FsmapScan {
        uint32_t device;      /* fmr_device of our records */
        bool device_known;    /* false until the first record if devices are cookies */
        uint64_t offset;      /* of the file system on the whole device */
        uint64_t size;        /* of its region */
        uint64_t other_bytes; /* reported for other devices, ignored */
        bool inodes_used;     /* the inode owner's records are USED */
        FsRangeList *out;
} FsmapScan;

static int add_record(FsmapScan *s, const struct fsmap *rec) {
        if (!s->device_known) {
                s->device = rec->fmr_device;
                s->device_known = true;
        }
        if (rec->fmr_device != s->device) {
                s->other_bytes += rec->fmr_length;
                return 0;
        }
        if (rec->fmr_physical >= s->size)
                return 0;
        return fs_range_list_add(s->out, s->offset + rec->fmr_physical,
                                 MIN(rec->fmr_length, s->size - rec->fmr_physical),
                                 record_kind(rec, s->inodes_used));
}

/* Asks for everything: the low key starts at zero, the high key is all ones. */
static struct fsmap_head *fsmap_head_new(void) {
        struct fsmap_head *head = calloc(1, fsmap_sizeof(FSMAP_BATCH));

        if (!head)
                return NULL;
        head->fmh_count = FSMAP_BATCH;
        head->fmh_keys[1].fmr_device = UINT32_MAX;
        head->fmh_keys[1].fmr_flags = UINT32_MAX;
        head->fmh_keys[1].fmr_physical = UINT64_MAX;
        head->fmh_keys[1].fmr_owner = UINT64_MAX;
        head->fmh_keys[1].fmr_offset = UINT64_MAX;
        return head;
}

/* One GETFSMAP call's records. Returns 1 when there are no more to ask for. */
static int add_batch(FsmapScan *s, struct fsmap_head *head, dev_t dev) {
        const struct fsmap *last;

        if (!s->device_known && (head->fmh_oflags & FMH_OF_DEV_T)) {
                s->device = kernel_encode_dev(dev);
                s->device_known = true;
        }
        for (unsigned i = 0; i < head->fmh_entries; i++) {
                int r = add_record(s, &head->fmh_recs[i]);

                if (r < 0)
                        return r;
        }
        if (head->fmh_entries == 0)
                return 1;
        last = &head->fmh_recs[head->fmh_entries - 1];
        if (last->fmr_flags & FMR_OF_LAST)
                return 1;
        head->fmh_keys[0] = *last; /* FSMAP_ADVANCE: continue after the last record */
        return 0;
}

static int failed(char **ret_detail, int error) {
        errno = -error;
        if (asprintf(ret_detail, "GETFSMAP failed: %m") < 0)
                *ret_detail = NULL;
        return FS_SCAN_FAILED;
}

static int remark_other_devices(const FsmapScan *s, char **ret_detail) {
        if (s->other_bytes == 0)
                return FS_SCAN_MAPPED;
        *ret_detail = strdup("records of another device (external log or realtime) ignored");
        return *ret_detail ? FS_SCAN_MAPPED : -ENOMEM;
}

int fslayout_scan_fsmap(int mount_fd, dev_t dev, uint64_t offset, uint64_t size, bool inodes_used,
                        FsRangeList *out, char **ret_detail) {
        _cleanup_free_ struct fsmap_head *head = fsmap_head_new();
        FsmapScan s = {.offset = offset, .size = size, .inodes_used = inodes_used, .out = out};
        size_t n_before = out->n;
        uint64_t last_length = n_before > 0 ? out->ranges[n_before - 1].length : 0;
        int r = 0;

        *ret_detail = NULL;
        if (!head)
                return -ENOMEM;
        while (r == 0) {
                if (ioctl(mount_fd, FS_IOC_GETFSMAP, head) < 0) {
                        r = -errno;
                        /* Nothing half-done stays behind, not even a merge into the last range. */
                        out->n = n_before;
                        if (n_before > 0)
                                out->ranges[n_before - 1].length = last_length;
                        return failed(ret_detail, r);
                }
                r = add_batch(&s, head, dev);
        }
        if (r < 0)
                return r;
        return remark_other_devices(&s, ret_detail);
}
