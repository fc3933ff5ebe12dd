/* SPDX-License-Identifier: MIT */
/*
 * The used and free blocks of an ext2/3/4 that is not mounted, from its block bitmaps: read one
 * group at a time, as libext2fs reads them (a group never written is all free, a checksum that
 * fails stops the reading), and only if the file system was cleanly unmounted and fits in its
 * region. The static metadata is fslayout-ext.c's.
 */
#include <endian.h>
#include <ext2fs/ext2fs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fslayout-ext-internal.h"
#include "util.h"

/*
 * The block bitmap of group @g into @buf (@nbytes: a bit per cluster of the group), as libext2fs
 * reads it for ext2fs_read_block_bitmap(): a group whose bitmap was never written (BLOCK_UNINIT,
 * with a sound descriptor), or that has none inside the file system, reads as all free; its
 * static metadata, which libext2fs would mark in use, is metadata here anyway, and the rest of
 * its inode table used (add_inode_table()).
 * Return: 0, or a libext2fs error (EXT2_ET_BLOCK_BITMAP_READ, EXT2_ET_BLOCK_BITMAP_CSUM_INVALID).
 */
static errcode_t read_group_bitmap(ext2_filsys fs, dgrp_t g, char *buf, int nbytes) {
        blk64_t blk;

        if (!ext_group_readable(fs, g))
                return EXT2_ET_BLOCK_BITMAP_READ;
        blk = ext2fs_block_bitmap_loc(fs, g);
        if (blk == 0 || ext_block_bitmap_uninit(fs, g)) {
                memset(buf, 0, (size_t)nbytes);
                return 0;
        }
        if (io_channel_read_blk64(fs->io, blk, 1, buf) != 0)
                return EXT2_ET_BLOCK_BITMAP_READ;
        if (!ext2fs_block_bitmap_csum_verify(fs, g, buf, nbytes))
                return EXT2_ET_BLOCK_BITMAP_CSUM_INVALID;
        return 0;
}

/* The first bit at or after @from, below @end, that is not @set: @end if there is none. Bit i is
 * bit i % 8 of byte i / 8 (ext2's little-endian bitmaps), looked at 64 bits at a time. */
static uint32_t bitmap_run_end(const uint8_t *bits, uint32_t from, uint32_t end, bool set) {
        while (from < end) {
                uint32_t word = from / 64, nbits = MIN(64u, end - word * 64);
                uint64_t w = 0, differ;

                memcpy(&w, bits + word * 8, DIV_ROUND_UP(nbits, 8));
                w = le64toh(w);
                differ = (set ? ~w : w) & ~((UINT64_C(1) << (from % 64)) - 1);
                if (nbits < 64)
                        differ &= (UINT64_C(1) << nbits) - 1;
                if (differ != 0)
                        return MIN(word * 64 + (uint32_t)__builtin_ctzll(differ), end);
                from = word * 64 + nbits;
        }
        return end;
}

/* Used and free runs of group @g's bitmap in @bits, as blocks. With bigalloc, a bit is a
 * cluster. Runs that go on into the next group are merged by fs_range_list_add(). */
static int add_group_allocation(ExtScan *s, dgrp_t g, const uint8_t *bits) {
        ext2_filsys fs = s->fs;
        blk64_t first_cluster = EXT2FS_B2C(fs, fs->super->s_first_data_block) +
                                (blk64_t)g * EXT2_CLUSTERS_PER_GROUP(fs->super);
        blk64_t end_block = ext2fs_blocks_count(fs->super);
        uint32_t n = EXT2_CLUSTERS_PER_GROUP(fs->super);
        int r = 0;

        for (uint32_t bit = 0; r >= 0 && bit < n;) {
                bool used = bits[bit / 8] >> (bit % 8) & 1u;
                uint32_t stop = bitmap_run_end(bits, bit, n, used);
                blk64_t start = MAX(EXT2FS_C2B(fs, first_cluster + bit),
                                    (blk64_t)fs->super->s_first_data_block);
                blk64_t end = MIN(EXT2FS_C2B(fs, first_cluster + stop), end_block);

                if (start >= end_block)
                        break;
                r = ext_add_blocks(s, start, end - start, used ? FS_RANGE_USED : FS_RANGE_FREE);
                bit = stop;
        }
        return r;
}

/*
 * Used and free blocks from the block bitmap, one group at a time: libext2fs' own
 * ext2fs_read_block_bitmap() would hold the whole bitmap (512 MiB for 16 TiB of 4 KiB blocks).
 * A group whose bitmap cannot be read stops it: the scan maps metadata only then, as it did
 * when the whole bitmap could not be read (the used ranges of the whole file system outrank the
 * free ones added so far).
 * Return: 0, -ENOMEM, or a positive libext2fs error in *@ret_error.
 */
int ext_add_allocation(ExtScan *s, errcode_t *ret_error) {
        ext2_filsys fs = s->fs;
        int nbytes = EXT2_CLUSTERS_PER_GROUP(fs->super) / 8;
        _cleanup_free_ uint8_t *bits = malloc(MAX((size_t)fs->blocksize, (size_t)nbytes));
        int r = 0;

        *ret_error = 0;
        if (!bits)
                return -ENOMEM;
        for (dgrp_t g = 0; r >= 0 && g < fs->group_desc_count; g++) {
                *ret_error = read_group_bitmap(fs, g, (char *)bits, nbytes);
                if (*ret_error != 0)
                        return 0;
                r = add_group_allocation(s, g, bits);
        }
        return r;
}

/* Why the on-disk bitmaps cannot be trusted, or NULL if they can. */
const char *ext_untrusted_bitmaps(const ExtScan *s) {
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
