/* SPDX-License-Identifier: MIT */
/*
 * fslayout on real file systems: images built with sgdisk/sfdisk and mkfs.ext4 (-E offset, -d)
 * are checked against e2fsprogs' own account of them (dumpe2fs, debugfs), without root; loop
 * devices with mounted ext4 and XFS are checked against FIEMAP and xfs_db, as root; XFS's own
 * metadata reading against xfs_db's account of every block, and against GETFSMAP on a file system
 * with the reverse-mapping btree, and on corrupted images. Tests skip
 * when a tool is missing or root is needed. The range normalisation is tested as the pure
 * function it is.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fsmap.h>
#include <sched.h>
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

#include "fslayout-scan.h"
#include "fslayout.h"
#include "parse.h"
#include "util.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define FILE_SIZE (8 * MiB)
#define PART_OFFSET MiB /* sgdisk and sfdisk put the first partition at sector 2048 */

#define ONLY(kind) (1u << (kind))

typedef struct Fixture {
        char dir[64];
        char image[128];
        char mount_point[128];
        char loop[64]; /* attached loop device, "" if none */
        bool mounted;
} Fixture;

static int setup(void **state) {
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

static int run(const char *format, ...) _printf_(1, 2);

/* Whatever happened in the test: unmount, detach, remove. */
static int teardown(void **state) {
        Fixture *f = *state;

        if (f->mounted && umount(f->mount_point) < 0)
                (void)umount2(f->mount_point, MNT_DETACH);
        if (f->loop[0])
                (void)run("losetup -d %s", f->loop);
        (void)run("rm -rf %s", f->dir);
        free(f);
        return 0;
}

static int run(const char *format, ...) {
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

static char *output_of(const char *format, ...) _printf_(1, 2);
static char *output_of(const char *format, ...) {
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

static void fclosep(FILE **f) {
        if (*f)
                (void)fclose(*f);
}

static char *free_string(char *s) {
        free(s);
        return NULL;
}

static bool have(const char *tool) {
        return run("command -v %s >/dev/null 2>&1", tool) == 0;
}

#define REQUIRE_TOOLS(...)                                                       \
        do {                                                                     \
                const char *_tools_[] = {__VA_ARGS__};                           \
                for (size_t _i_ = 0; _i_ < ELEMENTSOF(_tools_); _i_++)           \
                        if (!have(_tools_[_i_])) {                               \
                                print_message("no %s: skipped\n", _tools_[_i_]); \
                                skip();                                          \
                        }                                                        \
        } while (0)

#define REQUIRE_ROOT()                                          \
        do {                                                    \
                if (geteuid() != 0) {                           \
                        print_message("needs root: skipped\n"); \
                        skip();                                 \
                }                                               \
        } while (0)

static void write_file(const char *path, uint64_t size) {
        static char buf[MiB];
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        memset(buf, 0x5a, sizeof(buf));
        for (uint64_t done = 0; done < size; done += sizeof(buf))
                assert_int_equal(write(fd, buf, MIN(sizeof(buf), size - done)),
                                 (ssize_t)MIN(sizeof(buf), size - done));
        assert_int_equal(fsync(fd), 0);
}

static void print_layout(const char *title, const FsLayout *l) {
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
static void discover(const char *path, FsLayout *l, const char *title) {
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        uint64_t size;
        int r;

        assert_true(fd >= 0);
        size = size_of(fd);
        r = fslayout_discover(fd, size, l, &error);
        if (r < 0)
                fail_msg("fslayout_discover(%s): %s", path, strempty(error));
        assert_int_equal(fslayout_check(l, size), 0);
        print_layout(title, l);
}

static bool has_note(const FsLayout *l, const char *a, const char *b) {
        for (size_t i = 0; i < l->n_notes; i++)
                if (strstr(l->notes[i], a) && (!b || strstr(l->notes[i], b)))
                        return true;
        return false;
}

/* Every byte of [offset, offset + length) is of one of @kinds. */
static void assert_kinds(const FsLayout *l, uint64_t offset, uint64_t length, unsigned kinds,
                         const char *what) {
        for (FsRangeKind k = 0; k < _FS_RANGE_KIND_MAX; k++) {
                uint64_t bytes = fslayout_bytes_in(l, offset, length, k);

                if (!(kinds & ONLY(k)) && bytes > 0)
                        fail_msg("%s at [%" PRIu64 ", +%" PRIu64 "): %" PRIu64 " bytes are %s",
                                 what, offset, length, bytes, fs_range_kind_to_string(k));
        }
}

/* ---- pure: normalisation and the layout's helpers ---- */

static void test_fslayout_normalize(void **state) {
        const FsRange in[] = {
                {900, 500, FS_RANGE_FREE},     /* cut off at the size */
                {0, 100, FS_RANGE_FREE},       /* overlapped by ... */
                {50, 100, FS_RANGE_USED},      /* ... used, which wins, overlapped by ... */
                {120, 10, FS_RANGE_METADATA},  /* ... metadata, which wins */
                {300, 0, FS_RANGE_METADATA},   /* empty */
                {400, 50, FS_RANGE_FREE},      /* merged with ... */
                {450, 50, FS_RANGE_FREE},      /* ... its neighbour */
                {2000, 10, FS_RANGE_METADATA}, /* beyond the end */
                {600, 10, (FsRangeKind)7},     /* invalid: used */
        };
        const FsRange want[] = {
                {0, 50, FS_RANGE_FREE},       /* free until used begins */
                {50, 70, FS_RANGE_USED},      /* used until metadata begins */
                {120, 10, FS_RANGE_METADATA}, /* metadata over both */
                {130, 270, FS_RANGE_USED},    /* up to 400: what nobody covers is used */
                {400, 100, FS_RANGE_FREE},    /* two neighbours, merged */
                {500, 400, FS_RANGE_USED},    /* nothing known: used */
                {900, 100, FS_RANGE_FREE},    /* cut off at 1000 */
        };
        FsLayout l = {};

        assert_int_equal(fs_ranges_normalize(in, ELEMENTSOF(in), 1000, &l.ranges, &l.n_ranges), 0);
        assert_int_equal(l.n_ranges, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_int_equal(l.ranges[i].offset, want[i].offset);
                assert_int_equal(l.ranges[i].length, want[i].length);
                assert_int_equal(l.ranges[i].kind, want[i].kind);
        }
        assert_int_equal(fslayout_check(&l, 1000), 0);
        assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 250);
        assert_int_equal(fslayout_bytes_in(&l, 40, 100, FS_RANGE_USED), 80);
        assert_int_equal(fslayout_find(&l, 125)->kind, FS_RANGE_METADATA);
        assert_int_equal(fslayout_find(&l, 999)->offset, 900);
        assert_null(fslayout_find(&l, 1000));
        fslayout_free(&l);

        /* Nothing known: all used. */
        assert_int_equal(fs_ranges_normalize(NULL, 0, 4096, &l.ranges, &l.n_ranges), 0);
        assert_int_equal(l.n_ranges, 1);
        assert_int_equal(l.ranges[0].kind, FS_RANGE_USED);
        assert_int_equal(l.ranges[0].length, 4096);
        fslayout_free(&l);
}

/* A range of no valid kind is not dropped, leaving the free space under it: unknown is used. */
static void test_fslayout_normalize_invalid_kind(void **state) {
        const FsRange in[] = {{0, 100, FS_RANGE_FREE}, {20, 10, (FsRangeKind)7}};
        FsLayout l = {};

        assert_int_equal(fs_ranges_normalize(in, ELEMENTSOF(in), 100, &l.ranges, &l.n_ranges), 0);
        assert_int_equal(fslayout_check(&l, 100), 0);
        assert_int_equal(fslayout_bytes_in(&l, 20, 10, FS_RANGE_USED), 10);
        assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 90);
        fslayout_free(&l);
}

static void test_fslayout_check(void **state) {
        FsRange r[] = {
                {0, 10, FS_RANGE_METADATA}, {10, 10, FS_RANGE_USED}, {20, 10, FS_RANGE_FREE}};
        FsLayout l = {.ranges = r, .n_ranges = 3};

        assert_int_equal(fslayout_check(&l, 30), 0);
        assert_int_equal(fslayout_check(&l, 31), -EBADMSG); /* short */
        assert_int_equal(fslayout_check(&l, 29), -EBADMSG); /* beyond */
        r[1].offset = 11;                                   /* gap */
        assert_int_equal(fslayout_check(&l, 30), -EBADMSG);
        r[1].offset = 10;
        r[1].kind = FS_RANGE_FREE; /* same kind twice in a row */
        assert_int_equal(fslayout_check(&l, 30), -EBADMSG);
        r[1].kind = FS_RANGE_USED;
        r[2].length = 0; /* empty */
        assert_int_equal(fslayout_check(&l, 20), -EBADMSG);
}

static void test_fslayout_errors(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        FsLayout l = {};

        assert_int_equal(fslayout_discover(dir_fd, 0, &l, &error), -EINVAL);
        assert_non_null(error);
        error = free_string(error);
        assert_int_equal(fslayout_discover(dir_fd, 4096, &l, &error), -EISDIR);
        assert_non_null(strstr(error, "Cannot read"));
        error = free_string(error);
        assert_true(fslayout_discover(-1, 4096, &l, &error) < 0);
        assert_non_null(error);
        assert_null(l.ranges);
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

typedef struct Witness {
        const FsLayout *layout;
        uint64_t base;       /* of the file system on the device */
        uint64_t block_size; /* of the file system */
        uint64_t run_tail;   /* blocks that follow each listed run: with bigalloc, dumpe2fs
                                lists free clusters by their first blocks */
} Witness;

/* Every block of a list ("1 2 3 7", "4385-8192, 9000") is of one of @kinds. Returns the count. */
static uint64_t expect_blocks(const Witness *w, const char *list, unsigned kinds,
                              const char *what) {
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

typedef struct Ext4Facts {
        uint64_t block_size;
        uint64_t free_blocks;     /* from the superblock */
        uint64_t metadata_blocks; /* as dumpe2fs lists them, group by group, and the journal */
        uint64_t journal_blocks;
        uint64_t first_data_block;
        uint64_t cluster_blocks; /* 1 without bigalloc */
} Ext4Facts;

/* One line of dumpe2fs's group list: its metadata must be metadata, its free blocks free. */
static void check_group_line(const Witness *w, const char *line, Ext4Facts *facts,
                             uint64_t *free_listed) {
        static const char *const keys[] = {
                "superblock at ",          "Group descriptors at ", "Group descriptor at ",
                "Reserved GDT blocks at ", "Block bitmap at ",      "Inode bitmap at ",
                "Inode table at ",
        };
        uint64_t first, count;

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                const char *p = strstr(line, keys[i]);

                if (!p)
                        continue;
                assert_non_null(parse_run(p + strlen(keys[i]), &first, &count));
                assert_kinds(w->layout, w->base + first * w->block_size, count * w->block_size,
                             ONLY(FS_RANGE_METADATA), keys[i]);
                facts->metadata_blocks += count;
        }
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
static void check_with_e2fsprogs(const FsLayout *l, const char *spec, uint64_t base,
                                 Ext4Facts *ret) {
        _cleanup_free_ char *out = output_of("dumpe2fs '%s' 2>/dev/null", spec), *journal = NULL;
        Ext4Facts facts = {};
        uint64_t free_listed = 0;
        Witness w = {.layout = l, .base = base};
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
        for (line = strtok_r(out, "\n", &saveptr); line; line = strtok_r(NULL, "\n", &saveptr))
                check_group_line(&w, line, &facts, &free_listed);
        assert_int_equal(free_listed, facts.free_blocks);
        assert_int_equal(fslayout_bytes(l, FS_RANGE_FREE), facts.free_blocks * facts.block_size);
        *ret = facts;
}

/* The blocks of each file (debugfs) are used: not free, not metadata. Returns their bytes. */
static uint64_t check_files_ext4(const FsLayout *l, const char *spec, uint64_t base,
                                 uint64_t block_size, const char *const *names, size_t n) {
        Witness w = {.layout = l, .base = base, .block_size = block_size};
        uint64_t bytes = 0;

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *blocks =
                        output_of("debugfs -R 'blocks /%s' '%s' 2>/dev/null", names[i], spec);

                bytes += expect_blocks(&w, blocks, ONLY(FS_RANGE_USED), names[i]) * block_size;
        }
        return bytes;
}

static void make_source_dir(Fixture *f, char *dir, size_t size, int n_files) {
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
static void check_ext4_totals(const FsLayout *l, uint64_t base, uint64_t size,
                              const Ext4Facts *facts, uint64_t file_bytes) {
        uint64_t bs = facts->block_size;
        uint64_t expected = (facts->metadata_blocks + facts->first_data_block) * bs;
        uint64_t metadata = fslayout_bytes_in(l, base, size, FS_RANGE_METADATA);
        uint64_t used = fslayout_bytes_in(l, base, size, FS_RANGE_USED);

        print_message("  metadata %" PRIu64 " (dumpe2fs + journal: %" PRIu64 "), used %" PRIu64
                      " (files: %" PRIu64 ")\n",
                      metadata, expected, used, file_bytes);
        assert_true(metadata >= expected &&
                    metadata <= expected + (facts->journal_blocks / (bs / 4) + 8) * bs);
        assert_true(used >= file_bytes && used <= file_bytes + MiB);
}

static void make_image(const Fixture *f, uint64_t size) {
        _cleanup_close_ int fd = open(f->image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)size), 0);
}

static void test_fslayout_unpartitioned_ext4(void **state) {
        static const char *const kept[] = {"f1", "f3"};
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        _cleanup_free_ char *deleted = NULL;
        char src[128];
        Ext4Facts facts;
        uint64_t file_bytes;

        REQUIRE_TOOLS("mkfs.ext4", "debugfs", "dumpe2fs");
        make_source_dir(f, src, sizeof(src), 3);
        make_image(f, 64 * MiB);
        assert_int_equal(run("mkfs.ext4 -q -F -d %s %s >/dev/null 2>&1", src, f->image), 0);
        deleted = output_of("debugfs -R 'blocks /f2' %s 2>/dev/null", f->image);
        assert_int_equal(run("debugfs -w -R 'rm /f2' %s >/dev/null 2>&1", f->image), 0);

        discover(f->image, &l, "ext4 on the whole image, 64 MiB, 3 files of 8 MiB, one deleted");
        assert_true(
                has_note(&l, "no partition table: whole device (ext4, 64.0 MiB", "(libext2fs)"));
        assert_kinds(&l, 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        check_with_e2fsprogs(&l, f->image, 0, &facts);
        file_bytes = check_files_ext4(&l, f->image, 0, facts.block_size, kept, ELEMENTSOF(kept));
        assert_int_equal(file_bytes, 2 * FILE_SIZE);
        assert_int_equal(expect_blocks(&(Witness){&l, 0, facts.block_size, 0}, deleted,
                                       ONLY(FS_RANGE_FREE), "block of the deleted file"),
                         FILE_SIZE / facts.block_size);
        check_ext4_totals(&l, 0, 64 * MiB, &facts, file_bytes);
}

/* The placements mkfs.ext4 can choose: no journal, a block-mapped journal, clusters, meta_bg
 * descriptors, sparse_super2 backups, no flex_bg, block sizes of 1, 2 and 4 KiB. */
static void test_fslayout_ext_variants(void **state) {
        static const char *const variants[] = {
                "-t ext2",
                "-t ext3",
                "-O bigalloc -C 16384",
                "-O meta_bg,^resize_inode",
                "-b 4096 -O sparse_super2",
                "-b 2048 -O ^flex_bg",
        };
        static const char *const files[] = {"f1", "f2"};
        Fixture *f = *state;
        char src[128];

        REQUIRE_TOOLS("mkfs.ext4", "debugfs", "dumpe2fs");
        make_source_dir(f, src, sizeof(src), 2);
        for (size_t i = 0; i < ELEMENTSOF(variants); i++) {
                _cleanup_(fslayout_free) FsLayout l = {};
                Ext4Facts facts;
                uint64_t file_bytes;

                make_image(f, 128 * MiB);
                assert_int_equal(run("mkfs.ext4 -q -F %s -d %s %s >/dev/null 2>&1", variants[i],
                                     src, f->image),
                                 0);
                discover(f->image, &l, variants[i]);
                assert_true(has_note(&l, "no partition table: whole device (ext", "(libext2fs)"));
                assert_kinds(&l, 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
                check_with_e2fsprogs(&l, f->image, 0, &facts);
                /* debugfs lists the indirect blocks of block-mapped (ext2/3) files too. */
                file_bytes = check_files_ext4(&l, f->image, 0, facts.block_size, files, 2);
                assert_true(file_bytes >= 2 * FILE_SIZE && file_bytes <= 2 * FILE_SIZE / 100 * 101);
                check_ext4_totals(&l, 0, 128 * MiB, &facts, file_bytes);
        }
}

static void test_fslayout_gpt_two_partitions(void **state) {
        static const char *const files[] = {"f1", "f2"};
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        const uint64_t size = 256 * MiB, p1_size = 160 * MiB;
        const uint64_t p2_start = PART_OFFSET + p1_size, p2_end = size - 33 * 512;
        char src[128], spec[256];
        Ext4Facts facts;
        uint64_t file_bytes;

        REQUIRE_TOOLS("sgdisk", "mkfs.ext4", "debugfs", "dumpe2fs");
        make_source_dir(f, src, sizeof(src), 2);
        make_image(f, size);
        assert_int_equal(run("sgdisk -o -n1:2048:+160M -n2:0:0 %s >/dev/null", f->image), 0);
        assert_int_equal(run("mkfs.ext4 -q -F -d %s -E offset=%" PRIu64 " %s %" PRIu64
                             " >/dev/null 2>&1",
                             src, PART_OFFSET, f->image, p1_size / KiB),
                         0);
        (void)snprintf(spec, sizeof(spec), "%s?offset=%" PRIu64, f->image, PART_OFFSET);

        discover(f->image, &l, "GPT: ext4 (160 MiB, 2 files of 8 MiB), then zeroes (95 MiB)");
        assert_true(has_note(&l, "GPT partition table, 2 partitions", NULL));
        assert_true(has_note(&l, "partition 1 (ext4, 160.0 MiB", "(libext2fs)"));
        assert_true(has_note(&l, "partition 2 (95.0 MiB)", "unknown content, treated as used"));
        /* Protective MBR, GPT header (LBA 1) and entries (LBA 2-33); the backup entries and
         * header in the last 33 sectors. Between them and the partitions: used. */
        assert_kinds(&l, 0, 34 * 512, ONLY(FS_RANGE_METADATA), "primary GPT");
        assert_kinds(&l, p2_end, 33 * 512, ONLY(FS_RANGE_METADATA), "backup GPT");
        assert_kinds(&l, 34 * 512, PART_OFFSET - 34 * 512, ONLY(FS_RANGE_USED), "gap");
        assert_kinds(&l, p2_start, p2_end - p2_start, ONLY(FS_RANGE_USED), "partition 2");
        assert_kinds(&l, PART_OFFSET + 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        check_with_e2fsprogs(&l, spec, PART_OFFSET, &facts);
        file_bytes = check_files_ext4(&l, spec, PART_OFFSET, facts.block_size, files, 2);
        assert_int_equal(file_bytes, 2 * FILE_SIZE);
        check_ext4_totals(&l, PART_OFFSET, p1_size, &facts, file_bytes);
}

static void test_fslayout_mbr(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        const uint64_t p1_size = 100 * MiB;

        REQUIRE_TOOLS("sfdisk", "mkfs.ext4");
        make_image(f, 128 * MiB);
        assert_int_equal(run("echo '2048,204800,83' | sfdisk -q %s >/dev/null", f->image), 0);
        assert_int_equal(run("mkfs.ext4 -q -F -E offset=%" PRIu64 " %s %" PRIu64 " >/dev/null 2>&1",
                             PART_OFFSET, f->image, p1_size / KiB),
                         0);

        discover(f->image, &l, "MBR: ext4 (100 MiB), then nothing (27 MiB)");
        assert_true(has_note(&l, "MBR partition table, 1 partition:", NULL));
        assert_true(has_note(&l, "partition 1 (ext4, 100.0 MiB", "(libext2fs)"));
        assert_kinds(&l, 0, 512, ONLY(FS_RANGE_METADATA), "MBR");
        assert_kinds(&l, 512, PART_OFFSET - 512, ONLY(FS_RANGE_USED), "gap");
        assert_kinds(&l, PART_OFFSET + 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        assert_kinds(&l, PART_OFFSET + p1_size, 27 * MiB, ONLY(FS_RANGE_USED), "after");
        assert_true(fslayout_bytes_in(&l, PART_OFFSET, p1_size, FS_RANGE_FREE) > 80 * MiB);
}

/* ---- partition tables at odds with the file systems: free only if no one else claims it ---- */

typedef struct MbrEntry {
        uint8_t type; /* 0x83 Linux, 0x05 extended */
        uint64_t start, size; /* bytes: from the table's own sector (an EBR's first entry) */
} MbrEntry;

/* Writes a DOS partition table (an MBR, or an extended boot record) of up to four entries into
 * the sector at @at of the image, by hand: sfdisk refuses tables that overlap. */
static void write_dos_table(const char *path, uint64_t at, const MbrEntry *e, size_t n) {
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

static void mkfs_ext4_at(const Fixture *f, uint64_t offset, uint64_t size) {
        assert_int_equal(run("mkfs.ext4 -q -F -E offset=%" PRIu64 " %s %" PRIu64 " >/dev/null 2>&1",
                             offset, f->image, size / KiB),
                         0);
}

/* Issue 15: partition 2 overlaps partition 1 (a clean, nearly empty ext4) and runs on into
 * partition 3 (another), which is kept: it starts after partition 1 ends. Partition 2's bytes
 * are used, even where the file systems on either side call them free; the rest of their free
 * space stays free. */
static void test_fslayout_mbr_overlap(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        const MbrEntry table[] = {
                {0x83, 1 * MiB, 50 * MiB},   /* [1, 51) MiB */
                {0x83, 31 * MiB, 40 * MiB},  /* [31, 71) MiB: over the end of 1, start of 3 */
                {0x83, 61 * MiB, 66 * MiB},  /* [61, 127) MiB */
        };

        REQUIRE_TOOLS("mkfs.ext4");
        make_image(f, 128 * MiB);
        mkfs_ext4_at(f, table[0].start, table[0].size);
        mkfs_ext4_at(f, table[2].start, table[2].size);
        write_dos_table(f->image, 0, table, ELEMENTSOF(table));

        discover(f->image, &l, "MBR: ext4, a partition over both ends, ext4");
        assert_kinds(&l, 31 * MiB, 20 * MiB, ONLY(FS_RANGE_USED) | ONLY(FS_RANGE_METADATA),
                     "partition 2, in partition 1");
        assert_kinds(&l, 61 * MiB, 10 * MiB, ONLY(FS_RANGE_USED) | ONLY(FS_RANGE_METADATA),
                     "partition 2, in partition 3");
        assert_true(has_note(&l, "MBR partition table, 3 partitions", NULL));
        assert_true(has_note(&l, "partition 1 (ext4, 50.0 MiB", "(libext2fs)"));
        assert_true(has_note(&l, "partition 2: overlaps partition 1, treated as used", NULL));
        assert_true(has_note(&l, "partition 3 (ext4, 66.0 MiB", "(libext2fs)"));
        assert_true(fslayout_bytes_in(&l, 1 * MiB, 30 * MiB, FS_RANGE_FREE) > 20 * MiB);
        assert_true(fslayout_bytes_in(&l, 71 * MiB, 56 * MiB, FS_RANGE_FREE) > 50 * MiB);
}

/* An extended partition whose start lies in partition 1's free space: its boot record and the
 * slack before its logical partition are the table's, not free. A well-formed extended
 * partition keeps its logical file system's free space. */
static void test_fslayout_mbr_extended(void **state) {
        Fixture *f = *state;
        const MbrEntry broken[] = {{0x83, 1 * MiB, 100 * MiB}, {0x05, 81 * MiB, 46 * MiB}};
        const MbrEntry fine[] = {{0x83, 1 * MiB, 40 * MiB}, {0x05, 41 * MiB, 86 * MiB}};
        const MbrEntry logical[] = {{0x83, 1 * MiB, 80 * MiB}}; /* from its EBR */

        REQUIRE_TOOLS("mkfs.ext4");
        {
                _cleanup_(fslayout_free) FsLayout l = {};

                make_image(f, 128 * MiB);
                mkfs_ext4_at(f, broken[0].start, broken[0].size);
                write_dos_table(f->image, 0, broken, ELEMENTSOF(broken));
                write_dos_table(f->image, 81 * MiB, (MbrEntry[]){{0x83, 21 * MiB, 24 * MiB}}, 1);
                discover(f->image, &l, "MBR: ext4 (100 MiB), an extended partition over its end");
                assert_true(has_note(&l, "partition 1 (ext4, 100.0 MiB", "(libext2fs)"));
                assert_true(has_note(&l, "partition 5 (24.0 MiB)", "treated as used"));
                assert_kinds(&l, 81 * MiB, 20 * MiB, ONLY(FS_RANGE_USED) | ONLY(FS_RANGE_METADATA),
                             "extended partition's boot record and slack, in partition 1");
                assert_true(fslayout_bytes_in(&l, 1 * MiB, 80 * MiB, FS_RANGE_FREE) > 60 * MiB);
        }
        {
                _cleanup_(fslayout_free) FsLayout l = {};

                make_image(f, 128 * MiB);
                mkfs_ext4_at(f, fine[0].start, fine[0].size);
                mkfs_ext4_at(f, 42 * MiB, logical[0].size);
                write_dos_table(f->image, 0, fine, ELEMENTSOF(fine));
                write_dos_table(f->image, 41 * MiB, logical, ELEMENTSOF(logical));
                discover(f->image, &l, "MBR: ext4 (40 MiB), extended: logical ext4 (80 MiB)");
                assert_true(has_note(&l, "partition 5 (ext4, 80.0 MiB", "(libext2fs)"));
                assert_kinds(&l, 41 * MiB, 1 * MiB, ONLY(FS_RANGE_USED), "boot record, slack");
                assert_kinds(&l, 122 * MiB, 5 * MiB, ONLY(FS_RANGE_USED), "extended's tail");
                assert_true(fslayout_bytes_in(&l, 42 * MiB, 80 * MiB, FS_RANGE_FREE) > 60 * MiB);
        }
}

/* A file system larger than what holds it (an image cut short, a partition shrunk under it):
 * its bitmaps describe another device, nothing of it is called free. */
static void test_fslayout_ext_truncated(void **state) {
        Fixture *f = *state;
        const MbrEntry shrunk[] = {{0x83, 1 * MiB, 40 * MiB}, {0x83, 41 * MiB, 80 * MiB}};

        REQUIRE_TOOLS("mkfs.ext4");
        {
                _cleanup_(fslayout_free) FsLayout l = {};

                make_image(f, 64 * MiB);
                assert_int_equal(run("mkfs.ext4 -q -F %s >/dev/null 2>&1", f->image), 0);
                assert_int_equal(truncate(f->image, 48 * MiB), 0);
                discover(f->image, &l, "ext4 of 64 MiB in an image cut to 48 MiB");
                assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 0);
                assert_true(has_note(&l, "larger than its partition or device",
                                     "the rest treated as used"));
                assert_kinds(&l, 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        }
        {
                _cleanup_(fslayout_free) FsLayout l = {};

                make_image(f, 128 * MiB);
                mkfs_ext4_at(f, 1 * MiB, 100 * MiB);
                write_dos_table(f->image, 0, shrunk, ELEMENTSOF(shrunk));
                discover(f->image, &l, "MBR: ext4 of 100 MiB in a partition of 40 MiB");
                assert_int_equal(fslayout_bytes_in(&l, 1 * MiB, 40 * MiB, FS_RANGE_FREE), 0);
                assert_true(has_note(&l, "partition 1 (ext4, 40.0 MiB",
                                     "larger than its partition or device"));
        }
}

/* A journal to replay (or a file system mounted elsewhere) makes the bitmaps stale: nothing may
 * be called free, but where the metadata lies is still known. */
static void test_fslayout_needs_recovery(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};

        REQUIRE_TOOLS("mkfs.ext4", "debugfs");
        make_image(f, 64 * MiB);
        assert_int_equal(run("mkfs.ext4 -q -F %s >/dev/null 2>&1", f->image), 0);
        assert_int_equal(run("debugfs -w -R 'feature needs_recovery' %s >/dev/null 2>&1", f->image),
                         0);

        discover(f->image, &l, "ext4 whose journal needs recovery");
        assert_true(has_note(&l, "journal needs recovery", "the rest treated as used"));
        assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 0);
        assert_kinds(&l, 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        assert_true(fslayout_bytes(&l, FS_RANGE_METADATA) > 4 * MiB); /* journal, inode tables */
}

/* ---- loop devices and mounts (root) ---- */

/* Attaches the image with partition scanning. Kernels built without GPT support find no
 * partitions: then partx adds them from user space, as the kernel would have. */
static void attach(Fixture *f) {
        _cleanup_free_ char *out = output_of("losetup -f --show -P %s", f->image);
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

static uint64_t partition_bytes(const Fixture *f, const char *attribute) {
        _cleanup_free_ char *out =
                output_of("cat /sys/class/block/%sp1/%s", f->loop + 5, attribute);

        return strtoull(out, NULL, 10) * 512;
}

static void mount_p1(Fixture *f, const char *type) {
        char p1[96];

        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        assert_int_equal(mount(p1, f->mount_point, type, 0, NULL), 0);
        f->mounted = true;
}

static void unmount(Fixture *f) {
        assert_int_equal(umount(f->mount_point), 0);
        f->mounted = false;
}

typedef struct Extents {
        FsRange ranges[4096];
        size_t n;
        uint64_t bytes;
} Extents;

/* The physical extents of a file (FIEMAP, after a sync), as bytes of the whole device. */
static void add_file_extents(Extents *e, const char *path, uint64_t base) {
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

static void assert_extents_used(const FsLayout *l, const Extents *e) {
        for (size_t i = 0; i < e->n; i++)
                assert_kinds(l, e->ranges[i].offset, e->ranges[i].length, ONLY(FS_RANGE_USED),
                             "file extent");
}

/* Writes 8 MiB files up to @fill_percent of the free space, deletes two of every three, and
 * returns the extents of the rest. */
static void fill_and_thin(const Fixture *f, unsigned fill_percent, uint64_t base, Extents *ret) {
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

/* Bytes that one layout calls free and the other does not. */
static uint64_t free_disagreement(const FsLayout *a, const FsLayout *b) {
        uint64_t both = 0;

        for (size_t i = 0; i < a->n_ranges; i++)
                if (a->ranges[i].kind == FS_RANGE_FREE)
                        both += fslayout_bytes_in(b, a->ranges[i].offset, a->ranges[i].length,
                                                  FS_RANGE_FREE);
        return fslayout_bytes(a, FS_RANGE_FREE) + fslayout_bytes(b, FS_RANGE_FREE) - 2 * both;
}

static void print_figures(const char *method, const FsLayout *l, uint64_t base, uint64_t size) {
        print_message("  %-10s (partition 1):", method);
        for (FsRangeKind k = 0; k < _FS_RANGE_KIND_MAX; k++) {
                char human[FORMAT_BYTES_MAX];
                uint64_t bytes = fslayout_bytes_in(l, base, size, k);

                print_message(" %s %" PRIu64 " (%s)", fs_range_kind_to_string(k), bytes,
                              format_bytes(human, sizeof(human), bytes));
        }
        print_message("\n");
}

/*
 * The mounted disk as a sandboxed service may see it: in a mount namespace of its own, where a
 * tmpfs hides the mount point. GETFSMAP cannot be reached; libext2fs finds the journal needing
 * recovery: metadata, nothing free. Runs in a child (cmocka's asserts stay in the parent), whose
 * namespace, tmpfs included, goes away with it. Returns the child's exit status.
 */
static int discover_hidden(const Fixture *f) {
        int status;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                FsLayout l = {};
                char *error = NULL;
                uint64_t size;
                int fd;

                if (unshare(CLONE_NEWNS) < 0 ||
                    /* "none": the kernel ignores source and type for a propagation change,
                     * valgrind does not (it checks them as strings). */
                    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
                    mount("tmpfs", f->mount_point, "tmpfs", 0, NULL) < 0)
                        _exit(2);
                fd = open(f->loop, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || ioctl(fd, BLKGETSIZE64, &size) < 0 ||
                    fslayout_discover(fd, size, &l, &error) < 0)
                        _exit(3);
                print_layout("the same, from a mount namespace where the mount point is hidden",
                             &l);
                _exit(has_note(&l, "mounted on ", "hidden from here") &&
                                      has_note(&l, "journal needs recovery", NULL) &&
                                      fslayout_bytes(&l, FS_RANGE_FREE) == 0
                              ? 0
                              : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/*
 * 1 GiB disk, GPT, one ext4 partition filled to 90% with 8 MiB files, two thirds deleted. While
 * mounted, GETFSMAP maps it (the image file, read behind the kernel's back, and the disk seen
 * from where the mount point is hidden, are recognised as stale: nothing free); unmounted,
 * libext2fs does, and the two agree on what is free to within 1 MiB (blocks that ext4 may still
 * hold in preallocations: none are expected after syncfs and close, so this is slack, not a known
 * difference), and on metadata to within 1 MiB.
 */
static void test_fslayout_mounted_ext4(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout mounted = {}, unmounted = {}, stale = {};
        _cleanup_free_ Extents *files = calloc(1, sizeof(Extents));
        uint64_t base, size, disagreement;
        char p1[96];
        Ext4Facts facts;

        REQUIRE_ROOT();
        REQUIRE_TOOLS("sgdisk", "losetup", "partx", "mkfs.ext4", "dumpe2fs", "debugfs");
        assert_non_null(files);
        make_image(f, GiB);
        assert_int_equal(run("sgdisk -o -n1:2048:0 %s >/dev/null", f->image), 0);
        attach(f);
        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        base = partition_bytes(f, "start");
        size = partition_bytes(f, "size");
        assert_int_equal(base, PART_OFFSET);
        assert_int_equal(run("mkfs.ext4 -q -F %s >/dev/null 2>&1", p1), 0);
        mount_p1(f, "ext4");
        fill_and_thin(f, 90, base, files);

        discover(f->loop, &mounted, "mounted ext4, 1 GiB, filled to 90%, two thirds deleted");
        assert_true(has_note(&mounted, "partition 1 (ext4, 1023.0 MiB, mounted on ", "GETFSMAP"));
        assert_extents_used(&mounted, files);
        discover(f->image, &stale, "its image file, read while the disk is mounted");
        assert_true(has_note(&stale, "journal needs recovery", NULL));
        assert_int_equal(fslayout_bytes(&stale, FS_RANGE_FREE), 0);
        assert_int_equal(discover_hidden(f), 0);
        unmount(f);

        discover(f->loop, &unmounted, "the same, unmounted");
        assert_true(
                has_note(&unmounted, "partition 1 (ext4, 1023.0 MiB, unmounted)", "(libext2fs)"));
        assert_extents_used(&unmounted, files);
        check_with_e2fsprogs(&unmounted, p1, base, &facts);
        check_ext4_totals(&unmounted, base, size, &facts, files->bytes);

        print_figures("GETFSMAP", &mounted, base, size);
        print_figures("libext2fs", &unmounted, base, size);
        disagreement = free_disagreement(&mounted, &unmounted);
        print_message("  free bytes the two disagree on: %" PRIu64 "\n", disagreement);
        assert_true(disagreement <= MiB);
        assert_true(llabs((long long)fslayout_bytes(&mounted, FS_RANGE_METADATA) -
                          (long long)fslayout_bytes(&unmounted, FS_RANGE_METADATA)) <=
                    (long long)MiB);
}

static uint64_t xfs_db_number(const char *p1, const char *command, const char *key) {
        _cleanup_free_ char *out = output_of("xfs_db -r -c '%s' %s 2>/dev/null", command, p1);
        const char *p = strstr(out, key);

        if (!p)
                fail_msg("no \"%s\" in the output of xfs_db -c '%s'", key, command);
        return strtoull(p + strlen(key), NULL, 10);
}

/*
 * XFS on a GPT partition, with the reverse-mapping btree so that GETFSMAP names metadata
 * owners. Mounted: the files' extents are used, metadata (log, AG headers, btrees) and free space
 * are reported, and the free space agrees with xfs_db's count of the free-space btree after
 * unmounting to within 1 MiB (xfs_db counts single free blocks that the mounted file system
 * holds on its AG free lists). Unmounted: the metadata read from the device, nothing free, and
 * the note says why.
 */
static void test_fslayout_xfs(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout mounted = {}, unmounted = {};
        _cleanup_free_ Extents *files = calloc(1, sizeof(Extents));
        uint64_t base, size, free_db, free_mapped;
        char p1[96];

        REQUIRE_ROOT();
        REQUIRE_TOOLS("sgdisk", "losetup", "partx", "mkfs.xfs", "xfs_db");
        assert_non_null(files);
        make_image(f, 640 * MiB);
        assert_int_equal(run("sgdisk -o -n1:2048:0 %s >/dev/null", f->image), 0);
        attach(f);
        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        base = partition_bytes(f, "start");
        size = partition_bytes(f, "size");
        assert_int_equal(run("mkfs.xfs -q -f -m rmapbt=1 %s >/dev/null 2>&1", p1), 0);
        mount_p1(f, "xfs");
        fill_and_thin(f, 50, base, files);

        discover(f->loop, &mounted, "mounted XFS, 639 MiB, filled to 50%, two thirds deleted");
        assert_true(has_note(&mounted, "partition 1 (xfs, 639.0 MiB, mounted on ",
                             "(GETFSMAP, own reading for the AG metadata)"));
        assert_extents_used(&mounted, files);
        free_mapped = fslayout_bytes_in(&mounted, base, size, FS_RANGE_FREE);
        assert_true(fslayout_bytes_in(&mounted, base, size, FS_RANGE_METADATA) > 0);
        assert_true(fslayout_bytes_in(&mounted, base, size, FS_RANGE_USED) >= files->bytes);
        print_figures("GETFSMAP", &mounted, base, size);
        unmount(f);

        free_db = xfs_db_number(p1, "freesp -s", "total free blocks ") *
                  xfs_db_number(p1, "sb 0' -c 'p blocksize", "blocksize = ");
        print_message("  free: GETFSMAP %" PRIu64 ", xfs_db freesp %" PRIu64 "\n", free_mapped,
                      free_db);
        assert_true(llabs((long long)free_mapped - (long long)free_db) <= (long long)MiB);

        discover(f->loop, &unmounted, "the same, unmounted");
        assert_true(has_note(&unmounted, "partition 1 (xfs, 639.0 MiB, unmounted)",
                             "free space unknown"));
        assert_true(has_note(&unmounted, "partition 1 (xfs", "the rest treated as used"));
        assert_true(has_note(&unmounted, "partition 1 (xfs", "(own reading of the XFS metadata)"));
        assert_int_equal(fslayout_bytes(&unmounted, FS_RANGE_FREE), 0);
        assert_true(fslayout_bytes_in(&unmounted, base, size, FS_RANGE_METADATA) > 0);
        assert_extents_used(&unmounted, files);
}

/* ---- XFS's metadata, read from the device ---- */

/* xfs_db's names (blockget, blockuse) for the blocks the scanner must find: AG headers, free
 * list, btrees, inode chunks, log. Every other type (free1, free2, data, dir, btbmapd, ...) must
 * stay used. */
static const char *const xfs_metadata_types[] = {
        "sb",     "agf",      "agi",   "agfl",   "freelist", "btbno", "btcnt",
        "btrmap", "btrefcnt", "btino", "btfino", "inode",    "log",
};
#define XFS_OTHER UINT8_MAX

typedef struct XfsFacts {
        uint64_t block_size;
        uint64_t ag_blocks;
        uint64_t ag_count;
        uint64_t data_blocks;
        uint64_t agblk_log;
        uint64_t inode_size;
        uint64_t icount;
        uint8_t *types; /* per block: an index into xfs_metadata_types, or XFS_OTHER */
} XfsFacts;

static void xfs_facts_done(XfsFacts *x) {
        free(x->types);
}

static uint64_t xfs_sb_number(const char *spec, const char *field) {
        char command[64], key[64];

        (void)snprintf(command, sizeof(command), "sb 0' -c 'p %s", field);
        (void)snprintf(key, sizeof(key), "%s = ", field);
        return xfs_db_number(spec, command, key);
}

static uint8_t xfs_type_index(const char *type) {
        for (size_t i = 0; i < ELEMENTSOF(xfs_metadata_types); i++)
                if (streq_ptr(type, xfs_metadata_types[i]))
                        return (uint8_t)i;
        return XFS_OTHER;
}

/* The geometry, and the type of every block as xfs_db's blockget finds it, AG by AG. */
static void xfs_facts(const char *spec, XfsFacts *ret) {
        _cleanup_free_ char *commands = NULL, *out = NULL;
        XfsFacts x = {};
        size_t length = 0;
        FILE *f;
        char *line, *saveptr = NULL;
        uint64_t listed = 0;

        x.block_size = xfs_sb_number(spec, "blocksize");
        x.ag_blocks = xfs_sb_number(spec, "agblocks");
        x.ag_count = xfs_sb_number(spec, "agcount");
        x.data_blocks = xfs_sb_number(spec, "dblocks");
        x.agblk_log = xfs_sb_number(spec, "agblklog");
        x.inode_size = xfs_sb_number(spec, "inodesize");
        x.icount = xfs_sb_number(spec, "icount");
        f = open_memstream(&commands, &length);
        assert_non_null(f);
        for (uint64_t ag = 0; ag < x.ag_count; ag++)
                fprintf(f, " -c 'fsblock %" PRIu64 "' -c 'blockuse -c %" PRIu64 "'",
                        ag << x.agblk_log, MIN(x.ag_blocks, x.data_blocks - ag * x.ag_blocks));
        assert_int_equal(fclose(f), 0);
        out = output_of("xfs_db -r -c 'blockget -n' %s '%s' 2>/dev/null", commands, spec);
        x.types = calloc(x.data_blocks, 1);
        assert_non_null(x.types);
        memset(x.types, XFS_OTHER, x.data_blocks);
        for (line = strtok_r(out, "\n", &saveptr); line; line = strtok_r(NULL, "\n", &saveptr)) {
                unsigned long long ag, agbno;
                char type[32];

                if (sscanf(line, "block %*u (%llu/%llu) type %31s", &ag, &agbno, type) != 3)
                        continue;
                assert_true(ag * x.ag_blocks + agbno < x.data_blocks);
                x.types[ag * x.ag_blocks + agbno] = xfs_type_index(type);
                listed++;
        }
        assert_int_equal(listed, x.data_blocks);
        *ret = x;
}

/* The metadata of the XFS at @base must be exactly what xfs_db calls metadata: runs of blocks
 * of one class are checked at once. Returns the metadata blocks; inode blocks go to
 * *ret_inode_blocks. */
static uint64_t check_with_xfs_db(const FsLayout *l, uint64_t base, const XfsFacts *x,
                                  uint64_t *ret_inode_blocks) {
        uint64_t metadata = 0, inodes = 0, run = 0;
        uint8_t inode = xfs_type_index("inode");

        for (uint64_t b = 0; b < x->data_blocks; b++) {
                bool is_metadata = x->types[b] != XFS_OTHER;

                metadata += is_metadata;
                inodes += x->types[b] == inode;
                if (b + 1 < x->data_blocks && (x->types[b + 1] != XFS_OTHER) == is_metadata)
                        continue;
                assert_kinds(l, base + run * x->block_size, (b + 1 - run) * x->block_size,
                             ONLY(is_metadata ? FS_RANGE_METADATA : FS_RANGE_USED),
                             is_metadata ? "xfs_db metadata" : "xfs_db: not metadata");
                run = b + 1;
        }
        assert_int_equal(
                fslayout_bytes_in(l, base, x->data_blocks * x->block_size, FS_RANGE_METADATA),
                metadata * x->block_size);
        *ret_inode_blocks = inodes;
        return metadata;
}

/* A prototype file for mkfs.xfs -p: @n_small files of 4 KiB in one directory (enough for a
 * two-level inode btree with 1 KiB blocks), and two files of 8 MiB at the top. No root needed. */
static void make_xfs_proto(Fixture *f, char *proto, size_t size, int n_small) {
        char small[160], big[160];
        _cleanup_(fclosep) FILE *p = NULL;

        (void)snprintf(small, sizeof(small), "%s/small", f->dir);
        (void)snprintf(big, sizeof(big), "%s/big", f->dir);
        write_file(small, 4 * KiB);
        write_file(big, FILE_SIZE);
        (void)snprintf(proto, size, "%s/proto", f->dir);
        p = fopen(proto, "we");
        assert_non_null(p);
        fprintf(p, "/dev/null\n0 0\nd--755 0 0\nbig1 ---644 0 0 %s\nbig2 ---644 0 0 %s\n", big,
                big);
        fprintf(p, "many d--755 0 0\n");
        for (int i = 0; i < n_small; i++)
                fprintf(p, "f%d ---644 0 0 %s\n", i, small);
        fprintf(p, "$\n$\n");
}

/* An XFS made from @proto with @options on @path, starting at @base (the whole file, or a file
 * to copy there). */
static void mkfs_xfs(const char *path, const char *options, const char *proto) {
        assert_int_equal(run("mkfs.xfs -q -f %s -p %s %s >/dev/null 2>&1", options, proto, path),
                         0);
}

/*
 * The file system variants mkfs.xfs can make (default: CRC, finobt, sparse inodes, reflink, no
 * rmapbt; 1 KiB blocks; 4 KiB sectors; v4 without CRC; rmapbt; none of the optional btrees),
 * each on a whole image, with 4000 small files and two large ones. Discovery reads their
 * metadata, nothing is free, and every block is what xfs_db calls it: metadata where xfs_db sees
 * headers, free list, btree blocks, inodes or log, used everywhere else. The inode blocks hold
 * the superblock's count of inodes.
 */
static void test_fslayout_xfs_variants(void **state) {
        static const char *const variants[] = {
                "",         "-b size=1024", "-s size=4096",
                "-m crc=0", "-m rmapbt=1",  "-m finobt=0,reflink=0 -i sparse=0",
        };
        Fixture *f = *state;
        char proto[160];

        REQUIRE_TOOLS("mkfs.xfs", "xfs_db");
        make_xfs_proto(f, proto, sizeof(proto), 4000);
        for (size_t i = 0; i < ELEMENTSOF(variants); i++) {
                _cleanup_(fslayout_free) FsLayout l = {};
                _cleanup_(xfs_facts_done) XfsFacts x = {};
                uint64_t metadata, inode_blocks;

                make_image(f, 320 * MiB);
                mkfs_xfs(f->image, variants[i], proto);
                discover(f->image, &l, variants[i][0] ? variants[i] : "mkfs.xfs defaults");
                assert_true(has_note(&l, "no partition table: whole device (xfs, 320.0 MiB",
                                     "(own reading of the XFS metadata)"));
                assert_true(has_note(&l, "the rest treated as used: free space unknown", NULL));
                assert_false(has_note(&l, "did not validate", NULL));
                assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 0);
                xfs_facts(f->image, &x);
                metadata = check_with_xfs_db(&l, 0, &x, &inode_blocks);
                print_message("  metadata: %" PRIu64 " blocks of %" PRIu64 " (xfs_db agrees), "
                              "%" PRIu64 " of them inodes for %" PRIu64 " inodes\n",
                              metadata, x.block_size, inode_blocks, x.icount);
                assert_int_equal(inode_blocks * x.block_size, x.icount * x.inode_size);
        }
}

/* The AG btree roots of AG @ag, as xfs_db reads them from the AGF and AGI, are metadata. */
static void check_xfs_roots(const FsLayout *l, const char *spec, uint64_t base, const XfsFacts *x,
                            unsigned ag) {
        static const char *const roots[][2] = {
                {"agf", "bnoroot"}, {"agf", "cntroot"},   {"agf", "refcntroot"},
                {"agi", "root"},    {"agi", "free_root"},
        };

        for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                char command[64], key[64];
                uint64_t agbno;

                (void)snprintf(command, sizeof(command), "%s %u' -c 'p %s", roots[i][0], ag,
                               roots[i][1]);
                (void)snprintf(key, sizeof(key), "%s = ", roots[i][1]);
                agbno = xfs_db_number(spec, command, key);
                assert_true(agbno > 0 && agbno < x->ag_blocks);
                assert_kinds(l, base + (ag * x->ag_blocks + agbno) * x->block_size, x->block_size,
                             ONLY(FS_RANGE_METADATA), roots[i][1]);
        }
}

/*
 * A default XFS on a GPT partition of an image, made in a file of its own and copied in (no
 * root needed), smaller than its partition. The partition's note says what was read and why
 * the rest is used; the GPT's sectors stay metadata; every block agrees with xfs_db, the btree
 * roots that xfs_db reads from each AGF and AGI included; beyond the file system's end the
 * partition is used.
 */
static void test_fslayout_xfs_partitioned(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        _cleanup_(xfs_facts_done) XfsFacts x = {};
        const uint64_t size = 400 * MiB, fs_size = 320 * MiB;
        char proto[160], fs[160];
        uint64_t inode_blocks;

        REQUIRE_TOOLS("sgdisk", "mkfs.xfs", "xfs_db");
        make_xfs_proto(f, proto, sizeof(proto), 500);
        (void)snprintf(fs, sizeof(fs), "%s/fs.img", f->dir);
        assert_int_equal(run("truncate -s %" PRIu64 " %s", fs_size, fs), 0);
        mkfs_xfs(fs, "", proto);
        make_image(f, size);
        assert_int_equal(run("sgdisk -o -n1:2048:0 %s >/dev/null", f->image), 0);
        assert_int_equal(
                run("dd if=%s of=%s bs=1M seek=1 conv=notrunc,sparse status=none", fs, f->image),
                0);

        discover(f->image, &l, "GPT: a default XFS (320 MiB) in a partition of 399 MiB");
        assert_true(has_note(&l, "partition 1 (xfs, 399.0 MiB, image file): ",
                             "the rest treated as used: free space unknown"));
        assert_true(has_note(&l, "partition 1 (xfs", "(own reading of the XFS metadata)"));
        assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 0);
        assert_kinds(&l, 0, 34 * 512, ONLY(FS_RANGE_METADATA), "primary GPT");
        xfs_facts(fs, &x);
        (void)check_with_xfs_db(&l, PART_OFFSET, &x, &inode_blocks);
        assert_int_equal(inode_blocks * x.block_size, x.icount * x.inode_size);
        for (unsigned ag = 0; ag < x.ag_count; ag++)
                check_xfs_roots(&l, fs, PART_OFFSET, &x, ag);
        assert_kinds(&l, PART_OFFSET + fs_size, size - 34 * 512 - PART_OFFSET - fs_size,
                     ONLY(FS_RANGE_USED), "beyond the file system");
}

/* Runs the scanner and holds it to what any answer must be: metadata only, inside the region;
 * nothing at all and a reason if it failed. The layout of the ranges goes to @ret if not NULL. */
static int scan_xfs(const char *path, uint64_t offset, uint64_t size, uint64_t device_size,
                    FsLayout *ret) {
        _cleanup_free_ char *detail = NULL;
        FsRangeList list = {};
        int r;

        r = fslayout_scan_xfs(path, offset, size, &list, &detail);
        assert_true(r == FS_SCAN_METADATA_ONLY || r == FS_SCAN_FAILED);
        assert_non_null(detail);
        if (r == FS_SCAN_FAILED)
                assert_int_equal(list.n, 0);
        for (size_t i = 0; i < list.n; i++) {
                assert_int_equal(list.ranges[i].kind, FS_RANGE_METADATA);
                assert_true(list.ranges[i].offset >= offset && list.ranges[i].length > 0 &&
                            list.ranges[i].length <= offset + size - list.ranges[i].offset);
        }
        if (ret)
                assert_int_equal(fs_ranges_normalize(list.ranges, list.n, device_size, &ret->ranges,
                                                     &ret->n_ranges),
                                 0);
        fs_range_list_done(&list);
        return r;
}

/* From xfs_fs.h: copy-on-write staging extents, in use but not metadata. None are expected. */
#define XFS_FMR_OWN_COW FMR_OWNER('X', 7)

typedef struct Fsmap {
        FsRange ranges[65536];
        uint64_t owner[65536]; /* FMR_OWN_* for special owners, else 0 */
        size_t n;
        uint64_t mapping_bytes; /* extent-map and attribute-fork blocks, left out */
} Fsmap;

/* GETFSMAP's records, as bytes of the whole device: METADATA for the AG headers and free lists,
 * btrees, inodes, log and reference counts; FREE for free space; USED for file data; extent-map
 * and attribute-fork blocks, which the scanner does not look for, are left out. */
static void getfsmap(const char *mount_point, uint64_t base, Fsmap *ret) {
        _cleanup_close_ int fd = open(mount_point, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ struct fsmap_head *head = calloc(1, fsmap_sizeof(1024));
        bool done = false;

        assert_true(fd >= 0 && head);
        head->fmh_count = 1024;
        head->fmh_keys[1].fmr_device = UINT32_MAX;
        head->fmh_keys[1].fmr_flags = UINT32_MAX;
        head->fmh_keys[1].fmr_physical = UINT64_MAX;
        head->fmh_keys[1].fmr_owner = UINT64_MAX;
        head->fmh_keys[1].fmr_offset = UINT64_MAX;
        while (!done) {
                assert_int_equal(ioctl(fd, FS_IOC_GETFSMAP, head), 0);
                for (unsigned i = 0; i < head->fmh_entries; i++) {
                        const struct fsmap *rec = &head->fmh_recs[i];
                        bool special = rec->fmr_flags & FMR_OF_SPECIAL_OWNER;
                        FsRangeKind kind = FS_RANGE_USED;

                        if (!special && (rec->fmr_flags & (FMR_OF_EXTENT_MAP | FMR_OF_ATTR_FORK))) {
                                ret->mapping_bytes += rec->fmr_length;
                                continue;
                        }
                        if (special)
                                kind = rec->fmr_owner == FMR_OWN_FREE ? FS_RANGE_FREE
                                                                      : FS_RANGE_METADATA;
                        assert_true(ret->n < ELEMENTSOF(ret->ranges));
                        ret->owner[ret->n] = special ? rec->fmr_owner : 0;
                        ret->ranges[ret->n++] =
                                (FsRange){base + rec->fmr_physical, rec->fmr_length, kind};
                }
                done = head->fmh_entries == 0 ||
                       (head->fmh_recs[head->fmh_entries - 1].fmr_flags & FMR_OF_LAST);
                if (!done)
                        head->fmh_keys[0] = head->fmh_recs[head->fmh_entries - 1];
        }
}

/* Writes @n files of 4 KiB into @dir and removes every other one: many inodes, and holes in the
 * free space for the free-space btrees to track. */
static void make_small_files(const char *dir, int n) {
        assert_int_equal(mkdir(dir, 0755), 0);
        for (int i = 0; i < n; i++) {
                char path[256];

                (void)snprintf(path, sizeof(path), "%s/s%d", dir, i);
                write_file(path, 4 * KiB);
        }
        for (int i = 0; i < n; i += 2) {
                char path[256];

                (void)snprintf(path, sizeof(path), "%s/s%d", dir, i);
                assert_int_equal(unlink(path), 0);
        }
}

/*
 * GETFSMAP as the witness: an XFS with the reverse-mapping btree names the owner of every
 * block. 1 KiB blocks, thousands of small files (half deleted) and large ones (two thirds
 * deleted) give btrees of several levels. Remounted read-only, everything is on disk and
 * GETFSMAP's answer is final; then, unmounted, the scanner reads the partition of the loop
 * device: every byte GETFSMAP gives to the AG headers and free lists, btrees, inodes, log and
 * reference counts is metadata, no byte it calls free or file data is, and the two agree on the
 * total to the byte. GETFSMAP's extent-map and attribute-fork blocks are not looked for (no AG
 * btree leads to them): the discovery of the mounted file system has those in addition.
 */
static void test_fslayout_xfs_getfsmap(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout mounted = {}, scanned = {};
        _cleanup_free_ Extents *files = calloc(1, sizeof(Extents));
        _cleanup_free_ Fsmap *map = calloc(1, sizeof(Fsmap));
        uint64_t base, size, device_size, fsmap_metadata = 0, levels;
        char p1[96], dir[160];

        REQUIRE_ROOT();
        REQUIRE_TOOLS("sgdisk", "losetup", "partx", "mkfs.xfs", "xfs_db");
        assert_true(files && map);
        make_image(f, 640 * MiB);
        assert_int_equal(run("sgdisk -o -n1:2048:0 %s >/dev/null", f->image), 0);
        attach(f);
        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        base = partition_bytes(f, "start");
        size = partition_bytes(f, "size");
        device_size = 640 * MiB;
        assert_int_equal(run("mkfs.xfs -q -f -b size=1024 -m rmapbt=1 %s >/dev/null 2>&1", p1), 0);
        mount_p1(f, "xfs");
        (void)snprintf(dir, sizeof(dir), "%s/small", f->mount_point);
        make_small_files(dir, 6000);
        fill_and_thin(f, 40, base, files);
        assert_int_equal(mount(p1, f->mount_point, "xfs", MS_REMOUNT | MS_RDONLY, NULL), 0);
        getfsmap(f->mount_point, base, map);
        discover(f->loop, &mounted, "XFS with rmapbt, 1 KiB blocks, mounted read-only");
        assert_true(has_note(&mounted, "partition 1 (xfs", "(GETFSMAP, own reading for the AG"));
        unmount(f);

        levels = xfs_db_number(p1, "agf 0' -c 'p rmaplevel", "rmaplevel = ");
        print_message("  AG 0: rmap btree of %" PRIu64 " levels, inode btree of %" PRIu64
                      ", free-space btree of %" PRIu64 "\n",
                      levels, xfs_db_number(p1, "agi 0' -c 'p level", "level = "),
                      xfs_db_number(p1, "agf 0' -c 'p bnolevel", "bnolevel = "));
        assert_true(levels >= 2);
        assert_int_equal(scan_xfs(f->loop, base, size, device_size, &scanned),
                         FS_SCAN_METADATA_ONLY);
        for (size_t i = 0; i < map->n; i++) {
                const FsRange *r = &map->ranges[i];

                if (r->kind == FS_RANGE_METADATA) {
                        assert_true(map->owner[i] != XFS_FMR_OWN_COW);
                        assert_kinds(&scanned, r->offset, r->length, ONLY(FS_RANGE_METADATA),
                                     "GETFSMAP metadata");
                        fsmap_metadata += r->length;
                } else
                        assert_kinds(&scanned, r->offset, r->length, ONLY(FS_RANGE_USED),
                                     r->kind == FS_RANGE_FREE ? "GETFSMAP free" : "file data");
        }
        print_message("  metadata: GETFSMAP %" PRIu64 " bytes (and %" PRIu64
                      " of extent maps), read from the device %" PRIu64
                      " bytes; the mounted discovery had %" PRIu64 "\n",
                      fsmap_metadata, map->mapping_bytes,
                      fslayout_bytes(&scanned, FS_RANGE_METADATA),
                      fslayout_bytes_in(&mounted, base, size, FS_RANGE_METADATA));
        assert_int_equal(fslayout_bytes(&scanned, FS_RANGE_METADATA), fsmap_metadata);
        /* Mounted, GETFSMAP adds the extent-map blocks, which no AG btree leads to. */
        assert_int_equal(fslayout_bytes_in(&mounted, base, size, FS_RANGE_METADATA),
                         fsmap_metadata + map->mapping_bytes);
}

/* xorshift64: the same corruptions on every run. */
static uint64_t next_random(uint64_t *state) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        return *state;
}

static void pwrite_all(int fd, const void *buf, size_t len, uint64_t pos) {
        assert_int_equal(pwrite(fd, buf, len, (off_t)pos), (ssize_t)len);
}

static void pread_all(int fd, void *buf, size_t len, uint64_t pos) {
        assert_int_equal(pread(fd, buf, len, (off_t)pos), (ssize_t)len);
}

typedef struct Patch {
        size_t offset; /* in the superblock, or in sector @sector of AG 0 */
        unsigned sector;
        uint8_t width; /* bytes, big-endian */
        uint64_t value;
        int result; /* expected */
        const char *what;
} Patch;

static void put_be(uint8_t *p, uint8_t width, uint64_t value) {
        for (uint8_t i = 0; i < width; i++)
                p[i] = (uint8_t)(value >> (8 * (width - 1 - i)));
}

/* Superblock fields out of reach, AG headers with absurd values: FAILED, or partial metadata. */
static void check_patches(int fd, const char *image, uint64_t size, uint64_t full) {
        static const Patch patches[] = {
                {0, 0, 4, 0x58465343, FS_SCAN_FAILED, "magic"},
                {100, 0, 2, 0xb4a3, FS_SCAN_FAILED, "version 3"},
                {216, 0, 4, 0x80000000, FS_SCAN_FAILED, "unknown incompatible feature"},
                {126, 0, 1, 1, FS_SCAN_FAILED, "mkfs in progress"},
                {4, 0, 4, 0, FS_SCAN_FAILED, "block size 0"},
                {4, 0, 4, 1u << 30, FS_SCAN_FAILED, "block size 1 GiB"},
                {120, 0, 1, 0, FS_SCAN_FAILED, "blocklog 0"},
                {120, 0, 1, 31, FS_SCAN_FAILED, "blocklog 31"},
                {120, 0, 1, 255, FS_SCAN_FAILED, "blocklog 255"},
                {102, 0, 2, 0, FS_SCAN_FAILED, "sector size 0"},
                {104, 0, 2, 0xffff, FS_SCAN_FAILED, "inode size"},
                {88, 0, 4, 0, FS_SCAN_FAILED, "agcount 0"},
                {88, 0, 4, UINT32_MAX, FS_SCAN_FAILED, "agcount 2^32-1"},
                {84, 0, 4, 0, FS_SCAN_FAILED, "agblocks 0"},
                {84, 0, 4, 1, FS_SCAN_FAILED, "agblocks 1"},
                {84, 0, 4, UINT32_MAX, FS_SCAN_FAILED, "agblocks 2^32-1"},
                {124, 0, 1, 0, FS_SCAN_FAILED, "agblklog 0"},
                {8, 0, 8, 0, FS_SCAN_FAILED, "dblocks 0"},
                {8, 0, 8, UINT64_MAX, FS_SCAN_FAILED, "dblocks 2^64-1"},
                {48, 0, 8, UINT64_MAX, FS_SCAN_METADATA_ONLY, "logstart"},
                {96, 0, 4, UINT32_MAX, FS_SCAN_METADATA_ONLY, "logblocks"},
                {28, 1, 4, 200, FS_SCAN_METADATA_ONLY, "AGF: bno btree of 200 levels"},
                {16, 1, 4, UINT32_MAX, FS_SCAN_METADATA_ONLY, "AGF: bno root"},
                {48, 1, 4, UINT32_MAX, FS_SCAN_METADATA_ONLY, "AGF: flcount"},
                {24, 2, 4, UINT32_MAX, FS_SCAN_METADATA_ONLY, "AGI: inode btree levels"},
                {20, 2, 4, 1, FS_SCAN_METADATA_ONLY, "AGI: root in the AG header"},
        };

        for (size_t i = 0; i < ELEMENTSOF(patches); i++) {
                const Patch *p = &patches[i];
                uint8_t saved[8], field[8];
                uint64_t pos = p->sector * 512 + p->offset;
                _cleanup_(fslayout_free) FsLayout l = {};

                pread_all(fd, saved, p->width, pos);
                put_be(field, p->width, p->value);
                pwrite_all(fd, field, p->width, pos);
                if (scan_xfs(image, 0, size, size, &l) != p->result)
                        fail_msg("%s: not the expected result", p->what);
                assert_true(fslayout_bytes(&l, FS_RANGE_METADATA) <= full);
                pwrite_all(fd, saved, p->width, pos);
        }
}

/* Random bytes over random places of one kind: whole blocks or sectors, a few bytes, or one
 * 32-bit field set to a telling value. */
static void scramble(int fd, uint64_t pos, size_t len, uint64_t *seed) {
        static const uint32_t values[] = {0, 1, 2, 0x7fffffff, UINT32_MAX, 64, 81920};
        uint8_t buf[4096];
        uint64_t how = next_random(seed) % 3;

        assert_true(len <= sizeof(buf));
        pread_all(fd, buf, len, pos);
        if (how == 0)
                for (size_t i = 0; i < len; i++)
                        buf[i] = (uint8_t)next_random(seed);
        else if (how == 1)
                for (uint64_t n = next_random(seed) % 8 + 1; n > 0; n--)
                        buf[next_random(seed) % len] = (uint8_t)next_random(seed);
        else
                put_be(buf + next_random(seed) % (len / 4) * 4, 4,
                       values[next_random(seed) % ELEMENTSOF(values)]);
        pwrite_all(fd, buf, len, pos);
}

static uint32_t be32_of(const uint8_t *p) {
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A btree block at @pos that claims 65535 records: it is skipped, and nothing is read beyond
 * it (ASan, valgrind). */
static void check_numrecs(int fd, const char *image, uint64_t size, uint64_t pos, uint64_t full) {
        _cleanup_(fslayout_free) FsLayout l = {};
        uint8_t saved[2], numrecs[2] = {0xff, 0xff};

        pread_all(fd, saved, sizeof(saved), pos + 6);
        pwrite_all(fd, numrecs, sizeof(numrecs), pos + 6);
        assert_int_equal(scan_xfs(image, 0, size, size, &l), FS_SCAN_METADATA_ONLY);
        assert_true(fslayout_bytes(&l, FS_RANGE_METADATA) < full);
        pwrite_all(fd, saved, sizeof(saved), pos + 6);
}

typedef struct Target {
        uint64_t pos;
        size_t len;
} Target;

/*
 * A default XFS with 1 KiB blocks and a two-level inode btree, corrupted: superblock fields out
 * of range (FAILED, nothing added) and AG header fields out of range (partial metadata); an
 * inode btree root whose pointers all lead to the same child (read once, no blow-up); a node
 * and a leaf that claim more records than fit (skipped, nothing read beyond); then 300
 * rounds of random bytes over the AGF, AGI, AGFL sectors and btree blocks xfs_db found, and 300
 * over the superblock. Every answer stays inside the file system's region; under ASan and
 * valgrind, no read strays either.
 */
static void test_fslayout_xfs_corrupt(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout whole = {};
        _cleanup_(xfs_facts_done) XfsFacts x = {};
        _cleanup_free_ Target *targets = NULL;
        _cleanup_close_ int fd = -1;
        const uint64_t size = 320 * MiB;
        uint64_t full, seed = 0x9e3779b97f4a7c15u, root_pos = 0;
        size_t n_targets = 0;
        uint8_t saved[4096], sb[512];
        char proto[160];

        REQUIRE_TOOLS("mkfs.xfs", "xfs_db");
        make_xfs_proto(f, proto, sizeof(proto), 4000);
        make_image(f, size);
        mkfs_xfs(f->image, "-b size=1024", proto);
        xfs_facts(f->image, &x);
        fd = open(f->image, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(scan_xfs(f->image, 0, size, size, &whole), FS_SCAN_METADATA_ONLY);
        full = fslayout_bytes(&whole, FS_RANGE_METADATA);

        /* Out of the region: the file system does not fit, or there is no room for a superblock;
         * a path that is not there. */
        assert_int_equal(scan_xfs(f->image, 0, size - MiB, size, NULL), FS_SCAN_FAILED);
        assert_int_equal(scan_xfs(f->image, 0, 256, size, NULL), FS_SCAN_FAILED);
        assert_int_equal(scan_xfs(f->image, size - 4096, 4096, size, NULL), FS_SCAN_FAILED);
        assert_int_equal(scan_xfs("/nonexistent/xfs.img", 0, size, size, NULL), FS_SCAN_FAILED);
        check_patches(fd, f->image, size, full);

        /* The two-level inode btree's root, all pointers set to its first child. */
        for (unsigned ag = 0; ag < x.ag_count && root_pos == 0; ag++) {
                char command[32];

                (void)snprintf(command, sizeof(command), "agi %u' -c 'p level", ag);
                if (xfs_db_number(f->image, command, "level = ") < 2)
                        continue;
                (void)snprintf(command, sizeof(command), "agi %u' -c 'p root", ag);
                root_pos = (ag * x.ag_blocks + xfs_db_number(f->image, command, "root = ")) *
                           x.block_size;
        }
        assert_true(root_pos > 0);
        {
                _cleanup_(fslayout_free) FsLayout l = {};
                uint8_t block[1024];
                uint64_t child_pos;
                /* v5 short btree block: 56-byte header, then keys (4 bytes), then pointers. */
                size_t maxrecs = (1024 - 56) / 8, numrecs;

                pread_all(fd, block, sizeof(block), root_pos);
                memcpy(saved, block, sizeof(block));
                numrecs = (size_t)block[6] << 8 | block[7];
                assert_true(numrecs >= 2);
                for (size_t i = 1; i < numrecs; i++)
                        memcpy(block + 56 + maxrecs * 4 + i * 4, block + 56 + maxrecs * 4, 4);
                pwrite_all(fd, block, sizeof(block), root_pos);
                assert_int_equal(scan_xfs(f->image, 0, size, size, &l), FS_SCAN_METADATA_ONLY);
                print_message("  inode btree root whose %zu pointers lead to one child: %" PRIu64
                              " bytes of metadata, %" PRIu64 " before\n",
                              numrecs, fslayout_bytes(&l, FS_RANGE_METADATA), full);
                assert_true(fslayout_bytes(&l, FS_RANGE_METADATA) < full);
                pwrite_all(fd, saved, sizeof(block), root_pos);

                /* More records than fit, in the root (a node: pointers beyond the block) and
                 * in its first child (a leaf: records beyond the block): skipped. */
                child_pos = (root_pos / x.block_size / x.ag_blocks * x.ag_blocks +
                             (uint64_t)be32_of(block + 56 + maxrecs * 4)) *
                            x.block_size;
                check_numrecs(fd, f->image, size, root_pos, full);
                check_numrecs(fd, f->image, size, child_pos, full);
        }

        targets = calloc(x.data_blocks + 3 * x.ag_count, sizeof(Target));
        assert_non_null(targets);
        for (uint64_t ag = 0; ag < x.ag_count; ag++)
                for (unsigned sector = 1; sector <= 3; sector++)
                        targets[n_targets++] =
                                (Target){ag * x.ag_blocks * x.block_size + sector * 512, 512};
        for (uint64_t b = 0; b < x.data_blocks; b++) {
                const char *type = x.types[b] == XFS_OTHER ? "" : xfs_metadata_types[x.types[b]];

                if (strncmp(type, "bt", 2) == 0 || streq_ptr(type, "freelist"))
                        targets[n_targets++] = (Target){b * x.block_size, x.block_size};
        }
        print_message("  %zu AG header sectors and btree blocks to corrupt\n", n_targets);
        for (int round = 0; round < 300; round++) {
                Target chosen[3];
                uint8_t backup[3][4096];
                unsigned n = (unsigned)(next_random(&seed) % 3) + 1;

                for (unsigned i = 0; i < n; i++) {
                        chosen[i] = targets[next_random(&seed) % n_targets];
                        pread_all(fd, backup[i], chosen[i].len, chosen[i].pos);
                }
                for (unsigned i = 0; i < n; i++)
                        scramble(fd, chosen[i].pos, chosen[i].len, &seed);
                assert_int_equal(scan_xfs(f->image, 0, size, size, NULL), FS_SCAN_METADATA_ONLY);
                for (unsigned i = n; i-- > 0;)
                        pwrite_all(fd, backup[i], chosen[i].len, chosen[i].pos);
        }
        pread_all(fd, sb, sizeof(sb), 0);
        for (int round = 0; round < 300; round++) {
                scramble(fd, next_random(&seed) % 264 / 4 * 4, 4, &seed);
                (void)scan_xfs(f->image, 0, size, size, NULL);
                pwrite_all(fd, sb, sizeof(sb), 0);
        }
        assert_int_equal(scan_xfs(f->image, 0, size, size, NULL), FS_SCAN_METADATA_ONLY);
}

/* mkfs.ext4, sgdisk and the like live in sbin, which a user's PATH may lack. */
static void add_sbin_to_path(void) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s:/usr/sbin:/sbin", getenv("PATH") ?: "/usr/bin:/bin") >= 0)
                (void)setenv("PATH", path, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fslayout_normalize),
                cmocka_unit_test(test_fslayout_normalize_invalid_kind),
                cmocka_unit_test(test_fslayout_check),
                cmocka_unit_test_setup_teardown(test_fslayout_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_unpartitioned_ext4, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_ext_variants, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_gpt_two_partitions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_mbr, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_mbr_overlap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_mbr_extended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_ext_truncated, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_needs_recovery, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_mounted_ext4, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_xfs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_xfs_variants, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_xfs_partitioned, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_xfs_getfsmap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_xfs_corrupt, setup, teardown),
        };

        add_sbin_to_path();
        return cmocka_run_group_tests(tests, NULL, NULL);
}
