/* SPDX-License-Identifier: MIT */
/*
 * The layout of an ext2/3/4 file system that is not mounted, read through libext2fs: where its
 * static metadata lies, found with libext2fs' own location functions (so flex_bg, meta_bg and
 * sparse_super2 placements come out right), which blocks of the inode tables hold inodes in
 * use, and which blocks the block bitmap calls free (fslayout-ext-alloc.c). Opened read-only,
 * without EXT2_FLAG_RW: nothing here can write to the device. Nothing here holds more than a block
 * or two of the file system at a time: not its group descriptors, not its bitmaps (libext2fs would
 * hold both whole: over 500 MiB for 16 TiB).
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
#include "fslayout-ext-internal.h"
#include "util.h"

/* Blocks [first, first + count) of the file system, cut off at the end of its region. */
int ext_add_blocks(ExtScan *s, blk64_t first, blk64_t count, FsRangeKind kind) {
        uint64_t bs = s->fs->blocksize, start = first * bs;

        if (first >= s->size / bs)
                return 0;
        count = MIN(count, s->size / bs - first);
        return fs_range_list_add(s->out, s->offset + start, count * bs, kind);
}

/*
 * The file system is opened with EXT2_FLAG_SUPER_ONLY: libext2fs would otherwise hold every group
 * descriptor (8 MiB for 16 TiB, 32 MiB for 64 TiB), and reads the block of one when asked for it
 * instead. Its accessors do not survive a failed read (they dereference what came back), so a
 * group's descriptor is read here first: the block stays in the I/O channel's cache
 * (fslayout-readio.c keeps the last few blocks read), where the accessors that follow find it.
 */
bool ext_group_readable(ext2_filsys fs, dgrp_t g) {
        return ext2fs_group_desc(fs, NULL, g) != NULL;
}

/* Every descriptor block, read once, as ext2fs_open2() would have: a file system whose
 * descriptors cannot be read is not opened. */
static errcode_t check_descriptors(ext2_filsys fs) {
        _cleanup_free_ char *buf = malloc(fs->blocksize);

        if (!buf)
                return EXT2_ET_NO_MEMORY;
        for (blk64_t i = 0; i < fs->desc_blocks; i++) {
                blk64_t blk = ext2fs_descriptor_block_loc2(fs, fs->super->s_first_data_block, i);
                errcode_t e = io_channel_read_blk64(fs->io, blk, 1, buf);

                if (e != 0)
                        return e;
        }
        return 0;
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
                r = ext_add_blocks(s, super, 1, FS_RANGE_METADATA);
        if (r >= 0 && old_desc != 0)
                r = ext_add_blocks(s, old_desc, old_desc_blocks, FS_RANGE_METADATA);
        if (r >= 0 && new_desc != 0)
                r = ext_add_blocks(s, new_desc, 1, FS_RANGE_METADATA);
        return r;
}

/* Whether group @g's block bitmap was never written (BLOCK_UNINIT, with a sound descriptor), or
 * lies outside the file system: libext2fs reads it as all free then, but for the group's own
 * static metadata, which it marks in use. */
bool ext_block_bitmap_uninit(ext2_filsys fs, dgrp_t g) {
        return (ext2fs_has_group_desc_csum(fs) &&
                ext2fs_bg_flags_test(fs, g, EXT2_BG_BLOCK_UNINIT) &&
                ext2fs_group_desc_csum_verify(fs, g)) ||
               ext2fs_block_bitmap_loc(fs, g) >= ext2fs_blocks_count(fs->super);
}

/* Inodes of @group in use by the count in its descriptor; more than the group has (a corrupt
 * count) is all of them. */
static uint32_t inodes_in_use(ext2_filsys fs, dgrp_t group) {
        uint32_t ipg = fs->super->s_inodes_per_group, free = ext2fs_bg_free_inodes_count(fs, group);

        if (ext2fs_bg_flags_test(fs, group, EXT2_BG_INODE_UNINIT))
                return 0;
        return free <= ipg ? ipg - free : ipg;
}

/* Whether only the inode bitmap can say which blocks of the group's table hold inodes in use:
 * some are, not all, and the descriptors keep no count of the unused tail. */
static bool needs_inode_bitmap(ext2_filsys fs, dgrp_t group) {
        uint32_t used = inodes_in_use(fs, group);

        return !ext2fs_has_group_desc_csum(fs) && used > 0 && used < fs->super->s_inodes_per_group;
}

/* The blocks of the inode table whose inodes the bitmap in s->bitmap marks, any of them. */
static int add_marked_table_blocks(ExtScan *s, blk64_t table) {
        ext2_filsys fs = s->fs;
        uint32_t per_block = fs->blocksize / EXT2_INODE_SIZE(fs->super);
        uint32_t ipg = fs->super->s_inodes_per_group;
        const uint8_t *bits = s->bitmap;
        int r = 0;

        for (uint32_t b = 0; r >= 0 && b < fs->inode_blocks_per_group; b++) {
                bool used = false;

                for (uint32_t i = b * per_block; !used && i < (b + 1) * per_block && i < ipg; i++)
                        used = bits[i / 8] & (1u << (i % 8));
                if (used)
                        r = ext_add_blocks(s, table + b, 1, FS_RANGE_METADATA);
        }
        return r;
}

/*
 * The blocks of @group's inode table that hold an inode in use. The kernel reads no other: a
 * lookup never names a free inode, and ext4's __ext4_get_inode_loc() does not read a block whose
 * other inodes the bitmap calls free when it allocates one there. The rest of the table is in
 * use by the block bitmap, so it is read with the used blocks (an inode table of 16 GiB on a
 * 1 TiB file system at the default inode ratio, nearly all of it never read before it is
 * written). A bitmap that cannot be read counts the whole table. A group whose block bitmap
 * reads as all free has its table in use all the same (ext_add_allocation() reads that bitmap as
 * libext2fs does, which marks the table in use): said here, so that it is never free.
 */
static int add_inode_table(ExtScan *s, dgrp_t group) {
        ext2_filsys fs = s->fs;
        blk64_t table = ext2fs_inode_table_loc(fs, group);
        uint32_t per_block = fs->blocksize / EXT2_INODE_SIZE(fs->super);
        uint32_t ipg = fs->super->s_inodes_per_group, used = inodes_in_use(fs, group);
        int r = 0;

        if (ext_block_bitmap_uninit(fs, group))
                r = ext_add_blocks(s, table, fs->inode_blocks_per_group, FS_RANGE_USED);
        if (r < 0 || used == 0)
                return r;
        if (ext2fs_has_group_desc_csum(fs)) {
                uint32_t unused = MIN((uint32_t)ext2fs_bg_itable_unused(fs, group), ipg);

                return ext_add_blocks(s, table, DIV_ROUND_UP(MAX(ipg - unused, used), per_block),
                                      FS_RANGE_METADATA);
        }
        if (used == ipg ||
            io_channel_read_blk64(fs->io, ext2fs_inode_bitmap_loc(fs, group), 1, s->bitmap) != 0)
                return ext_add_blocks(s, table, fs->inode_blocks_per_group, FS_RANGE_METADATA);
        return add_marked_table_blocks(s, table);
}

static int add_group_metadata(ExtScan *s, dgrp_t group) {
        ext2_filsys fs = s->fs;
        int r;

        if (!ext_group_readable(fs, group))
                return 0; /* its static metadata stays used */
        r = add_super_and_descriptors(s, group);
        if (r >= 0)
                r = ext_add_blocks(s, ext2fs_block_bitmap_loc(fs, group), 1, FS_RANGE_METADATA);
        if (r >= 0)
                r = ext_add_blocks(s, ext2fs_inode_bitmap_loc(fs, group), 1, FS_RANGE_METADATA);
        if (r >= 0)
                r = add_inode_table(s, group);
        return r;
}

/* Block [@block, @block + @count) of the file system, in bytes of the device, to @l; a full
 * batch (FSLAYOUT_HINTS_MAX) is told and emptied, so that the list does not grow with the file
 * system (a range per group without flex_bg). */
static int hint_blocks(ExtScan *s, FsRangeList *l, blk64_t block, blk64_t count) {
        uint64_t bs = s->fs->blocksize;
        int r;

        if (block == 0 || block >= s->size / bs)
                return 0;
        r = fs_range_list_add(l, s->offset + block * bs, MIN(count, s->size / bs - block) * bs,
                              FS_RANGE_METADATA);
        if (r >= 0 && l->n >= FSLAYOUT_HINTS_MAX) {
                fs_hint_ahead(s->hints, l);
                l->n = 0;
        }
        return r;
}

/*
 * The group descriptors, which check_descriptors() reads next, one block at a time: 32 MiB of
 * them on 64 TiB (with meta_bg, a block in every 64 groups' first). Told once the superblock is
 * read, before anything else.
 */
static void hint_descriptors(ExtScan *s) {
        _cleanup_(fs_range_list_done) FsRangeList l = {};
        ext2_filsys fs = s->fs;
        int r = 0;

        if (!s->hints || !s->hints->ahead)
                return;
        for (blk64_t i = 0; r >= 0 && i < fs->desc_blocks; i++)
                r = hint_blocks(s, &l,
                                ext2fs_descriptor_block_loc2(fs, fs->super->s_first_data_block, i),
                                1);
        if (r >= 0)
                fs_hint_ahead(s->hints, &l);
}

/*
 * What is read next, one block at a time, in that order: the inode bitmaps add_inode_table()
 * needs, the journal inode's table block, every block bitmap (here, or by the kernel for
 * GETFSMAP). A reader told of them fetches the lot at queue depth meanwhile. A group whose
 * descriptor cannot be read is left out (add_metadata() leaves it out too).
 */
static void hint_bitmaps(ExtScan *s) {
        _cleanup_(fs_range_list_done) FsRangeList l = {};
        ext2_filsys fs = s->fs;
        uint32_t journal = fs->super->s_journal_inum;
        int r = 0;

        if (!s->hints || !s->hints->ahead)
                return;
        for (dgrp_t g = 0; r >= 0 && g < fs->group_desc_count; g++)
                if (ext_group_readable(fs, g) && needs_inode_bitmap(fs, g))
                        r = hint_blocks(s, &l, ext2fs_inode_bitmap_loc(fs, g), 1);
        if (r >= 0 && journal > 0 && journal <= fs->super->s_inodes_count) {
                dgrp_t g = (journal - 1) / fs->super->s_inodes_per_group;
                uint32_t index = (journal - 1) % fs->super->s_inodes_per_group;

                if (ext_group_readable(fs, g))
                        r = hint_blocks(
                                s, &l,
                                ext2fs_inode_table_loc(fs, g) +
                                        index / (fs->blocksize / EXT2_INODE_SIZE(fs->super)),
                                1);
        }
        for (dgrp_t g = 0; r >= 0 && g < fs->group_desc_count; g++)
                if (ext_group_readable(fs, g) && !ext2fs_bg_flags_test(fs, g, EXT2_BG_BLOCK_UNINIT))
                        r = hint_blocks(s, &l, ext2fs_block_bitmap_loc(fs, g), 1);
        if (r >= 0)
                fs_hint_ahead(s->hints, &l);
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
        int r = ext_add_blocks(j->scan, j->first, j->count, FS_RANGE_METADATA);

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

        if (!ext2fs_has_feature_journal(fs->super) || fs->super->s_journal_inum == 0 ||
            fs->super->s_journal_inum > fs->super->s_inodes_count ||
            !ext_group_readable(fs,
                                (fs->super->s_journal_inum - 1) / fs->super->s_inodes_per_group))
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
                r = ext_add_blocks(s, 0, fs->super->s_first_data_block, FS_RANGE_METADATA);
        for (dgrp_t g = 0; r >= 0 && g < fs->group_desc_count; g++)
                r = add_group_metadata(s, g);
        if (r >= 0 && ext2fs_has_feature_mmp(fs->super) && fs->super->s_mmp_block != 0)
                r = ext_add_blocks(s, fs->super->s_mmp_block, 1, FS_RANGE_METADATA);
        if (r >= 0)
                r = add_journal(s);
        return r;
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
        char options[sizeof("offset=") + DECIMAL_STR_MAX(uint64_t)];

        /* The "offset" option, as unix_io's: a byte offset added to every read. */
        (void)snprintf(options, sizeof(options), "offset=%" PRIu64, offset);
        return ext2fs_open2(path, options, EXT2_FLAG_64BITS | EXT2_FLAG_SUPER_ONLY, 0, 0,
                            fslayout_read_io_manager, ret);
}

int fslayout_scan_ext(const char *path, uint64_t offset, uint64_t size, bool metadata_only,
                      const FsLayoutHints *hints, FsRangeList *out, char **ret_detail) {
        ExtScan s = {.offset = offset, .size = size, .out = out, .hints = hints};
        const char *why;
        errcode_t e;
        int r;

        *ret_detail = NULL;
        e = open_read_only(path, offset, &s.fs);
        if (e == 0) {
                hint_descriptors(&s);
                e = check_descriptors(s.fs);
                if (e != 0)
                        (void)ext2fs_close_free(&s.fs);
        }
        if (e != 0)
                return fail(ret_detail, FS_SCAN_FAILED, "cannot open", e);
        s.bitmap = malloc(s.fs->blocksize);
        if (!s.bitmap) {
                r = -ENOMEM;
                goto finish;
        }
        hint_bitmaps(&s);
        r = add_metadata(&s);
        if (r < 0 || metadata_only) {
                r = r < 0 ? r : FS_SCAN_METADATA_ONLY;
                goto finish;
        }
        why = ext_untrusted_bitmaps(&s);
        if (why) {
                r = set_detail(ret_detail, FS_SCAN_METADATA_ONLY, why);
                goto finish;
        }
        r = ext_add_allocation(&s, &e);
        if (r >= 0 && e != 0)
                r = fail(ret_detail, FS_SCAN_METADATA_ONLY, "cannot read the block bitmap", e);
        else if (r >= 0)
                r = FS_SCAN_MAPPED;
finish:
        free(s.bitmap);
        (void)ext2fs_close_free(&s.fs);
        return r;
}
