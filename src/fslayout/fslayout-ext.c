/* SPDX-License-Identifier: MIT */
/*
 * The layout of an ext2/3/4 file system that is not mounted, read through libext2fs: where its
 * static metadata lies, found with libext2fs' own location functions (so flex_bg, meta_bg and
 * sparse_super2 placements come out right), and which blocks the block bitmap calls free.
 * Opened read-only, without EXT2_FLAG_RW: nothing here can write to the device.
 */
#include <errno.h>
#include <et/com_err.h>
#include <ext2fs/ext2fs.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fslayout-readio.h"
#include "fslayout-scan.h"
#include "util.h"

typedef struct ExtScan {
        ext2_filsys fs;
        uint64_t offset; /* of the file system on the device, bytes */
        uint64_t size;   /* of its region, bytes */
        FsRangeList *out;
} ExtScan;

/* Blocks [first, first + count) of the file system, cut off at the end of its region. */
static int add_blocks(ExtScan *s, blk64_t first, blk64_t count, FsRangeKind kind) {
        uint64_t bs = s->fs->blocksize, start = first * bs;

        if (first >= s->size / bs)
                return 0;
        count = MIN(count, s->size / bs - first);
        return fs_range_list_add(s->out, s->offset + start, count * bs, kind);
}

/* Superblock, group descriptors (old style with the reserved GDT blocks, or meta_bg's) of one
 * group, the copies included. */
static int add_super_and_descriptors(ExtScan *s, dgrp_t group) {
        ext2_filsys fs = s->fs;
        blk64_t super = 0, old_desc = 0, new_desc = 0, old_desc_blocks;
        blk_t used = 0;
        int r = 0;

        if (ext2fs_super_and_bgd_loc2(fs, group, &super, &old_desc, &new_desc, &used) != 0)
                return 0; /* only fails for an impossible group number */
        old_desc_blocks = ext2fs_has_feature_meta_bg(fs->super)
                                  ? fs->super->s_first_meta_bg
                                  : fs->desc_blocks + fs->super->s_reserved_gdt_blocks;
        if (ext2fs_bg_has_super(fs, group))
                r = add_blocks(s, super, 1, FS_RANGE_METADATA);
        if (r >= 0 && old_desc != 0)
                r = add_blocks(s, old_desc, old_desc_blocks, FS_RANGE_METADATA);
        if (r >= 0 && new_desc != 0)
                r = add_blocks(s, new_desc, 1, FS_RANGE_METADATA);
        return r;
}

static int add_group_metadata(ExtScan *s, dgrp_t group) {
        ext2_filsys fs = s->fs;
        int r;

        r = add_super_and_descriptors(s, group);
        if (r >= 0)
                r = add_blocks(s, ext2fs_block_bitmap_loc(fs, group), 1, FS_RANGE_METADATA);
        if (r >= 0)
                r = add_blocks(s, ext2fs_inode_bitmap_loc(fs, group), 1, FS_RANGE_METADATA);
        if (r >= 0)
                r = add_blocks(s, ext2fs_inode_table_loc(fs, group), fs->inode_blocks_per_group,
                               FS_RANGE_METADATA);
        return r;
}

/* The journal's blocks, gathered into runs as ext2fs_block_iterate3() hands them over one by one
 * (extent tree or indirect blocks included: they come with a negative blockcnt). */
typedef struct JournalRun {
        ExtScan *scan;
        blk64_t first;
        blk64_t count;
        int error;
} JournalRun;

static int journal_run_flush(JournalRun *j) {
        int r = add_blocks(j->scan, j->first, j->count, FS_RANGE_METADATA);

        j->count = 0;
        return r;
}

static int journal_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt, blk64_t ref_blk,
                         int ref_offset, void *userdata) {
        JournalRun *j = userdata;

        if (j->count > 0 && *blocknr == j->first + j->count) {
                j->count++;
                return 0;
        }
        j->error = journal_run_flush(j);
        if (j->error < 0)
                return BLOCK_ABORT;
        j->first = *blocknr;
        j->count = 1;
        return 0;
}

/* An internal journal's blocks. 0, or -ENOMEM; a journal that cannot be read is left alone (its
 * blocks are in use in the bitmap, so they stay used rather than metadata). */
static int add_journal(ExtScan *s) {
        ext2_filsys fs = s->fs;
        JournalRun j = {.scan = s};
        errcode_t e;

        if (!ext2fs_has_feature_journal(fs->super) || fs->super->s_journal_inum == 0)
                return 0;
        e = ext2fs_block_iterate3(fs, fs->super->s_journal_inum, BLOCK_FLAG_READ_ONLY, NULL,
                                  journal_block, &j);
        if (j.error < 0)
                return j.error;
        if (e != 0)
                return 0;
        return journal_run_flush(&j);
}

static int add_metadata(ExtScan *s) {
        ext2_filsys fs = s->fs;
        int r = 0;

        /* Below the first data block (1 KiB blocks): the boot block, before the superblock. */
        if (fs->super->s_first_data_block > 0)
                r = add_blocks(s, 0, fs->super->s_first_data_block, FS_RANGE_METADATA);
        for (dgrp_t g = 0; r >= 0 && g < fs->group_desc_count; g++)
                r = add_group_metadata(s, g);
        if (r >= 0 && ext2fs_has_feature_mmp(fs->super) && fs->super->s_mmp_block != 0)
                r = add_blocks(s, fs->super->s_mmp_block, 1, FS_RANGE_METADATA);
        if (r >= 0)
                r = add_journal(s);
        return r;
}

/* One run of equal bits from @start: its end (exclusive) and whether it is in use. */
static blk64_t bitmap_run(ext2fs_block_bitmap map, blk64_t start, blk64_t last, bool *ret_used) {
        blk64_t next;

        *ret_used = ext2fs_test_block_bitmap2(map, start);
        if (*ret_used ? ext2fs_find_first_zero_block_bitmap2(map, start, last, &next)
                      : ext2fs_find_first_set_block_bitmap2(map, start, last, &next))
                return last + 1; /* ENOENT: the run goes to the end */
        return MAX(next, start + 1);
}

/* Used and free blocks from the block bitmap. With bigalloc, the bitmap functions take block
 * numbers and answer for the whole cluster. */
static int add_allocation(ExtScan *s) {
        ext2_filsys fs = s->fs;
        blk64_t block = fs->super->s_first_data_block, last = ext2fs_blocks_count(fs->super) - 1;
        int r = 0;

        while (r >= 0 && block <= last) {
                bool used;
                blk64_t end = bitmap_run(fs->block_map, block, last, &used);

                r = add_blocks(s, block, end - block, used ? FS_RANGE_USED : FS_RANGE_FREE);
                block = end;
        }
        return r;
}

/* Why the on-disk bitmaps cannot be trusted, or NULL if they can. */
static const char *untrusted_bitmaps(const ExtScan *s) {
        ext2_filsys fs = s->fs;

        /* Truncated, or its partition shrunk under it: the bitmaps describe another device. */
        if (ext2fs_blocks_count(fs->super) > s->size / fs->blocksize)
                return "file system larger than its partition or device";
        if (ext2fs_has_feature_journal_needs_recovery(fs->super))
                return "journal needs recovery (mounted elsewhere, or not cleanly unmounted)";
        if (!(fs->super->s_state & EXT2_VALID_FS))
                return "not cleanly unmounted (or mounted elsewhere)";
        if (fs->super->s_state & EXT2_ERROR_FS)
                return "file system has errors";
        return NULL;
}

static int fail(char **ret_detail, int result, const char *what, errcode_t e) {
        if (asprintf(ret_detail, "libext2fs: %s: %s", what, error_message(e)) < 0)
                *ret_detail = NULL;
        return result;
}

static int set_detail(char **ret_detail, int result, const char *detail) {
        *ret_detail = strdup(detail);
        return *ret_detail ? result : -ENOMEM;
}

static errcode_t open_read_only(const char *path, uint64_t offset, ext2_filsys *ret) {
        char options[64];

        /* The "offset" option, as unix_io's: a byte offset added to every read. */
        (void)snprintf(options, sizeof(options), "offset=%" PRIu64, offset);
        return ext2fs_open2(path, options, EXT2_FLAG_64BITS, 0, 0, fslayout_read_io_manager, ret);
}

int fslayout_scan_ext(const char *path, uint64_t offset, uint64_t size, bool metadata_only,
                      FsRangeList *out, char **ret_detail) {
        ExtScan s = {.offset = offset, .size = size, .out = out};
        const char *why;
        errcode_t e;
        int r;

        *ret_detail = NULL;
        e = open_read_only(path, offset, &s.fs);
        if (e != 0)
                return fail(ret_detail, FS_SCAN_FAILED, "cannot open", e);
        r = add_metadata(&s);
        if (r < 0 || metadata_only) {
                r = r < 0 ? r : FS_SCAN_METADATA_ONLY;
                goto finish;
        }
        why = untrusted_bitmaps(&s);
        if (why) {
                r = set_detail(ret_detail, FS_SCAN_METADATA_ONLY, why);
                goto finish;
        }
        e = ext2fs_read_block_bitmap(s.fs);
        if (e != 0) {
                r = fail(ret_detail, FS_SCAN_METADATA_ONLY, "cannot read the block bitmap", e);
                goto finish;
        }
        r = add_allocation(&s);
        if (r >= 0)
                r = FS_SCAN_MAPPED;
finish:
        (void)ext2fs_close_free(&s.fs);
        return r;
}
