/* SPDX-License-Identifier: MIT */
/*
 * Where the metadata of an XFS lies, read from the device itself: the headers of each
 * allocation group (AG), the internal log, the blocks of the AG btrees and the inode chunks the
 * inode btree names (those two walked by fslayout-xfs-btree.c). GETFSMAP names none of them on an
 * XFS without the reverse-mapping btree (the default), and nothing maps an XFS that is not mounted.
 * Read-only, plain pread(); every block is checked before it is believed, so that a corrupt or
 * hostile image yields less, never more than its own bytes or an endless walk.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fslayout-xfs-internal.h"
#include "unaligned.h"
#include "util.h"

#define XFS_SB_MAGIC 0x58465342u   /* "XFSB" */
#define XFS_AGF_MAGIC 0x58414746u  /* "XAGF" */
#define XFS_AGI_MAGIC 0x58414749u  /* "XAGI" */
#define XFS_AGFL_MAGIC 0x5841464cu /* "XAFL", v5 only */

#define SB_READ 512u               /* every superblock field used here lies in its first sector */
#define AG_HEADER_SECTORS 4u       /* superblock, AGF, AGI, AGFL */
#define AGFL_V5_HEADER 36u         /* magic, seqno, uuid, lsn, crc */
#define AG_BLOCKS_MIN 64u          /* mkfs.xfs's smallest AG */
#define AG_BLOCKS_LIMIT (1u << 31) /* 1 TiB AGs of 512-byte blocks */

/* Incompatible v5 features whose AG layout this file knows: ftype, sparse inodes, meta_uuid,
 * bigtime, needsrepair, nrext64, exchange-range, parent pointers. A newer one may move things. */
#define INCOMPAT_KNOWN 0xffu
#define INCOMPAT_SPINODES 0x2u
#define INCOMPAT_META_UUID 0x4u
#define RO_COMPAT_FINOBT 0x1u
#define RO_COMPAT_RMAPBT 0x2u
#define RO_COMPAT_REFLINK 0x4u

/* Byte offsets of the on-disk fields read here; all big-endian. */
enum {
        SB_BLOCKSIZE = 4,
        SB_DBLOCKS = 8,
        SB_UUID = 32,
        SB_LOGSTART = 48,
        SB_AGBLOCKS = 84,
        SB_AGCOUNT = 88,
        SB_LOGBLOCKS = 96,
        SB_VERSIONNUM = 100,
        SB_SECTSIZE = 102,
        SB_INODESIZE = 104,
        SB_INOPBLOCK = 106,
        SB_BLOCKLOG = 120,
        SB_SECTLOG = 121,
        SB_INODELOG = 122,
        SB_INOPBLOG = 123,
        SB_AGBLKLOG = 124,
        SB_INPROGRESS = 126,
        SB_FEATURES_RO_COMPAT = 212,
        SB_FEATURES_INCOMPAT = 216,
        SB_META_UUID = 248,

        AG_VERSIONNUM = 4, /* AGF and AGI alike */
        AG_SEQNO = 8,
        AG_LENGTH = 12,

        AGF_BNO_ROOT = 16,
        AGF_CNT_ROOT = 20,
        AGF_RMAP_ROOT = 24,
        AGF_BNO_LEVEL = 28,
        AGF_CNT_LEVEL = 32,
        AGF_RMAP_LEVEL = 36,
        AGF_FLFIRST = 40,
        AGF_FLLAST = 44,
        AGF_FLCOUNT = 48,
        AGF_REFCOUNT_ROOT = 88,
        AGF_REFCOUNT_LEVEL = 92,

        AGI_ROOT = 20,
        AGI_LEVEL = 24,
        AGI_FREE_ROOT = 328,
        AGI_FREE_LEVEL = 332,

        AGFL_SEQNO = 4,
};

static int failed(char **ret_detail, const char *format, ...) _printf_(2, 3);
static int failed(char **ret_detail, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(ret_detail, format, ap);
        va_end(ap);
        if (r < 0) {
                *ret_detail = NULL;
                return -ENOMEM;
        }
        return FS_SCAN_FAILED;
}

int xfs_read_at(XfsScan *s, uint64_t pos, void *buf, size_t len) {
        uint8_t *p = buf;

        if (pos > s->size || len > s->size - pos)
                return -ERANGE;
        while (len > 0) {
                ssize_t n = pread(s->fd, p, len, (off_t)(s->offset + pos));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;
                p += n;
                pos += (uint64_t)n;
                len -= (size_t)n;
        }
        return 0;
}

int xfs_add_bytes(XfsScan *s, uint64_t start, uint64_t length) {
        if (start >= s->size)
                return 0;
        return fs_range_list_add(s->out, s->offset + start, MIN(length, s->size - start),
                                 FS_RANGE_METADATA);
}

static uint32_t ag_length(const XfsScan *s, uint32_t agno) {
        if (agno + 1 < s->g.ag_count)
                return s->g.ag_blocks;
        return (uint32_t)(s->g.data_blocks - xfs_ag_start(s, agno));
}

int xfs_add_ag_blocks(XfsScan *s, uint64_t agbno, uint64_t count) {
        return xfs_add_bytes(s, (xfs_ag_start(s, s->agno) + agbno) << s->g.block_log,
                             count << s->g.block_log);
}

static bool is_pow2(uint64_t value, unsigned log, unsigned min_log, unsigned max_log) {
        return log >= min_log && log <= max_log && value == UINT64_C(1) << log;
}

static unsigned ceil_log2(uint64_t value) {
        unsigned log = 0;

        while (log < 64 && (UINT64_C(1) << log) < value)
                log++;
        return log;
}

static void parse_features(const uint8_t *sb, XfsGeometry *g) {
        uint32_t ro_compat = unaligned_read_be32(sb + SB_FEATURES_RO_COMPAT);
        uint32_t incompat = unaligned_read_be32(sb + SB_FEATURES_INCOMPAT);

        if (!g->v5)
                return; /* v4 has none of them, and its feature fields are not defined */
        g->sparse_inodes = incompat & INCOMPAT_SPINODES;
        g->finobt = ro_compat & RO_COMPAT_FINOBT;
        g->rmapbt = ro_compat & RO_COMPAT_RMAPBT;
        g->reflink = ro_compat & RO_COMPAT_REFLINK;
        memcpy(g->uuid, sb + (incompat & INCOMPAT_META_UUID ? SB_META_UUID : SB_UUID),
               sizeof(g->uuid));
}

/* Sizes and logarithms that must agree with each other, as the kernel requires at mount. */
static bool geometry_valid(const uint8_t *sb, const XfsGeometry *g) {
        uint32_t sector_size = unaligned_read_be16(sb + SB_SECTSIZE);
        uint32_t inode_size = unaligned_read_be16(sb + SB_INODESIZE);
        uint32_t inopblock = unaligned_read_be16(sb + SB_INOPBLOCK);
        uint64_t full = (uint64_t)g->ag_blocks * g->ag_count;

        return is_pow2(g->block_size, g->block_log, 9, 16) &&
               is_pow2(sector_size, sb[SB_SECTLOG], 9, 15) && sector_size <= g->block_size &&
               is_pow2(inode_size, g->inode_log, 8, 11) && inode_size <= g->block_size &&
               is_pow2(inopblock, g->inopb_log, 0, 8) &&
               inopblock == g->block_size >> g->inode_log && g->ag_blocks >= AG_BLOCKS_MIN &&
               g->ag_blocks < AG_BLOCKS_LIMIT && g->agblk_log == ceil_log2(g->ag_blocks) &&
               g->ag_count > 0 && g->data_blocks <= full && g->data_blocks > full - g->ag_blocks;
}

static int parse_superblock(XfsScan *s, const uint8_t *sb, char **ret_detail) {
        XfsGeometry *g = &s->g;
        unsigned version = unaligned_read_be16(sb + SB_VERSIONNUM) & 0xfu;
        uint32_t incompat = unaligned_read_be32(sb + SB_FEATURES_INCOMPAT);

        if (unaligned_read_be32(sb) != XFS_SB_MAGIC)
                return failed(ret_detail, "no XFS superblock");
        if (version != 4 && version != 5)
                return failed(ret_detail, "XFS superblock version %u not understood", version);
        if (version == 5 && (incompat & ~INCOMPAT_KNOWN))
                return failed(ret_detail, "XFS incompatible features 0x%" PRIx32 " not understood",
                              incompat & ~INCOMPAT_KNOWN);
        if (sb[SB_INPROGRESS] != 0)
                return failed(ret_detail, "XFS not completely made (mkfs.xfs in progress)");
        *g = (XfsGeometry){
                .block_size = unaligned_read_be32(sb + SB_BLOCKSIZE),
                .sector_size = unaligned_read_be16(sb + SB_SECTSIZE),
                .ag_blocks = unaligned_read_be32(sb + SB_AGBLOCKS),
                .ag_count = unaligned_read_be32(sb + SB_AGCOUNT),
                .data_blocks = unaligned_read_be64(sb + SB_DBLOCKS),
                .log_start = unaligned_read_be64(sb + SB_LOGSTART),
                .log_blocks = unaligned_read_be32(sb + SB_LOGBLOCKS),
                .block_log = sb[SB_BLOCKLOG],
                .inode_log = sb[SB_INODELOG],
                .inopb_log = sb[SB_INOPBLOG],
                .agblk_log = sb[SB_AGBLKLOG],
                .v5 = version == 5,
        };
        if (!geometry_valid(sb, g))
                return failed(ret_detail,
                              "XFS superblock geometry not understood (block size %" PRIu32
                              ", %" PRIu32 " AGs of %" PRIu32 " blocks, %" PRIu64 " blocks)",
                              g->block_size, g->ag_count, g->ag_blocks, g->data_blocks);
        if (g->data_blocks > s->size >> g->block_log)
                return failed(ret_detail,
                              "XFS of %" PRIu64 " blocks of %" PRIu32 " bytes is larger than its "
                              "region of %" PRIu64 " bytes",
                              g->data_blocks, g->block_size, s->size);
        parse_features(sb, g);
        return 0;
}

/* Every AG's header sectors, which scan_ag() reads first, AG after AG. */
static void hint_ag_headers(XfsScan *s) {
        _cleanup_(fs_range_list_done) FsRangeList l = {};
        int r = 0;

        if (!s->hints)
                return;
        for (uint32_t agno = 0; r >= 0 && agno < s->g.ag_count; agno++)
                r = fs_range_list_add(&l, s->offset + (xfs_ag_start(s, agno) << s->g.block_log),
                                      AG_HEADER_SECTORS * s->g.sector_size, FS_RANGE_METADATA);
        if (r >= 0)
                fs_hint_ahead(s->hints, &l);
}

/* Reads header sector @index (1: AGF, 2: AGI, 3: AGFL) of the current AG into s->sector. */
static bool read_ag_sector(XfsScan *s, unsigned index) {
        return xfs_read_at(s,
                           (xfs_ag_start(s, s->agno) << s->g.block_log) + index * s->g.sector_size,
                           s->sector, s->g.sector_size) >= 0;
}

static bool ag_header_valid(const XfsScan *s, uint32_t magic) {
        const uint8_t *h = s->sector;

        return unaligned_read_be32(h) == magic && unaligned_read_be32(h + AG_VERSIONNUM) == 1 &&
               unaligned_read_be32(h + AG_SEQNO) == s->agno &&
               unaligned_read_be32(h + AG_LENGTH) == s->ag_length;
}

/* The AGFL: blocks set aside for the free-space btrees to grow into. GETFSMAP counts them as
 * the AG's own, so they are metadata here too. A ring of flcount entries from flfirst. */
static int add_free_list(XfsScan *s, uint32_t first, uint32_t last, uint32_t count) {
        uint32_t header = s->g.v5 ? AGFL_V5_HEADER : 0;
        uint32_t slots = (s->g.sector_size - header) / 4;
        int r = 0;

        if (count == 0)
                return 0;
        if (first >= slots || last >= slots || count > slots || !read_ag_sector(s, 3) ||
            (s->g.v5 && (unaligned_read_be32(s->sector) != XFS_AGFL_MAGIC ||
                         unaligned_read_be32(s->sector + AGFL_SEQNO) != s->agno))) {
                s->skipped++;
                return 0;
        }
        for (uint32_t i = 0; r >= 0 && i < count; i++) {
                uint32_t agbno = unaligned_read_be32(s->sector + header + (first + i) % slots * 4);

                if (xfs_agbno_valid(s, agbno))
                        r = xfs_add_ag_blocks(s, agbno, 1);
                else
                        s->skipped++;
        }
        return r;
}

static int scan_agf(XfsScan *s) {
        const uint8_t *agf = s->sector;
        uint32_t bno_root, bno_level, cnt_root, cnt_level, rmap_root = 0, rmap_level = 0;
        uint32_t refc_root = 0, refc_level = 0, first, last, count;
        int r;

        if (!read_ag_sector(s, 1) || !ag_header_valid(s, XFS_AGF_MAGIC)) {
                s->skipped++;
                return 0;
        }
        /* Copied out: the walks and the free list reuse s->sector. */
        bno_root = unaligned_read_be32(agf + AGF_BNO_ROOT);
        bno_level = unaligned_read_be32(agf + AGF_BNO_LEVEL);
        cnt_root = unaligned_read_be32(agf + AGF_CNT_ROOT);
        cnt_level = unaligned_read_be32(agf + AGF_CNT_LEVEL);
        if (s->g.rmapbt) {
                rmap_root = unaligned_read_be32(agf + AGF_RMAP_ROOT);
                rmap_level = unaligned_read_be32(agf + AGF_RMAP_LEVEL);
        }
        if (s->g.reflink) {
                refc_root = unaligned_read_be32(agf + AGF_REFCOUNT_ROOT);
                refc_level = unaligned_read_be32(agf + AGF_REFCOUNT_LEVEL);
        }
        first = unaligned_read_be32(agf + AGF_FLFIRST);
        last = unaligned_read_be32(agf + AGF_FLLAST);
        count = unaligned_read_be32(agf + AGF_FLCOUNT);

        r = xfs_walk_btree(s, XFS_BTREE_BNO, bno_root, bno_level);
        if (r >= 0)
                r = xfs_walk_btree(s, XFS_BTREE_CNT, cnt_root, cnt_level);
        if (r >= 0)
                r = xfs_walk_btree(s, XFS_BTREE_RMAP, rmap_root, rmap_level);
        if (r >= 0)
                r = xfs_walk_btree(s, XFS_BTREE_REFCOUNT, refc_root, refc_level);
        if (r >= 0)
                r = add_free_list(s, first, last, count);
        return r;
}

static int scan_agi(XfsScan *s) {
        uint32_t root, level, free_root, free_level;
        int r;

        if (!read_ag_sector(s, 2) || !ag_header_valid(s, XFS_AGI_MAGIC)) {
                s->skipped++;
                return 0;
        }
        root = unaligned_read_be32(s->sector + AGI_ROOT);
        level = unaligned_read_be32(s->sector + AGI_LEVEL);
        free_root = s->g.finobt ? unaligned_read_be32(s->sector + AGI_FREE_ROOT) : 0;
        free_level = s->g.finobt ? unaligned_read_be32(s->sector + AGI_FREE_LEVEL) : 0;
        r = xfs_walk_btree(s, XFS_BTREE_INO, root, level);
        if (r >= 0)
                r = xfs_walk_btree(s, XFS_BTREE_FINO, free_root, free_level);
        return r;
}

static int scan_ag(XfsScan *s, uint32_t agno) {
        int r;

        s->agno = agno;
        s->ag_length = ag_length(s, agno);
        /* The header sectors' blocks: the rest of a block they start is never allocated. */
        r = xfs_add_ag_blocks(s, 0, s->header_blocks);
        if (r >= 0)
                r = scan_agf(s);
        if (r >= 0)
                r = scan_agi(s);
        return r;
}

/* The internal log: contiguous, inside one AG. */
static int add_log(XfsScan *s) {
        const XfsGeometry *g = &s->g;
        uint64_t agno = g->log_start >> g->agblk_log;
        uint64_t agbno = g->log_start & ((UINT64_C(1) << g->agblk_log) - 1);

        if (g->log_start == 0)
                return 0; /* external */
        if (agno >= g->ag_count || g->log_blocks == 0 ||
            agbno + g->log_blocks > ag_length(s, (uint32_t)agno)) {
                s->skipped++;
                return 0;
        }
        return xfs_add_bytes(s, (xfs_ag_start(s, (uint32_t)agno) + agbno) << g->block_log,
                             (uint64_t)g->log_blocks << g->block_log);
}

static int scan(XfsScan *s, char **ret_detail) {
        uint8_t sb[SB_READ];
        int r;

        if (xfs_read_at(s, 0, sb, sizeof(sb)) < 0)
                return failed(ret_detail, "XFS superblock cannot be read");
        r = parse_superblock(s, sb, ret_detail);
        if (r != 0)
                return r;
        s->header_blocks = DIV_ROUND_UP(AG_HEADER_SECTORS * s->g.sector_size, s->g.block_size);
        if (ag_length(s, s->g.ag_count - 1) <= s->header_blocks)
                return failed(ret_detail, "XFS's last AG is too small");
        s->block = malloc(s->g.block_size);
        s->sector = malloc(s->g.sector_size);
        if (!s->block || !s->sector)
                return -ENOMEM;
        hint_ag_headers(s);
        r = add_log(s);
        for (uint32_t agno = 0; r >= 0 && agno < s->g.ag_count; agno++)
                r = scan_ag(s, agno);
        if (r < 0)
                return r;
        /* The free-space btrees on disk are not trusted: a log not yet written back may hold
         * allocations they do not show, and a block taken for free would never be read in
         * Mode=used. */
        if (s->skipped == 0)
                r = asprintf(ret_detail, "free space unknown (only a mounted XFS is asked)");
        else
                r = asprintf(ret_detail,
                             "free space unknown (only a mounted XFS is asked); %" PRIu64
                             " metadata blocks or records did not validate, skipped",
                             s->skipped);
        if (r < 0) {
                *ret_detail = NULL;
                return -ENOMEM;
        }
        return FS_SCAN_METADATA_ONLY;
}

int fslayout_scan_xfs(const char *path, uint64_t offset, uint64_t size, const FsLayoutHints *hints,
                      FsRangeList *out, char **ret_detail) {
        XfsScan s = {.offset = offset, .size = size, .out = out, .hints = hints};
        int r;

        *ret_detail = NULL;
        s.fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (s.fd < 0)
                return failed(ret_detail, "cannot open %s: %s", path, strerror(errno));
        r = scan(&s, ret_detail);
        free(s.block);
        free(s.sector);
        (void)close(s.fd);
        return r;
}
