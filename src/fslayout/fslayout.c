/* SPDX-License-Identifier: MIT */
/*
 * fslayout_discover(): the partition table with libblkid (its own sectors are metadata, the
 * space between partitions is used: fslayout-partitions.c), then the content of each partition,
 * or of the whole device, handed to the scanner that can map it: GETFSMAP when mounted,
 * libext2fs for ext2/3/4 otherwise; XFS's AG metadata is also read from the device, mounted or
 * not. Whatever cannot be mapped is used, and its note (fslayout-notes.c) says why; so is
 * whatever two partitions claim at once.
 */
#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fslayout-internal.h"
#include "util.h"

/* How far into a region libblkid's probes read, from its start and from its end: with every
 * superblock prober of libblkid 2.38 on a region of zeros, at 1, 2 and 4 MiB from the start and
 * 1.5 MiB before the end, besides the first and last few KiB (unit/fslayout-partitions checks
 * it against the page cache). Told ahead, they are read at queue depth: each one left out was a
 * cold read of its own before the plan could start (four, half a second on a 120 ms volume). */
#define PROBE_HEAD_SPAN (UINT64_C(5) << 20)
#define PROBE_TAIL_SPAN (UINT64_C(2) << 20)

static void layout_scan_done(LayoutScan *d) {
        if (d->fd >= 0)
                (void)close(d->fd);
        for (size_t i = 0; i < d->n_regions; i++) {
                free(d->regions[i].fstype);
                free(d->regions[i].state);
                free(d->regions[i].detail);
        }
        free(d->regions);
        free(d->table_type);
        fs_range_list_done(&d->extended);
        fs_chunk_kinds_free(d->list.chunks);
        fs_range_list_done(&d->list);
        for (size_t i = 0; i < d->n_notes; i++)
                free(d->notes[i]);
        free(d->notes);
}

int layout_set_string(char **s, const char *value) {
        free(*s);
        *s = strdup(value);
        return *s ? 0 : -ENOMEM;
}

int layout_set_stringf(char **s, const char *format, ...) {
        va_list ap;
        int r;

        free(*s);
        va_start(ap, format);
        r = vasprintf(s, format, ap);
        va_end(ap);
        if (r < 0) {
                *s = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* Our own descriptor, read through the page cache: libblkid and libext2fs read at any
 * alignment, which a caller's O_DIRECT descriptor would refuse. */
static int layout_scan_open(LayoutScan *d, int fd, char **error) {
        char probe[SECTOR];
        char path[PROC_PID_PATH_MAX];

        (void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        d->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (d->fd < 0 || fstat(d->fd, &d->st) < 0) {
                int r = -errno;

                (void)layout_set_stringf(error, "Cannot open the device again as %s: %m", path);
                return r;
        }
        (void)snprintf(d->path, sizeof(d->path), "/proc/self/fd/%d", d->fd);
        if (pread(d->fd, probe, MIN(sizeof(probe), d->size), 0) < 0) {
                int r = -errno;

                (void)layout_set_stringf(error, "Cannot read the device: %m");
                return r;
        }
        return 0;
}

/* libblkid reads near both ends of what it probes: partition tables and most superblocks at
 * the start, backup GPT, RAID and ZFS labels at the end. */
static void hint_probe(const LayoutScan *d, uint64_t offset, uint64_t size) {
        _cleanup_(fs_range_list_done) FsRangeList l = {};
        uint64_t head = MIN(size, PROBE_HEAD_SPAN), tail = MIN(size - head, PROBE_TAIL_SPAN);

        if (fs_range_list_add(&l, offset, head, FS_RANGE_USED) >= 0 &&
            (tail == 0 || fs_range_list_add(&l, offset + size - tail, tail, FS_RANGE_USED) >= 0))
                fs_hint_ahead(d->hints, &l);
}

/* libblkid's TYPE of the region's content, or a detail that says why there is none. */
static int probe_content(LayoutScan *d, Region *region) {
        _cleanup_(blkid_free_probep) blkid_probe pr = blkid_new_probe();
        const char *type = NULL;
        int r;

        if (!pr)
                return -ENOMEM;
        if (region->partno > 0)
                hint_probe(d, region->offset, region->size);
        if (blkid_probe_set_device(pr, d->fd, (blkid_loff_t)region->offset,
                                   (blkid_loff_t)region->size) < 0)
                return layout_set_string(&region->detail, "content not probed (libblkid failed)");
        (void)blkid_probe_enable_superblocks(pr, 1);
        (void)blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
        r = blkid_do_safeprobe(pr);
        if (r == -2)
                return layout_set_string(&region->detail, "signatures of several file systems");
        if (r < 0)
                return layout_set_string(&region->detail, "content not probed (libblkid failed)");
        if (r == 1 || blkid_probe_lookup_value(pr, "TYPE", &type, NULL) < 0 || !type)
                return layout_set_string(&region->detail, "unknown content");
        return layout_set_string(&region->fstype, type);
}

static bool is_ext(const char *fstype) {
        return streq_ptr(fstype, "ext2") || streq_ptr(fstype, "ext3") ||
               streq_ptr(fstype, "ext4") || streq_ptr(fstype, "ext4dev");
}

/* Where the region's file system is mounted: a descriptor of its mount point in *@ret_fd, or
 * -1 and the region's state says why not. 0 or -ENOMEM. */
static int find_mount(LayoutScan *d, Region *region, char **ret_path, int *ret_fd) {
        int r;

        *ret_fd = -1;
        if (region->dev == 0)
                return layout_set_string(&region->state, S_ISREG(d->st.st_mode)
                                                                 ? "image file"
                                                                 : "mount state unknown");
        r = fslayout_find_mount(region->dev, ret_path, ret_fd);
        if (r == -ENOENT)
                return layout_set_string(&region->state, "unmounted");
        if (r == -EXDEV)
                return layout_set_stringf(&region->state, "mounted on %s, hidden from here",
                                          strempty(*ret_path));
        if (r < 0) {
                errno = -r;
                return layout_set_stringf(&region->state, "mounted on %s, not accessible: %m",
                                          strempty(*ret_path));
        }
        return 0;
}

/*
 * A mounted ext4 or XFS: GETFSMAP, and what it does not tell, read from the device first. A
 * mounted ext4's GETFSMAP reports its journal as in use by nobody in particular, and its inode
 * tables whole; XFS's AG headers, btrees, inode chunks and log come as in use by an unknown
 * owner without the reverse-mapping btree (mkfs.xfs's default). Where they lie changes little
 * while mounted, and what is on disk may lag behind by the blocks the file system gained or gave
 * up since: good enough for an order of reading, and free space is never taken from it. Read
 * first, so that the bitmaps and btree blocks the kernel reads for GETFSMAP were fetched ahead
 * (hints). By chunk, what is read goes straight into the chunk kinds, as it comes (a list of the
 * ranges of every group's metadata would grow with the file system); if GETFSMAP fails, the
 * scan that follows only says it again. Returns 1 if GETFSMAP mapped the region, 0 to go on as
 * if unmounted (state set), or -ENOMEM.
 */
static int scan_mounted(LayoutScan *d, Region *region, bool xfs, int mount_fd,
                        const char *mount_point) {
        _cleanup_(fs_range_list_done) FsRangeList own = {.chunks = d->list.chunks};
        _cleanup_free_ char *failure = NULL, *ignored = NULL;
        int r, own_r;

        own_r = xfs ? fslayout_scan_xfs(d->path, region->offset, region->size, d->hints, &own,
                                        &ignored)
                    : fslayout_scan_ext(d->path, region->offset, region->size, true, d->hints, &own,
                                        &ignored);
        if (own_r < 0)
                return own_r;
        r = fslayout_scan_fsmap(mount_fd, region->dev, region->offset, region->size,
                                !xfs && own_r == FS_SCAN_METADATA_ONLY, &d->list, &failure);
        if (r < 0)
                return r;
        if (r != FS_SCAN_MAPPED)
                return layout_set_stringf(&region->state, "mounted on %s, %s", mount_point,
                                          strempty(failure));
        region->method = own_r != FS_SCAN_METADATA_ONLY ? "GETFSMAP"
                         : xfs ? "GETFSMAP, own reading for the AG metadata"
                               : "GETFSMAP, libext2fs for the journal and inode tables";
        region->result = FS_SCAN_MAPPED;
        region->detail = TAKE_PTR(failure);
        r = fs_range_list_append(&d->list, &own);
        if (r >= 0)
                r = layout_set_stringf(&region->state, "mounted on %s", mount_point);
        return r < 0 ? r : 1;
}

static int scan_ext(LayoutScan *d, Region *region) {
        int r;

        r = fslayout_scan_ext(d->path, region->offset, region->size, false, d->hints, &d->list,
                              &region->detail);
        if (r < 0)
                return r;
        region->result = r;
        if (r != FS_SCAN_FAILED)
                region->method = "libext2fs";
        return 0;
}

/* An XFS that GETFSMAP could not map (not mounted, or out of reach): its metadata, read from the
 * device; the rest stays used. */
static int scan_xfs(LayoutScan *d, Region *region) {
        int r;

        r = fslayout_scan_xfs(d->path, region->offset, region->size, d->hints, &d->list,
                              &region->detail);
        if (r < 0)
                return r;
        region->result = r;
        if (r != FS_SCAN_FAILED)
                region->method = "own reading of the XFS metadata";
        return 0;
}

static int scan_region(LayoutScan *d, Region *region) {
        _cleanup_free_ char *mount_point = NULL;
        _cleanup_close_ int mount_fd = -1;
        bool xfs;
        int r;

        if (region->overlaps)
                return 0;
        r = probe_content(d, region);
        if (r < 0 || !region->fstype)
                return r;
        xfs = streq_ptr(region->fstype, "xfs");
        if (!xfs && !is_ext(region->fstype))
                return layout_set_string(&region->detail, "free space unknown");
        r = find_mount(d, region, &mount_point, &mount_fd);
        if (r < 0)
                return r;
        if (mount_fd >= 0) {
                r = scan_mounted(d, region, xfs, mount_fd, mount_point);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return xfs ? scan_xfs(d, region) : scan_ext(d, region);
}

/* The layout of what the scans added to d->list: normalised ranges, or the chunk kinds. */
static int make_layout(LayoutScan *d, FsLayout *l) {
        if (d->list.chunks) {
                int r = fs_chunk_kinds_flush(d->list.chunks);

                if (r < 0)
                        return r;
                l->chunks = TAKE_PTR(d->list.chunks);
                return 0;
        }
        return fs_ranges_normalize(d->list.ranges, d->list.n, d->size, &l->ranges, &l->n_ranges);
}

/* fslayout_discover() with @chunk_size 0, else fslayout_discover_chunks(). */
static int discover(int fd, uint64_t device_size, uint32_t chunk_size, const FsLayoutHints *hints,
                    FsLayout *ret, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        LayoutScan d = {.hints = hints, .fd = -1, .size = device_size};
        FsLayout l = {};
        int r = 0;

        if (device_size == 0) {
                r = -EINVAL;
                (void)layout_set_string(&error, "The device is empty");
        }
        if (r >= 0 && chunk_size > 0) {
                r = fs_chunk_kinds_new(&d.list.chunks, device_size, chunk_size);
                if (r < 0)
                        (void)layout_set_string(&error, "Cannot map the device: out of memory");
        }
        if (r >= 0)
                hint_probe(&d, 0, device_size);
        if (r >= 0)
                r = layout_scan_open(&d, fd, &error);
        if (r >= 0)
                r = layout_scan_partitions(&d, &error);
        for (size_t i = 0; r >= 0 && i < d.n_regions; i++)
                r = scan_region(&d, &d.regions[i]);
        if (r >= 0)
                r = layout_scan_claim_unmapped(&d);
        if (r >= 0)
                r = make_layout(&d, &l);
        if (r >= 0)
                r = layout_scan_add_notes(&d, &l);
        if (r >= 0) {
                l.notes = TAKE_PTR(d.notes);
                l.n_notes = d.n_notes;
                d.n_notes = 0;
                *ret = l;
        } else {
                errno = -r;
                if (!error)
                        (void)layout_set_stringf(&error, "Cannot map the device: %m");
                if (ret_error)
                        *ret_error = TAKE_PTR(error);
                fslayout_free(&l);
        }
        layout_scan_done(&d);
        return r;
}

int fslayout_discover(int fd, uint64_t device_size, const FsLayoutHints *hints, FsLayout *ret,
                      char **ret_error) {
        return discover(fd, device_size, 0, hints, ret, ret_error);
}

int fslayout_discover_chunks(int fd, uint64_t device_size, uint32_t chunk_size,
                             const FsLayoutHints *hints, FsLayout *ret, char **ret_error) {
        if (chunk_size == 0) {
                if (ret_error)
                        *ret_error = strdup("No chunk size");
                return -EINVAL;
        }
        return discover(fd, device_size, chunk_size, hints, ret, ret_error);
}
