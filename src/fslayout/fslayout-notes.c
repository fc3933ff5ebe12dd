/* SPDX-License-Identifier: MIT */
/*
 * fslayout_discover(), what is said of the layout it found (FsLayout.notes): the partition
 * table and its metadata, each region with its file system, how it was mapped and what it
 * holds (or why it is treated as used), and the gaps between partitions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "fslayout-internal.h"
#include "parse.h"
#include "util.h"

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
int layout_scan_add_notes(LayoutScan *d, const FsLayout *l) {
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
