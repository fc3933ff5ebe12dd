/* SPDX-License-Identifier: MIT */
/*
 * Where the metadata of an XFS lies, read from the device itself: the headers of each
 * allocation group (AG), the internal log, the blocks of the AG btrees and the inode chunks the
 * inode btree names. GETFSMAP names none of them on an XFS without the reverse-mapping btree
 * (the default), and nothing maps an XFS that is not mounted. Read-only, plain pread(); every
 * block is checked before it is believed, so that a corrupt or hostile image yields less, never
 * more than its own bytes or an endless walk.
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

#include "alloc-util.h"
#include "fslayout-scan.h"
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
#define BTREE_LEVELS_MAX 16u       /* deeper than any real AG btree: a corrupt root */
#define INODES_PER_CHUNK 64u
#define INODES_PER_HOLEMASK_BIT 4u /* sparse chunks: 16 bits, each for 4 inodes */

/* Short-form (AG) btree block header: v4's 16 bytes, v5 adds blkno, lsn, uuid, owner, crc. */
#define BTREE_V4_HEADER 16u
#define BTREE_V5_HEADER 56u

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

        BT_LEVEL = 4,
        BT_NUMRECS = 6,
        BT_BLKNO = 16,
        BT_UUID = 32,
        BT_OWNER = 48,

        AGFL_SEQNO = 4,

        INOBT_HOLEMASK = 4,
};

typedef struct XfsGeometry {
        uint32_t block_size;
        uint32_t sector_size;
        uint32_t ag_blocks; /* of every AG but the last */
        uint32_t ag_count;
        uint64_t data_blocks;
        uint64_t log_start; /* an XFS block number (AG number above agblklog bits), 0: external */
        uint32_t log_blocks;
        uint8_t block_log;
        uint8_t inode_log;
        uint8_t inopb_log;
        uint8_t agblk_log;
        bool v5;
        bool sparse_inodes;
        bool finobt;
        bool rmapbt;
        bool reflink;
        uint8_t uuid[16]; /* the one v5 metadata blocks carry */
} XfsGeometry;

typedef struct XfsScan {
        int fd;
        uint64_t offset; /* of the file system on the device, bytes */
        uint64_t size;   /* of its region, bytes */
        XfsGeometry g;
        FsRangeList *out;
        const FsLayoutHints *hints;
        uint8_t *block;         /* one file system block */
        uint8_t *sector;        /* one sector, for the AG headers */
        uint32_t agno;          /* the AG being read */
        uint32_t ag_length;     /* its blocks */
        uint32_t header_blocks; /* blocks its header sectors occupy; btree blocks come after */
        uint64_t skipped;       /* blocks or records that did not validate */
} XfsScan;

/* The kinds of AG btree: magic numbers, and the sizes that place records, keys and pointers. */
typedef struct BtreeType {
        uint32_t magic_v4; /* 0: only on v5 */
        uint32_t magic_v5;
        uint32_t rec_len;
        uint32_t key_len;  /* a node entry's keys: low and high key for the overlapping rmapbt */
        bool inode_chunks; /* its leaf records name the inode chunks */
} BtreeType;

static const BtreeType bnobt = {0x41425442u, 0x41423342u, 8, 8, false};
static const BtreeType cntbt = {0x41425443u, 0x41423343u, 8, 8, false};
static const BtreeType rmapbt = {0, 0x524d4233u, 24, 40, false};
static const BtreeType refcountbt = {0, 0x52334643u, 12, 4, false};
static const BtreeType inobt = {0x49414254u, 0x49414233u, 16, 4, true};
static const BtreeType finobt = {0x46494254u, 0x46494233u, 16, 4, false};

#define BTREE_PTR_LEN 4u

/* AG block numbers of one btree level, gathered from the level above. */
typedef struct BlockList {
        uint32_t *v;
        size_t n;
        size_t allocated;
} BlockList;

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

/* @len bytes at byte @pos of the file system, all inside its region, or a negative errno. */
static int read_at(XfsScan *s, uint64_t pos, void *buf, size_t len) {
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

static int add_bytes(XfsScan *s, uint64_t start, uint64_t length) {
        if (start >= s->size)
                return 0;
        return fs_range_list_add(s->out, s->offset + start, MIN(length, s->size - start),
                                 FS_RANGE_METADATA);
}

static uint64_t ag_start(const XfsScan *s, uint32_t agno) {
        return (uint64_t)agno * s->g.ag_blocks;
}

static uint32_t ag_length(const XfsScan *s, uint32_t agno) {
        if (agno + 1 < s->g.ag_count)
                return s->g.ag_blocks;
        return (uint32_t)(s->g.data_blocks - ag_start(s, agno));
}

/* Blocks [@agbno, @agbno + @count) of the current AG. */
static int add_ag_blocks(XfsScan *s, uint64_t agbno, uint64_t count) {
        return add_bytes(s, (ag_start(s, s->agno) + agbno) << s->g.block_log,
                         count << s->g.block_log);
}

/* Where btree blocks and the free list may lie: after the headers, inside the AG. */
static bool agbno_valid(const XfsScan *s, uint32_t agbno) {
        return agbno >= s->header_blocks && agbno < s->ag_length;
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

static int block_list_add(BlockList *l, uint32_t agbno) {
        int r = ARRAY_GROW(l->v, l->allocated, l->n + 1);

        if (r < 0)
                return r;
        l->v[l->n++] = agbno;
        return 0;
}

static void block_list_done(BlockList *l) {
        free(l->v);
        *l = (BlockList){};
}

static int uint32_compare(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return x < y ? -1 : x > y;
}

/* Sorted, so that a level is read in offset order; without duplicates, so that a corrupt
 * btree whose nodes all point at the same children costs no more than a sound one. */
static void block_list_sort_unique(BlockList *l) {
        size_t w = 0;

        if (l->n == 0)
                return;
        qsort(l->v, l->n, sizeof(uint32_t), uint32_compare);
        for (size_t i = 1; i < l->n; i++)
                if (l->v[i] != l->v[w])
                        l->v[++w] = l->v[i];
        l->n = w + 1;
}

static uint32_t btree_header_len(const XfsScan *s) {
        return s->g.v5 ? BTREE_V5_HEADER : BTREE_V4_HEADER;
}

static uint32_t btree_maxrecs(const XfsScan *s, const BtreeType *type, unsigned level) {
        uint32_t room = s->g.block_size - btree_header_len(s);

        return level == 0 ? room / type->rec_len : room / (type->key_len + BTREE_PTR_LEN);
}

/* A v5 block names its own disk address (512-byte units), its AG and its file system. */
static bool btree_v5_header_valid(const XfsScan *s, const uint8_t *b, uint32_t agbno) {
        uint64_t daddr = (ag_start(s, s->agno) + agbno) << (s->g.block_log - 9);

        return unaligned_read_be64(b + BT_BLKNO) == daddr &&
               unaligned_read_be32(b + BT_OWNER) == s->agno &&
               memcmp(b + BT_UUID, s->g.uuid, sizeof(s->g.uuid)) == 0;
}

/* Reads block @agbno of the current AG into s->block; true if it is a block of @type at
 * @level, whose record count fits in it. */
static bool read_btree_block(XfsScan *s, const BtreeType *type, uint32_t agbno, unsigned level) {
        const uint8_t *b = s->block;
        uint32_t magic = s->g.v5 ? type->magic_v5 : type->magic_v4;

        if (!agbno_valid(s, agbno) || read_at(s, (ag_start(s, s->agno) + agbno) << s->g.block_log,
                                              s->block, s->g.block_size) < 0)
                return false;
        return magic != 0 && unaligned_read_be32(b) == magic &&
               unaligned_read_be16(b + BT_LEVEL) == level &&
               unaligned_read_be16(b + BT_NUMRECS) <= btree_maxrecs(s, type, level) &&
               (!s->g.v5 || btree_v5_header_valid(s, b, agbno));
}

/* The blocks of one inode chunk that hold inodes: all 64 inodes, or, in a sparse chunk, the
 * groups of 4 that the hole mask does not call holes. Whole blocks: an inode cluster starts
 * and ends on one. */
static int add_inode_chunk(XfsScan *s, const uint8_t *rec) {
        uint32_t agino = unaligned_read_be32(rec);
        uint16_t holes = s->g.sparse_inodes ? unaligned_read_be16(rec + INOBT_HOLEMASK) : 0;
        uint64_t first = (uint64_t)agino << s->g.inode_log; /* bytes into the AG */
        uint64_t group = (uint64_t)INODES_PER_HOLEMASK_BIT << s->g.inode_log;
        uint64_t ag_bytes = (uint64_t)s->ag_length << s->g.block_log;
        uint64_t mask = s->g.block_size - 1;
        int r = 0;

        if (first < (uint64_t)s->header_blocks << s->g.block_log ||
            first + INODES_PER_CHUNK * ((uint64_t)1 << s->g.inode_log) > ag_bytes) {
                s->skipped++;
                return 0;
        }
        for (unsigned bit = 0; r >= 0 && bit < 16;) {
                unsigned end = bit;
                uint64_t start, stop;

                if (holes & (1u << bit)) {
                        bit++;
                        continue;
                }
                while (end < 16 && !(holes & (1u << end)))
                        end++;
                start = (first + bit * group) & ~mask;
                stop = (first + end * group + mask) & ~mask;
                r = add_bytes(s, (ag_start(s, s->agno) << s->g.block_log) + start, stop - start);
                bit = end;
        }
        return r;
}

/* Marks the block in s->block, @agbno, and passes on what it points to: its children to
 * @next, or the inode chunks its records name. */
static int take_btree_block(XfsScan *s, const BtreeType *type, uint32_t agbno, unsigned level,
                            BlockList *next) {
        const uint8_t *b = s->block;
        uint32_t numrecs = unaligned_read_be16(b + BT_NUMRECS), header = btree_header_len(s);
        const uint8_t *ptr;
        int r;

        r = add_ag_blocks(s, agbno, 1);
        if (r < 0 || (level == 0 && !type->inode_chunks))
                return r;
        for (uint32_t i = 0; r >= 0 && i < numrecs; i++) {
                if (level == 0) {
                        r = add_inode_chunk(s, b + header + i * type->rec_len);
                        continue;
                }
                /* A sound level has no more pointers than the AG has blocks. */
                if (next->n >= s->ag_length) {
                        s->skipped++;
                        return 0;
                }
                ptr = b + header + btree_maxrecs(s, type, level) * type->key_len +
                      i * BTREE_PTR_LEN;
                r = block_list_add(next, unaligned_read_be32(ptr));
        }
        return r;
}

/* Tells the hints the blocks of a btree level (sorted) before they are read one by one. A single
 * block is not worth it: a root usually shares the AG headers' snapshot block. */
static void hint_level(XfsScan *s, const BlockList *level) {
        _cleanup_(fs_range_list_done) FsRangeList l = {};
        int r = 0;

        if (!s->hints || level->n < 2)
                return;
        for (size_t i = 0; r >= 0 && i < level->n; i++)
                if (agbno_valid(s, level->v[i]))
                        r = fs_range_list_add(&l,
                                              s->offset + ((ag_start(s, s->agno) + level->v[i])
                                                           << s->g.block_log),
                                              s->g.block_size, FS_RANGE_METADATA);
        if (r >= 0)
                fs_hint_ahead(s->hints, &l);
}

/* Every AG's header sectors, which scan_ag() reads first, AG after AG. */
static void hint_ag_headers(XfsScan *s) {
        _cleanup_(fs_range_list_done) FsRangeList l = {};
        int r = 0;

        if (!s->hints)
                return;
        for (uint32_t agno = 0; r >= 0 && agno < s->g.ag_count; agno++)
                r = fs_range_list_add(&l, s->offset + (ag_start(s, agno) << s->g.block_log),
                                      AG_HEADER_SECTORS * s->g.sector_size, FS_RANGE_METADATA);
        if (r >= 0)
                fs_hint_ahead(s->hints, &l);
}

/* Level by level from the root, as the levels are numbered: each block must carry the level
 * its parent's level implies, so that no walk can come back to a block it has been through. */
static int walk_btree(XfsScan *s, const BtreeType *type, uint32_t root, uint32_t levels) {
        _cleanup_(block_list_done) BlockList level = {}, next = {};
        int r;

        if (root == 0 && levels == 0)
                return 0; /* not there */
        if (levels == 0 || levels > BTREE_LEVELS_MAX) {
                s->skipped++;
                return 0;
        }
        r = block_list_add(&level, root);
        for (unsigned l = levels; r >= 0 && l-- > 0;) {
                BlockList swap;

                block_list_sort_unique(&level);
                hint_level(s, &level);
                for (size_t i = 0; r >= 0 && i < level.n; i++) {
                        if (!read_btree_block(s, type, level.v[i], l)) {
                                s->skipped++;
                                continue;
                        }
                        r = take_btree_block(s, type, level.v[i], l, &next);
                }
                swap = level;
                level = next;
                next = swap;
                next.n = 0;
        }
        return r;
}

/* Reads header sector @index (1: AGF, 2: AGI, 3: AGFL) of the current AG into s->sector. */
static bool read_ag_sector(XfsScan *s, unsigned index) {
        return read_at(s, (ag_start(s, s->agno) << s->g.block_log) + index * s->g.sector_size,
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

                if (agbno_valid(s, agbno))
                        r = add_ag_blocks(s, agbno, 1);
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

        r = walk_btree(s, &bnobt, bno_root, bno_level);
        if (r >= 0)
                r = walk_btree(s, &cntbt, cnt_root, cnt_level);
        if (r >= 0)
                r = walk_btree(s, &rmapbt, rmap_root, rmap_level);
        if (r >= 0)
                r = walk_btree(s, &refcountbt, refc_root, refc_level);
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
        r = walk_btree(s, &inobt, root, level);
        if (r >= 0)
                r = walk_btree(s, &finobt, free_root, free_level);
        return r;
}

static int scan_ag(XfsScan *s, uint32_t agno) {
        int r;

        s->agno = agno;
        s->ag_length = ag_length(s, agno);
        /* The header sectors' blocks: the rest of a block they start is never allocated. */
        r = add_ag_blocks(s, 0, s->header_blocks);
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
        return add_bytes(s, (ag_start(s, (uint32_t)agno) + agbno) << g->block_log,
                         (uint64_t)g->log_blocks << g->block_log);
}

static int scan(XfsScan *s, char **ret_detail) {
        uint8_t sb[SB_READ];
        int r;

        if (read_at(s, 0, sb, sizeof(sb)) < 0)
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
