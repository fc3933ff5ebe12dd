/* SPDX-License-Identifier: MIT */
/*
 * fslayout_discover(): the partition table with libblkid (its own sectors are metadata, the
 * space between partitions is used), then the content of each partition, or of the whole
 * device, handed to the scanner that can map it: GETFSMAP when mounted, libext2fs for ext2/3/4
 * otherwise; XFS's AG metadata is also read from the device, mounted or not. Whatever cannot be
 * mapped is used, and its note says why; so is whatever two partitions claim at once.
 */
#include <blkid.h>
#include <dirent.h>
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

#include "alloc-util.h"
#include "fslayout-scan.h"
#include "fslayout.h"
#include "parse.h"
#include "sysfs.h"
#include "unaligned.h"
#include "util.h"

#define SECTOR 512u /* libblkid's unit for partition start and size */
#define PROBE_SPAN \
        (UINT64_C(1) << 20)    /* libblkid's probes: so far into a region, from either end */
#define GPT_ENTRIES_MAX 65536u /* more entries than any real table has */
#define GPT_ENTRY_SIZE_MAX 4096u

typedef struct Region {
        uint64_t offset;
        uint64_t size;
        int partno;         /* 0: the whole device, which has no partition table */
        bool logical;       /* a logical partition, inside an extended one */
        int overlaps;       /* partno of an earlier partition this one overlaps (then ignored) */
        dev_t dev;          /* its block device, 0 if unknown (an image file) */
        char *fstype;       /* libblkid's TYPE, NULL if none was found */
        char *state;        /* "unmounted", "mounted on /srv", ...; NULL if not relevant */
        const char *method; /* "libext2fs", "GETFSMAP", ... if mapped, even if only in part */
        FsScanResult result;
        char *detail; /* why not mapped (or mapped only in part), or a remark */
} Region;

typedef struct LayoutScan {
        const FsLayoutHints *hints;
        int fd;        /* our own descriptor of the device, without O_DIRECT */
        char path[64]; /* /proc/self/fd/<fd>, for libext2fs, which opens by name */
        struct stat st;
        uint64_t size;
        char *table_type; /* libblkid's name of the partition table, NULL if none */
        Region *regions;
        size_t n_regions, n_regions_allocated;
        FsRangeList extended; /* extended partitions: containers of logical ones, not regions */
        FsRangeList list;
        char **notes;
        size_t n_notes, n_notes_allocated;
} LayoutScan;

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

DEFINE_TRIVIAL_CLEANUP_FUNC(blkid_probe, blkid_free_probe)

static int set_string(char **s, const char *value) {
        free(*s);
        *s = strdup(value);
        return *s ? 0 : -ENOMEM;
}

static int set_stringf(char **s, const char *format, ...) _printf_(2, 3);
static int set_stringf(char **s, const char *format, ...) {
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
        char path[64];

        (void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        d->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (d->fd < 0 || fstat(d->fd, &d->st) < 0) {
                int r = -errno;

                (void)set_stringf(error, "Cannot open the device again as %s: %m", path);
                return r;
        }
        (void)snprintf(d->path, sizeof(d->path), "/proc/self/fd/%d", d->fd);
        if (pread(d->fd, probe, MIN(sizeof(probe), d->size), 0) < 0) {
                int r = -errno;

                (void)set_stringf(error, "Cannot read the device: %m");
                return r;
        }
        return 0;
}

static Region *region_add(LayoutScan *d, uint64_t offset, uint64_t size, int partno) {
        Region *p;

        if (ARRAY_GROW(d->regions, d->n_regions_allocated, d->n_regions + 1) < 0)
                return NULL;
        p = &d->regions[d->n_regions++];
        *p = (Region){.offset = offset, .size = size, .partno = partno, .result = FS_SCAN_FAILED};
        return p;
}

static int region_compare(const void *a, const void *b) {
        const Region *x = a, *y = b;

        if (x->offset != y->offset)
                return x->offset < y->offset ? -1 : 1;
        return x->size > y->size ? -1 : x->size < y->size; /* the container first */
}

/* A partition that overlaps an earlier one (a nested table's, or a broken table) is not
 * scanned, and all of it is used (claim_unmapped()). */
static void mark_overlaps(LayoutScan *d) {
        const Region *kept = NULL;

        qsort(d->regions, d->n_regions, sizeof(Region), region_compare);
        for (size_t i = 0; i < d->n_regions; i++) {
                Region *r = &d->regions[i];

                if (kept && r->offset < kept->offset + kept->size)
                        r->overlaps = kept->partno;
                else
                        kept = r;
        }
}

/* The sysfs attribute @attribute of the entry @name below @dir_fd, as a number. */
static int read_entry_u64(int dir_fd, const char *name, const char *attribute, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", name, attribute) < 0)
                return -ENOMEM;
        return sysfs_read_u64_at(dir_fd, path, ret);
}

/* The device number of the partition of @disk at [@offset, @offset + @size), from the
 * disk's sysfs directory, where each partition has "start", "size" (sectors) and "dev". */
static dev_t partition_dev(dev_t disk, uint64_t offset, uint64_t size) {
        _cleanup_(closedirp) DIR *dir = NULL;
        _cleanup_free_ char *path = NULL;
        struct dirent *e;

        path = sysfs_dev_block(NULL, disk, NULL);
        if (!path)
                return 0;
        dir = opendir(path);
        if (!dir)
                return 0;
        while ((e = readdir(dir))) {
                _cleanup_free_ char *dev_path = NULL;
                uint64_t start, sectors;
                dev_t dev;

                if (e->d_name[0] == '.' ||
                    read_entry_u64(dirfd(dir), e->d_name, "start", &start) < 0 ||
                    start * SECTOR != offset ||
                    read_entry_u64(dirfd(dir), e->d_name, "size", &sectors) < 0 ||
                    sectors * SECTOR != size || asprintf(&dev_path, "%s/dev", e->d_name) < 0)
                        continue;
                if (sysfs_read_devnum_at(dirfd(dir), dev_path, &dev) < 0)
                        continue;
                return dev;
        }
        return 0;
}

/* The GPT header at @lba and its entry array are metadata. Its alternate's LBA goes to
 * *ret_alternate. 0, -EBADMSG if there is no valid header at @lba, or -ENOMEM. */
static int add_gpt_header(LayoutScan *d, uint64_t sector_size, uint64_t lba,
                          uint64_t *ret_alternate) {
        uint8_t h[92];
        uint64_t entries_lba, entries_bytes;
        uint32_t n_entries, entry_size;
        int r;

        if (lba >= d->size / sector_size ||
            pread(d->fd, h, sizeof(h), (off_t)(lba * sector_size)) != (ssize_t)sizeof(h) ||
            memcmp(h, "EFI PART", 8) != 0 || unaligned_read_le64(h + 24) != lba)
                return -EBADMSG;
        entries_lba = unaligned_read_le64(h + 72);
        n_entries = unaligned_read_le32(h + 80);
        entry_size = unaligned_read_le32(h + 84);
        if (n_entries > GPT_ENTRIES_MAX || entry_size > GPT_ENTRY_SIZE_MAX ||
            entries_lba >= d->size / sector_size)
                return -EBADMSG;
        entries_bytes = DIV_ROUND_UP((uint64_t)n_entries * entry_size, sector_size) * sector_size;
        r = fs_range_list_add(&d->list, lba * sector_size, sector_size, FS_RANGE_METADATA);
        if (r >= 0)
                r = fs_range_list_add(&d->list, entries_lba * sector_size, entries_bytes,
                                      FS_RANGE_METADATA);
        *ret_alternate = unaligned_read_le64(h + 32);
        return r;
}

/* Protective MBR, the header libblkid used (primary, or the backup if the primary is bad),
 * then the other one, each with its entries. A header that does not parse is left to the gap
 * around it: used. */
static int add_gpt(LayoutScan *d, uint64_t sector_size, uint64_t header_offset) {
        uint64_t alternate = 0, ignored;
        int r;

        r = fs_range_list_add(&d->list, 0, sector_size, FS_RANGE_METADATA);
        if (r >= 0)
                r = add_gpt_header(d, sector_size, header_offset / sector_size, &alternate);
        if (r >= 0)
                r = add_gpt_header(d, sector_size, alternate, &ignored);
        return r == -EBADMSG ? 0 : r;
}

/* The table's own sectors: all of GPT's; for MBR and others the sector that holds it (the
 * extended boot records of logical partitions lie in gaps, which are used anyway). */
static int add_table_metadata(LayoutScan *d, blkid_probe pr, blkid_parttable table) {
        uint64_t sector_size = blkid_probe_get_sectorsize(pr);
        blkid_loff_t offset = blkid_parttable_get_offset(table);

        if (sector_size < SECTOR || offset < 0)
                return 0;
        if (streq_ptr(d->table_type, "gpt"))
                return add_gpt(d, sector_size, (uint64_t)offset);
        return fs_range_list_add(&d->list, (uint64_t)offset / sector_size * sector_size,
                                 sector_size, FS_RANGE_METADATA);
}

static int add_partitions(LayoutScan *d, blkid_partlist partitions) {
        int n = blkid_partlist_numof_partitions(partitions);

        for (int i = 0; i < n; i++) {
                blkid_partition p = blkid_partlist_get_partition(partitions, i);
                blkid_loff_t start, size;
                uint64_t offset, bytes;
                Region *r;

                if (!p)
                        continue;
                start = blkid_partition_get_start(p);
                size = blkid_partition_get_size(p);
                if (start < 0 || size <= 0 || (uint64_t)start >= d->size / SECTOR)
                        continue; /* not on the device */
                offset = (uint64_t)start * SECTOR;
                /* Cut off at the end of the device; never multiplied past UINT64_MAX. */
                bytes = (uint64_t)size > (d->size - offset) / SECTOR ? d->size - offset
                                                                     : (uint64_t)size * SECTOR;
                if (blkid_partition_is_extended(p)) {
                        /* A container of logical partitions: what they leave of it is used. */
                        if (fs_range_list_add(&d->extended, offset, bytes, FS_RANGE_USED) < 0)
                                return -ENOMEM;
                        continue;
                }
                r = region_add(d, offset, bytes, blkid_partition_get_partno(p));
                if (!r)
                        return -ENOMEM;
                r->logical = blkid_partition_is_logical(p);
                if (S_ISBLK(d->st.st_mode))
                        r->dev = partition_dev(d->st.st_rdev, r->offset, r->size);
        }
        mark_overlaps(d);
        return 0;
}

/* Partitions become regions; without a partition table the whole device is one. */
static int probe_partitions(LayoutScan *d, char **error) {
        _cleanup_(blkid_free_probep) blkid_probe pr = blkid_new_probe();
        blkid_partlist partitions;
        blkid_parttable table;
        Region *whole;
        int r;

        if (!pr)
                return -ENOMEM;
        if (blkid_probe_set_device(pr, d->fd, 0, (blkid_loff_t)d->size) < 0) {
                (void)set_stringf(error, "Cannot probe the device with libblkid");
                return -EIO;
        }
        (void)blkid_probe_enable_superblocks(pr, 0);
        (void)blkid_probe_enable_partitions(pr, 1);
        /* NULL for "no partition table" as well as for a table libblkid gave up on: either way,
         * what is at the start of the whole device decides, and unknown content is used. */
        partitions = blkid_probe_get_partitions(pr);
        table = partitions ? blkid_partlist_get_table(partitions) : NULL;
        if (table) {
                r = set_string(&d->table_type, strempty(blkid_parttable_get_type(table)));
                if (r >= 0)
                        r = add_table_metadata(d, pr, table);
                if (r >= 0)
                        r = add_partitions(d, partitions);
                return r;
        }
        whole = region_add(d, 0, d->size, 0);
        if (!whole)
                return -ENOMEM;
        if (S_ISBLK(d->st.st_mode))
                whole->dev = d->st.st_rdev;
        return 0;
}

/* libblkid reads near both ends of what it probes: partition tables and most superblocks at
 * the start, backup GPT, RAID and ZFS labels at the end. */
static void hint_probe(const LayoutScan *d, uint64_t offset, uint64_t size) {
        _cleanup_(fs_range_list_done) FsRangeList l = {};

        if (fs_range_list_add(&l, offset, MIN(size, PROBE_SPAN), FS_RANGE_USED) >= 0 &&
            (size <= PROBE_SPAN ||
             fs_range_list_add(&l, offset + size - PROBE_SPAN, PROBE_SPAN, FS_RANGE_USED) >= 0))
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
                return set_string(&region->detail, "content not probed (libblkid failed)");
        (void)blkid_probe_enable_superblocks(pr, 1);
        (void)blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
        r = blkid_do_safeprobe(pr);
        if (r == -2)
                return set_string(&region->detail, "signatures of several file systems");
        if (r < 0)
                return set_string(&region->detail, "content not probed (libblkid failed)");
        if (r == 1 || blkid_probe_lookup_value(pr, "TYPE", &type, NULL) < 0 || !type)
                return set_string(&region->detail, "unknown content");
        return set_string(&region->fstype, type);
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
                return set_string(&region->state,
                                  S_ISREG(d->st.st_mode) ? "image file" : "mount state unknown");
        r = fslayout_find_mount(region->dev, ret_path, ret_fd);
        if (r == -ENOENT)
                return set_string(&region->state, "unmounted");
        if (r == -EXDEV)
                return set_stringf(&region->state, "mounted on %s, hidden from here",
                                   strempty(*ret_path));
        if (r < 0) {
                errno = -r;
                return set_stringf(&region->state, "mounted on %s, not accessible: %m",
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
                return set_stringf(&region->state, "mounted on %s, %s", mount_point,
                                   strempty(failure));
        region->method = own_r != FS_SCAN_METADATA_ONLY ? "GETFSMAP"
                         : xfs ? "GETFSMAP, own reading for the AG metadata"
                               : "GETFSMAP, libext2fs for the journal and inode tables";
        region->result = FS_SCAN_MAPPED;
        region->detail = TAKE_PTR(failure);
        r = fs_range_list_append(&d->list, &own);
        if (r >= 0)
                r = set_stringf(&region->state, "mounted on %s", mount_point);
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
                return set_string(&region->detail, "free space unknown");
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

/* The parts of the extended partition at [@offset, @offset + @size) that no logical partition
 * holds: its extended boot records, and slack. */
static int claim_extended(LayoutScan *d, uint64_t offset, uint64_t size) {
        uint64_t position = offset, end = offset + size;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < d->n_regions; i++) {
                const Region *region = &d->regions[i];

                if (!region->logical || region->overlaps || region->offset < position ||
                    region->offset + region->size > end)
                        continue;
                r = fs_range_list_add(&d->list, position, region->offset - position, FS_RANGE_USED);
                position = region->offset + region->size;
        }
        return r < 0 ? r : fs_range_list_add(&d->list, position, end - position, FS_RANGE_USED);
}

/* Free space is only what a file system says is free, of bytes that no other partition
 * claims. A partition that was not mapped (ignored as an overlap, unknown content, a scanner
 * that failed or knows the metadata only) is claimed used as a whole, and what logical
 * partitions leave of their container too: used outranks the free space that the file system
 * of another, overlapping partition reports there. Runs after every scan, whatever it found. */
static int claim_unmapped(LayoutScan *d) {
        int r = 0;

        for (size_t i = 0; r >= 0 && i < d->n_regions; i++)
                if (d->regions[i].result != FS_SCAN_MAPPED)
                        r = fs_range_list_add(&d->list, d->regions[i].offset, d->regions[i].size,
                                              FS_RANGE_USED);
        for (size_t i = 0; r >= 0 && i < d->extended.n; i++)
                r = claim_extended(d, d->extended.ranges[i].offset, d->extended.ranges[i].length);
        return r;
}

static int note_add(LayoutScan *d, char *note) {
        if (!note)
                return -ENOMEM;
        if (ARRAY_GROW(d->notes, d->n_notes_allocated, d->n_notes + 1) < 0) {
                free(note);
                return -ENOMEM;
        }
        d->notes[d->n_notes++] = note;
        return 0;
}

static char *region_label(const Region *region) {
        char size[FORMAT_BYTES_MAX], name[64], *s;

        if (region->partno > 0)
                (void)snprintf(name, sizeof(name), "partition %d", region->partno);
        else
                (void)snprintf(name, sizeof(name), "no partition table: whole device");
        (void)format_bytes(size, sizeof(size), region->size);
        if (asprintf(&s, "%s (%s%s%s%s%s)", name, strempty(region->fstype),
                     region->fstype ? ", " : "", size, region->state ? ", " : "",
                     strempty(region->state)) < 0)
                return NULL;
        return s;
}

static char *region_note(const FsLayout *l, const Region *region) {
        _cleanup_free_ char *label = region_label(region);
        char used[FORMAT_BYTES_MAX], metadata[FORMAT_BYTES_MAX], free_[FORMAT_BYTES_MAX], *s;
        uint64_t off = region->offset, size = region->size;
        int r;

        if (!label)
                return NULL;
        (void)format_bytes(used, sizeof(used), fslayout_bytes_in(l, off, size, FS_RANGE_USED));
        (void)format_bytes(metadata, sizeof(metadata),
                           fslayout_bytes_in(l, off, size, FS_RANGE_METADATA));
        (void)format_bytes(free_, sizeof(free_), fslayout_bytes_in(l, off, size, FS_RANGE_FREE));
        if (region->overlaps)
                r = asprintf(&s, "partition %d: overlaps partition %d, treated as used",
                             region->partno, region->overlaps);
        else if (region->result == FS_SCAN_MAPPED)
                r = asprintf(&s, "%s: %s used, %s metadata, %s free (%s)%s%s", label, used,
                             metadata, free_, region->method, region->detail ? "; " : "",
                             strempty(region->detail));
        else if (region->result == FS_SCAN_METADATA_ONLY)
                r = asprintf(&s, "%s: %s metadata, the rest treated as used: %s (%s)", label,
                             metadata, strempty(region->detail), region->method);
        else
                r = asprintf(&s, "%s: %s, treated as used", label,
                             region->detail ?: "unknown content");
        return r < 0 ? NULL : s;
}

static const char *table_name(const char *type) {
        return streq_ptr(type, "gpt") ? "GPT" : streq_ptr(type, "dos") ? "MBR" : type;
}

/* The table's note, then one per partition, then the gaps; or the one of the whole device. */
static int add_notes(LayoutScan *d, const FsLayout *l) {
        uint64_t region_metadata = 0, region_used = 0, covered = 0;
        char metadata[FORMAT_BYTES_MAX], gaps[FORMAT_BYTES_MAX], *s;
        int r = 0;

        for (size_t i = 0; i < d->n_regions; i++) {
                const Region *region = &d->regions[i];

                if (region->overlaps)
                        continue;
                region_metadata +=
                        fslayout_bytes_in(l, region->offset, region->size, FS_RANGE_METADATA);
                region_used += fslayout_bytes_in(l, region->offset, region->size, FS_RANGE_USED);
                covered += region->size;
        }
        if (d->table_type) {
                (void)format_bytes(metadata, sizeof(metadata),
                                   fslayout_bytes(l, FS_RANGE_METADATA) - region_metadata);
                if (asprintf(&s, "%s partition table, %zu partition%s: %s metadata",
                             table_name(d->table_type), d->n_regions, d->n_regions == 1 ? "" : "s",
                             metadata) < 0)
                        s = NULL;
                r = note_add(d, s);
        }
        for (size_t i = 0; r >= 0 && i < d->n_regions; i++)
                r = note_add(d, region_note(l, &d->regions[i]));
        if (r >= 0 && d->table_type && covered < d->size) {
                (void)format_bytes(gaps, sizeof(gaps),
                                   fslayout_bytes(l, FS_RANGE_USED) - region_used);
                if (asprintf(&s, "outside the partitions: %s, treated as used", gaps) < 0)
                        s = NULL;
                r = note_add(d, s);
        }
        return r;
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
                (void)set_string(&error, "The device is empty");
        }
        if (r >= 0 && chunk_size > 0) {
                r = fs_chunk_kinds_new(&d.list.chunks, device_size, chunk_size);
                if (r < 0)
                        (void)set_string(&error, "Cannot map the device: out of memory");
        }
        if (r >= 0)
                hint_probe(&d, 0, device_size);
        if (r >= 0)
                r = layout_scan_open(&d, fd, &error);
        if (r >= 0)
                r = probe_partitions(&d, &error);
        for (size_t i = 0; r >= 0 && i < d.n_regions; i++)
                r = scan_region(&d, &d.regions[i]);
        if (r >= 0)
                r = claim_unmapped(&d);
        if (r >= 0)
                r = make_layout(&d, &l);
        if (r >= 0)
                r = add_notes(&d, &l);
        if (r >= 0) {
                l.notes = TAKE_PTR(d.notes);
                l.n_notes = d.n_notes;
                d.n_notes = 0;
                *ret = l;
        } else {
                errno = -r;
                if (!error)
                        (void)set_stringf(&error, "Cannot map the device: %m");
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
