/* SPDX-License-Identifier: MIT */
/*
 * What the fslayout tests share: a scratch directory with an image and a mount point, commands
 * run through the shell, discovery held to the layout's promise (and mapped by chunk to the same
 * kinds), e2fsprogs as the witness of an
 * ext4's blocks, hand-written DOS partition tables, and loop devices with mounted file systems.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "alloc-util.h"
#include "fixtures-fslayout.h"
#include "fixtures.h"
#include "fslayout.h"
#include "parse.h"
#include "util.h"

int fixture_setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));

        if (!f)
                return -1;
        strcpy(f->dir, "/tmp/test-fslayout-XXXXXX");
        if (!mkdtemp(f->dir)) {
                free(f);
                return -1;
        }
        (void)snprintf(f->image, sizeof(f->image), "%s/disk.img", f->dir);
        (void)snprintf(f->mount_point, sizeof(f->mount_point), "%s/mnt", f->dir);
        *state = f;
        return mkdir(f->mount_point, 0755);
}

/* Whatever happened in the test: unmount, detach, remove. */
int fixture_teardown(void **state) {
        Fixture *f = *state;

        if (f->mounted && umount(f->mount_point) < 0)
                (void)umount2(f->mount_point, MNT_DETACH);
        if (f->loop[0])
                (void)run("losetup -d %s", f->loop);
        (void)rm_rf(f->dir);
        free(f);
        return 0;
}

int run(const char *format, ...) {
        _cleanup_free_ char *command = NULL;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&command, format, ap);
        va_end(ap);
        if (r < 0)
                return -1;
        r = system(command);
        return r < 0 ? -1 : WIFEXITED(r) ? WEXITSTATUS(r) : 128;
}

char *output_of(const char *format, ...) {
        _cleanup_free_ char *command = NULL;
        char *buf = NULL;
        size_t size = 0;
        FILE *pipe, *memory;
        va_list ap;
        int c, r;

        va_start(ap, format);
        r = vasprintf(&command, format, ap);
        va_end(ap);
        assert_true(r >= 0);
        pipe = popen(command, "r");
        assert_non_null(pipe);
        memory = open_memstream(&buf, &size);
        assert_non_null(memory);
        while ((c = fgetc(pipe)) != EOF)
                fputc(c, memory);
        assert_int_equal(fclose(memory), 0);
        if (pclose(pipe) != 0)
                fail_msg("command failed: %s", command);
        return buf;
}

char *free_string(char *s) {
        free(s);
        return NULL;
}

bool have(const char *tool) {
        return run("command -v %s >/dev/null 2>&1", tool) == 0;
}

void write_file(const char *path, uint64_t size) {
        static char buf[MiB];
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        memset(buf, 0x5a, sizeof(buf));
        for (uint64_t done = 0; done < size; done += sizeof(buf))
                assert_int_equal(write(fd, buf, MIN(sizeof(buf), size - done)),
                                 (ssize_t)MIN(sizeof(buf), size - done));
        assert_int_equal(fsync(fd), 0);
}

void print_layout(const char *title, const FsLayout *l) {
        print_message("%s:\n", title);
        for (size_t i = 0; i < l->n_notes; i++)
                print_message("  %s\n", l->notes[i]);
}

static uint64_t size_of(int fd) {
        struct stat st;
        uint64_t size;

        assert_int_equal(fstat(fd, &st), 0);
        if (!S_ISBLK(st.st_mode))
                return (uint64_t)st.st_size;
        assert_int_equal(ioctl(fd, BLKGETSIZE64, &size), 0);
        return size;
}

/* Discovers @path and checks the layout's promise before anything else. */
/*
 * The same device mapped by chunk (the daemon's way) must give, chunk for chunk, the kinds that
 * the byte-exact layout @l gives, with as many notes; for chunks of the smallest size and of
 * sizes that do not fall on the file systems' boundaries.
 */
static void check_by_chunk(int fd, uint64_t size, const FsLayout *l) {
        static const uint32_t chunk_sizes[] = {512 * 1024, 1024 * 1024, 4 * 1024 * 1024};

        for (size_t i = 0; i < ELEMENTSOF(chunk_sizes); i++) {
                _cleanup_(fs_chunk_kinds_freep) FsChunkKinds *want = NULL;
                _cleanup_(fslayout_free) FsLayout got = {};
                _cleanup_free_ char *error = NULL;

                if (fslayout_discover_chunks(fd, size, chunk_sizes[i], NULL, &got, &error) < 0)
                        fail_msg("fslayout_discover_chunks(): %s", strempty(error));
                assert_non_null(got.chunks);
                assert_null(got.ranges);
                assert_int_equal(got.n_notes, l->n_notes);
                assert_int_equal(fs_chunk_kinds_from_layout(&want, l, size, chunk_sizes[i]), 0);
                for (uint64_t c = 0; c < want->n_chunks; c++)
                        if (fs_chunk_kind(got.chunks, c) != fs_chunk_kind(want, c))
                                fail_msg("chunk %" PRIu64 " of %" PRIu32 " bytes: %s by chunk, "
                                         "%s by the ranges",
                                         c, chunk_sizes[i],
                                         fs_range_kind_to_string(fs_chunk_kind(got.chunks, c)),
                                         fs_range_kind_to_string(fs_chunk_kind(want, c)));
        }
}

void discover(const char *path, FsLayout *l, const char *title) {
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        uint64_t size;
        int r;

        assert_true(fd >= 0);
        size = size_of(fd);
        r = fslayout_discover(fd, size, NULL, l, &error);
        if (r < 0)
                fail_msg("fslayout_discover(%s): %s", path, strempty(error));
        assert_int_equal(fslayout_check(l, size), 0);
        print_layout(title, l);
        check_by_chunk(fd, size, l);
}

bool has_note(const FsLayout *l, const char *a, const char *b) {
        for (size_t i = 0; i < l->n_notes; i++)
                if (strstr(l->notes[i], a) && (!b || strstr(l->notes[i], b)))
                        return true;
        return false;
}

/* Every byte of [offset, offset + length) is of one of @kinds. */
void assert_kinds(const FsLayout *l, uint64_t offset, uint64_t length, unsigned kinds,
                  const char *what) {
        for (FsRangeKind k = 0; k < _FS_RANGE_KIND_MAX; k++) {
                uint64_t bytes = fslayout_bytes_in(l, offset, length, k);

                if (!(kinds & ONLY(k)) && bytes > 0)
                        fail_msg("%s at [%" PRIu64 ", +%" PRIu64 "): %" PRIu64 " bytes are %s",
                                 what, offset, length, bytes, fs_range_kind_to_string(k));
        }
}

/* ---- e2fsprogs as the witness ---- */

/* "12", "12-15": the run of blocks a dumpe2fs or debugfs number stands for. Returns the text
 * after it, or NULL if there is no number at @p. */
static const char *parse_run(const char *p, uint64_t *ret_first, uint64_t *ret_count) {
        unsigned long long first, last;
        char *end;

        while (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t')
                p++;
        if (*p < '0' || *p > '9')
                return NULL;
        first = last = strtoull(p, &end, 10);
        if (*end == '-' && end[1] >= '0' && end[1] <= '9')
                last = strtoull(end + 1, &end, 10);
        assert_true(last >= first);
        *ret_first = first;
        *ret_count = last - first + 1;
        return end;
}

/* Every block of a list ("1 2 3 7", "4385-8192, 9000") is of one of @kinds. Returns the count. */
uint64_t expect_blocks(const Witness *w, const char *list, unsigned kinds, const char *what) {
        uint64_t first, count, total = 0;

        while (list && (list = parse_run(list, &first, &count))) {
                count += w->run_tail;
                assert_kinds(w->layout, w->base + first * w->block_size, count * w->block_size,
                             kinds, what);
                total += count;
        }
        return total;
}

static uint64_t header_number(const char *text, const char *key) {
        const char *p = strstr(text, key);

        if (!p)
                fail_msg("no \"%s\" in dumpe2fs output", key + 1);
        return strtoull(p + strlen(key), NULL, 10);
}

/* One group's inode table, as dumpe2fs lists it, line after line. */
typedef struct GroupTable {
        uint64_t inodes_per_group;
        uint64_t inode_size;
        uint64_t group;
        uint64_t first, count; /* its blocks */
        uint64_t unused;       /* "unused inodes", the count of the descriptors with checksums */
        bool has_unused;
} GroupTable;

/* The group's inode table against its "Free inodes:" list: a block that holds an inode in use
 * is metadata (the kernel reads it); one that holds none is used (the block bitmap has it), if
 * it lies past the group's unused-inode mark or the group has none; else it may be either. */
static void check_inode_table(const Witness *w, GroupTable *t, const char *free_list,
                              Ext4Facts *facts) {
        uint64_t ipg = t->inodes_per_group, per_block = w->block_size / t->inode_size;
        uint64_t first_ino = t->group * ipg + 1, first, count;
        _cleanup_free_ bool *in_use = calloc(ipg, sizeof(bool));
        const char *p = free_list;

        assert_non_null(in_use);
        for (uint64_t i = 0; i < ipg; i++)
                in_use[i] = true;
        while (p && (p = parse_run(p, &first, &count)))
                for (uint64_t i = first; i < first + count; i++)
                        if (i >= first_ino && i < first_ino + ipg)
                                in_use[i - first_ino] = false;
        for (uint64_t b = 0; b < t->count; b++) {
                uint64_t offset = w->base + (t->first + b) * w->block_size;
                bool any = false;

                for (uint64_t i = b * per_block; i < (b + 1) * per_block && i < ipg; i++)
                        any = any || in_use[i];
                if (any) {
                        assert_kinds(w->layout, offset, w->block_size, ONLY(FS_RANGE_METADATA),
                                     "inode table block with an inode in use");
                        facts->metadata_blocks++;
                } else if (!t->has_unused || b * per_block >= ipg - MIN(t->unused, ipg)) {
                        assert_kinds(w->layout, offset, w->block_size, ONLY(FS_RANGE_USED),
                                     "inode table block without an inode in use");
                        facts->table_used_blocks++;
                } else
                        facts->table_either_blocks++;
        }
        t->count = 0;
}

/* One line of dumpe2fs's group list: its metadata must be metadata, its free blocks free; the
 * inode table is judged with the group's last line, its free inodes. */
static void check_group_line(const Witness *w, const char *line, Ext4Facts *facts,
                             uint64_t *free_listed, GroupTable *t) {
        static const char *const keys[] = {
                "superblock at ",          "Group descriptors at ", "Group descriptor at ",
                "Reserved GDT blocks at ", "Block bitmap at ",      "Inode bitmap at ",
        };
        uint64_t first, count;
        const char *p;

        if (strncmp(line, "Group ", 6) == 0) {
                t->group = strtoull(line + 6, NULL, 10);
                t->has_unused = false;
        }
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                p = strstr(line, keys[i]);
                if (!p)
                        continue;
                assert_non_null(parse_run(p + strlen(keys[i]), &first, &count));
                assert_kinds(w->layout, w->base + first * w->block_size, count * w->block_size,
                             ONLY(FS_RANGE_METADATA), keys[i]);
                facts->metadata_blocks += count;
        }
        p = strstr(line, "Inode table at ");
        if (p)
                assert_non_null(parse_run(p + 15, &t->first, &t->count));
        p = strstr(line, " unused inodes");
        if (p && strstr(line, " free inodes, ")) {
                while (p > line && p[-1] >= '0' && p[-1] <= '9')
                        p--;
                t->unused = strtoull(p, NULL, 10);
                t->has_unused = true;
        }
        if (strncmp(line, "  Free inodes:", 14) == 0 && t->count > 0)
                check_inode_table(w, t, line + 14, facts);
        if (strncmp(line, "  Free blocks: ", 15) == 0)
                *free_listed += expect_blocks(
                        &(Witness){w->layout, w->base, w->block_size, facts->cluster_blocks - 1},
                        line + 15, ONLY(FS_RANGE_FREE), "free block");
}

/*
 * Holds the layout of the ext4 at @spec ("image?offset=N" or a device), at @base of the device,
 * against dumpe2fs: every superblock, descriptor, reserved GDT block, bitmap and inode table it
 * lists is metadata, every block it lists as free is free, and the free blocks add up to the
 * superblock's count. Then the journal's blocks (debugfs) are metadata.
 */
void check_with_e2fsprogs(const FsLayout *l, const char *spec, uint64_t base, Ext4Facts *ret) {
        _cleanup_free_ char *out = output_of("dumpe2fs '%s' 2>/dev/null", spec), *journal = NULL;
        Ext4Facts facts = {};
        uint64_t free_listed = 0;
        Witness w = {.layout = l, .base = base};
        GroupTable table = {};
        char *line, *saveptr = NULL;

        facts.block_size = w.block_size = header_number(out, "\nBlock size:");
        facts.free_blocks = header_number(out, "\nFree blocks:");
        facts.first_data_block = header_number(out, "\nFirst block:");
        facts.cluster_blocks = strstr(out, "\nCluster size:")
                                       ? header_number(out, "\nCluster size:") / w.block_size
                                       : 1;
        journal = output_of("debugfs -R 'blocks <8>' '%s' 2>/dev/null", spec);
        facts.journal_blocks = expect_blocks(&w, journal, ONLY(FS_RANGE_METADATA), "journal");
        facts.metadata_blocks += facts.journal_blocks;
        table.inodes_per_group = header_number(out, "\nInodes per group:");
        table.inode_size = header_number(out, "\nInode size:");
        for (line = strtok_r(out, "\n", &saveptr); line; line = strtok_r(NULL, "\n", &saveptr))
                check_group_line(&w, line, &facts, &free_listed, &table);
        assert_int_equal(free_listed, facts.free_blocks);
        assert_int_equal(fslayout_bytes(l, FS_RANGE_FREE), facts.free_blocks * facts.block_size);
        *ret = facts;
}

/* The blocks of each file (debugfs) are used: not free, not metadata. Returns their bytes. */
uint64_t check_files_ext4(const FsLayout *l, const char *spec, uint64_t base, uint64_t block_size,
                          const char *const *names, size_t n) {
        Witness w = {.layout = l, .base = base, .block_size = block_size};
        uint64_t bytes = 0;

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *blocks =
                        output_of("debugfs -R 'blocks /%s' '%s' 2>/dev/null", names[i], spec);

                bytes += expect_blocks(&w, blocks, ONLY(FS_RANGE_USED), names[i]) * block_size;
        }
        return bytes;
}

void make_source_dir(Fixture *f, char *dir, size_t size, int n_files) {
        (void)snprintf(dir, size, "%s/src", f->dir);
        assert_int_equal(mkdir(dir, 0755), 0);
        for (int i = 1; i <= n_files; i++) {
                char path[256];

                (void)snprintf(path, sizeof(path), "%s/f%d", dir, i);
                write_file(path, FILE_SIZE);
        }
}

/*
 * Holds the metadata and used bytes of the ext4 in [@base, @base + @size) against dumpe2fs
 * and the files: metadata is what dumpe2fs lists plus the journal's data blocks (debugfs), plus
 * the boot block below a 1 KiB file system's first block, plus the journal's mapping blocks,
 * which debugfs does not list (a few extent-tree blocks, or for ext3 one indirect block per
 * block_size / 4 blocks, plus a double-indirect one); used is the files' blocks plus at most
 * 1 MiB (root and lost+found directories, the resize inode's indirect block, extent-tree blocks
 * of files that cross block groups).
 */
void check_ext4_totals(const FsLayout *l, uint64_t base, uint64_t size, const Ext4Facts *facts,
                       uint64_t file_bytes) {
        uint64_t bs = facts->block_size;
        uint64_t expected = (facts->metadata_blocks + facts->first_data_block) * bs;
        uint64_t either = facts->table_either_blocks * bs, tables = facts->table_used_blocks * bs;
        uint64_t metadata = fslayout_bytes_in(l, base, size, FS_RANGE_METADATA);
        uint64_t used = fslayout_bytes_in(l, base, size, FS_RANGE_USED);

        print_message("  metadata %" PRIu64 " (dumpe2fs + journal: %" PRIu64 "), used %" PRIu64
                      " (files: %" PRIu64 ", inode table blocks without inodes: %" PRIu64
                      ", either: %" PRIu64 ")\n",
                      metadata, expected, used, file_bytes, tables, either);
        assert_true(metadata >= expected &&
                    metadata <= expected + either + (facts->journal_blocks / (bs / 4) + 8) * bs);
        assert_true(used >= file_bytes + tables && used <= file_bytes + tables + either + MiB);
}

void make_image(const Fixture *f, uint64_t size) {
        _cleanup_close_ int fd = open(f->image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)size), 0);
}

/* ---- partition tables at odds with the file systems: free only if no one else claims it ---- */

/* Writes a DOS partition table (an MBR, or an extended boot record) of up to four entries into
 * the sector at @at of the image, by hand: sfdisk refuses tables that overlap. */
void write_dos_table(const char *path, uint64_t at, const MbrEntry *e, size_t n) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        uint8_t sector[512] = {};

        assert_true(fd >= 0 && n <= 4);
        if (at == 0)
                memcpy(sector + 440, "\x12\x34\x56\x78", 4); /* disk identifier */
        for (size_t i = 0; i < n; i++) {
                uint8_t *p = sector + 446 + 16 * i;
                uint32_t start = htole32((uint32_t)(e[i].start / 512));
                uint32_t sectors = htole32((uint32_t)(e[i].size / 512));

                p[4] = e[i].type;
                memcpy(p + 8, &start, 4);
                memcpy(p + 12, &sectors, 4);
        }
        sector[510] = 0x55;
        sector[511] = 0xaa;
        assert_int_equal(pwrite(fd, sector, sizeof(sector), (off_t)at), (ssize_t)sizeof(sector));
}

void mkfs_ext4_at(const Fixture *f, uint64_t offset, uint64_t size) {
        assert_int_equal(run("mkfs.ext4 -q -F -E offset=%" PRIu64 " %s %" PRIu64 " >/dev/null 2>&1",
                             offset, f->image, size / KiB),
                         0);
}

/* ---- loop devices and mounts (root) ---- */

/* Attaches the image with partition scanning. Kernels built without GPT support find no
 * partitions: then partx adds them from user space, as the kernel would have. Through
 * tests/tools/loop-attach where ctest says where the sources are (EBS_HYDRATE_SOURCE_DIR): it
 * copes with a free loop device that has no node in /dev. */
void attach(Fixture *f) {
        const char *src = getenv("EBS_HYDRATE_SOURCE_DIR");
        _cleanup_free_ char *out =
                src ? output_of("'%s/tests/tools/loop-attach' -P %s", src, f->image)
                    : output_of("losetup -f --show -P %s", f->image);
        char p1[96];

        assert_true(strncmp(out, "/dev/loop", 9) == 0);
        out[strcspn(out, "\n")] = '\0';
        (void)snprintf(f->loop, sizeof(f->loop), "%s", out);
        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        if (access(p1, F_OK) < 0)
                (void)run("partx -a %s >/dev/null 2>&1", f->loop);
        for (int i = 0; i < 50 && access(p1, F_OK) < 0; i++)
                (void)usleep(100 * 1000);
        assert_int_equal(access(p1, F_OK), 0);
}

uint64_t partition_bytes(const Fixture *f, const char *attribute) {
        _cleanup_free_ char *out =
                output_of("cat /sys/class/block/%sp1/%s", f->loop + 5, attribute);

        return strtoull(out, NULL, 10) * 512;
}

void mount_p1(Fixture *f, const char *type) {
        char p1[96];

        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        assert_int_equal(mount(p1, f->mount_point, type, 0, NULL), 0);
        f->mounted = true;
}

void unmount(Fixture *f) {
        assert_int_equal(umount(f->mount_point), 0);
        f->mounted = false;
}

/* The physical extents of a file (FIEMAP, after a sync), as bytes of the whole device. */
void add_file_extents(Extents *e, const char *path, uint64_t base) {
        _cleanup_free_ struct fiemap *map =
                calloc(1, sizeof(struct fiemap) + 512 * sizeof(struct fiemap_extent));
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        bool last = false;

        assert_true(fd >= 0 && map);
        map->fm_length = FIEMAP_MAX_OFFSET;
        map->fm_flags = FIEMAP_FLAG_SYNC;
        map->fm_extent_count = 512;
        assert_int_equal(ioctl(fd, FS_IOC_FIEMAP, map), 0);
        for (unsigned i = 0; i < map->fm_mapped_extents; i++) {
                const struct fiemap_extent *x = &map->fm_extents[i];

                assert_true(e->n < ELEMENTSOF(e->ranges));
                e->ranges[e->n++] = (FsRange){base + x->fe_physical, x->fe_length, FS_RANGE_USED};
                e->bytes += x->fe_length;
                last = x->fe_flags & FIEMAP_EXTENT_LAST;
        }
        assert_true(last);
}

void assert_extents_used(const FsLayout *l, const Extents *e) {
        for (size_t i = 0; i < e->n; i++)
                assert_kinds(l, e->ranges[i].offset, e->ranges[i].length, ONLY(FS_RANGE_USED),
                             "file extent");
}

/* Writes 8 MiB files up to @fill_percent of the free space, deletes two of every three, and
 * returns the extents of the rest. */
void fill_and_thin(const Fixture *f, unsigned fill_percent, uint64_t base, Extents *ret) {
        _cleanup_close_ int root = open(f->mount_point, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct statvfs sv;
        uint64_t n;
        int r, unused = 0; /* the argument of FIFREEZE and FITHAW: ignored, but valgrind reads it */

        assert_int_equal(statvfs(f->mount_point, &sv), 0);
        n = (uint64_t)sv.f_bavail * sv.f_frsize / 100 * fill_percent / FILE_SIZE;
        for (uint64_t i = 0; i < n; i++) {
                char path[256];

                (void)snprintf(path, sizeof(path), "%s/f%03" PRIu64, f->mount_point, i);
                write_file(path, FILE_SIZE);
        }
        for (uint64_t i = 0; i < n; i++) {
                char path[256];

                (void)snprintf(path, sizeof(path), "%s/f%03" PRIu64, f->mount_point, i);
                if (i % 3 != 0)
                        assert_int_equal(unlink(path), 0);
                else
                        add_file_extents(ret, path, base);
        }
        assert_int_equal(syncfs(root), 0);
        /* XFS frees the blocks of unlinked files in the background (inodegc); freezing waits
         * for that. Thawed at once, whatever happened, so that teardown can unmount. */
        r = ioctl(root, FIFREEZE, &unused);
        if (r == 0)
                assert_int_equal(ioctl(root, FITHAW, &unused), 0);
        assert_int_equal(r, 0);
        print_message("  %" PRIu64 " files of 8 MiB written, %" PRIu64 " kept (%" PRIu64
                      " bytes)\n",
                      n, (n + 2) / 3, ret->bytes);
}

void print_figures(const char *method, const FsLayout *l, uint64_t base, uint64_t size) {
        print_message("  %-10s (partition 1):", method);
        for (FsRangeKind k = 0; k < _FS_RANGE_KIND_MAX; k++) {
                char human[FORMAT_BYTES_MAX];
                uint64_t bytes = fslayout_bytes_in(l, base, size, k);

                print_message(" %s %" PRIu64 " (%s)", fs_range_kind_to_string(k), bytes,
                              format_bytes(human, sizeof(human), bytes));
        }
        print_message("\n");
}

/* mkfs.ext4, sgdisk and the like live in sbin, which a user's PATH may lack. */
void add_sbin_to_path(void) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s:/usr/sbin:/sbin", getenv("PATH") ?: "/usr/bin:/bin") >= 0)
                (void)setenv("PATH", path, 1);
}

/* ---- what a discovery tells ahead ---- */

void told_collect(const ByteRange *ranges, size_t n, void *userdata) {
        Told *t = userdata;

        assert_int_equal(ARRAY_GROW(t->v, t->allocated, t->n + n), 0);
        memcpy(t->v + t->n, ranges, n * sizeof(*ranges));
        t->n += n;
        t->calls++;
        t->most = MAX(t->most, n);
}

bool told(const Told *t, uint64_t offset, uint64_t length) {
        for (size_t i = 0; i < t->n; i++)
                if (t->v[i].offset <= offset && offset + length <= t->v[i].offset + t->v[i].length)
                        return true;
        return false;
}
