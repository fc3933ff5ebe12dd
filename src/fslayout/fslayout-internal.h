/* SPDX-License-Identifier: MIT */
/*
 * What fslayout.c (the file systems of each region, the layout made of them),
 * fslayout-partitions.c (the partition table as regions) and fslayout-notes.c (what is said of
 * them) share: the state of one fslayout_discover(). Not for other modules: fslayout.h is the
 * interface.
 */
#pragma once

#include <blkid.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fslayout-scan.h"
#include "fslayout.h"
#include "util.h"

#define SECTOR 512u /* libblkid's unit for partition start and size */

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
        int fd;                       /* our own descriptor of the device, without O_DIRECT */
        char path[PROC_PID_PATH_MAX]; /* /proc/self/fd/<fd>, for libext2fs, which opens by name */
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

DEFINE_TRIVIAL_CLEANUP_FUNC(blkid_probe, blkid_free_probe)

/* layout_set_string(), layout_set_stringf() - replace *@s (freed) with a copy of @value, or
 * with the formatted string. 0 or -ENOMEM (*@s NULL then). */
int layout_set_string(char **s, const char *value);
int layout_set_stringf(char **s, const char *format, ...) _printf_(2, 3);

/*
 * layout_scan_partitions() - the partition table of the device, with libblkid: its own sectors
 * are metadata, each partition becomes a region (an extended one is kept in d->extended, as the
 * container of the logical ones), and one that overlaps an earlier one is marked to be ignored.
 * Without a partition table the whole device is one region.
 * @error: set to why, on a failure other than out of memory (malloc'ed).
 * Return: 0 or a negative errno.
 */
int layout_scan_partitions(LayoutScan *d, char **error);

/*
 * layout_scan_claim_unmapped() - every region that was not mapped, and what logical partitions
 * leave of their extended partition, added as USED. Runs after every scan, whatever it found.
 * Return: 0 or -ENOMEM.
 */
int layout_scan_claim_unmapped(LayoutScan *d);

/*
 * layout_scan_add_notes() - the notes of layout @l, made of @d's regions, into d->notes: the
 * partition table's, one per region, then one for the gaps between partitions.
 * Return: 0 or -ENOMEM.
 */
int layout_scan_add_notes(LayoutScan *d, const FsLayout *l);
