/* SPDX-License-Identifier: MIT */
/*
 * fslayout_discover(), the partition table: read with libblkid, its own sectors (all of GPT's,
 * both headers and entry arrays) are metadata, and each partition becomes a region for the
 * scanners. A partition that overlaps an earlier one is not scanned; once every region is
 * scanned, what was not mapped, and what logical partitions leave of their container, is used.
 */
#include <blkid.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fslayout-internal.h"
#include "sysfs.h"
#include "unaligned.h"
#include "util.h"

#define GPT_ENTRIES_MAX 65536u /* more entries than any real table has */
#define GPT_ENTRY_SIZE_MAX 4096u

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
int layout_scan_partitions(LayoutScan *d, char **error) {
        _cleanup_(blkid_free_probep) blkid_probe pr = blkid_new_probe();
        blkid_partlist partitions;
        blkid_parttable table;
        Region *whole;
        int r;

        if (!pr)
                return -ENOMEM;
        if (blkid_probe_set_device(pr, d->fd, 0, (blkid_loff_t)d->size) < 0) {
                (void)layout_set_stringf(error, "Cannot probe the device with libblkid");
                return -EIO;
        }
        (void)blkid_probe_enable_superblocks(pr, 0);
        (void)blkid_probe_enable_partitions(pr, 1);
        /* NULL for "no partition table" as well as for a table libblkid gave up on: either way,
         * what is at the start of the whole device decides, and unknown content is used. */
        partitions = blkid_probe_get_partitions(pr);
        table = partitions ? blkid_partlist_get_table(partitions) : NULL;
        if (table) {
                r = layout_set_string(&d->table_type, strempty(blkid_parttable_get_type(table)));
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
int layout_scan_claim_unmapped(LayoutScan *d) {
        int r = 0;

        for (size_t i = 0; r >= 0 && i < d->n_regions; i++)
                if (d->regions[i].result != FS_SCAN_MAPPED)
                        r = fs_range_list_add(&d->list, d->regions[i].offset, d->regions[i].size,
                                              FS_RANGE_USED);
        for (size_t i = 0; r >= 0 && i < d->extended.n; i++)
                r = claim_extended(d, d->extended.ranges[i].offset, d->extended.ranges[i].length);
        return r;
}
