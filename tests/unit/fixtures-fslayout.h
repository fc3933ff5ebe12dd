/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the fslayout tests (test-fslayout-*.c): a scratch directory holding an image
 * and a mount point, torn down whatever the test left; discovery held to the layout's promise;
 * e2fsprogs as the witness of an ext4's blocks; DOS partition tables written by hand; loop
 * devices with mounted file systems (root). Include after <cmocka.h>.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fslayout.h"
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

/* cmocka setup and teardown: a Fixture over a new scratch directory; teardown unmounts,
 * detaches and removes whatever the test left. */
int fixture_setup(void **state);
int fixture_teardown(void **state);
#define FIXTURE_TEST(test) cmocka_unit_test_setup_teardown(test, fixture_setup, fixture_teardown)

/* Runs a shell command; returns its exit status, or -1. */
int run(const char *format, ...) _printf_(1, 2);
/* The standard output of a shell command that must succeed (freed by the caller). */
char *output_of(const char *format, ...) _printf_(1, 2);
char *free_string(char *s);
bool have(const char *tool);

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

/* mkfs.ext4, sgdisk and the like live in sbin, which a user's PATH may lack. */
void add_sbin_to_path(void);

/* @size bytes of 0x5a at @path, synced. */
void write_file(const char *path, uint64_t size);
/* An empty (sparse) image of @size bytes at f->image. */
void make_image(const Fixture *f, uint64_t size);
/* f->dir/src holding @n_files files f1, f2, ... of FILE_SIZE; its path goes to @dir. */
void make_source_dir(Fixture *f, char *dir, size_t size, int n_files);

/* ---- the layout ---- */

void print_layout(const char *title, const FsLayout *l);
/* Discovers @path and checks the layout's promise before anything else. */
void discover(const char *path, FsLayout *l, const char *title);
/* A note holds @a, and @b too unless it is NULL. */
bool has_note(const FsLayout *l, const char *a, const char *b);
/* Every byte of [offset, offset + length) is of one of @kinds (ONLY(kind) | ...). */
void assert_kinds(const FsLayout *l, uint64_t offset, uint64_t length, unsigned kinds,
                  const char *what);
void print_figures(const char *method, const FsLayout *l, uint64_t base, uint64_t size);

/* ---- e2fsprogs as the witness ---- */

typedef struct Witness {
        const FsLayout *layout;
        uint64_t base;       /* of the file system on the device */
        uint64_t block_size; /* of the file system */
        uint64_t run_tail;   /* blocks that follow each listed run: with bigalloc, dumpe2fs
                                lists free clusters by their first blocks */
} Witness;

typedef struct Ext4Facts {
        uint64_t block_size;
        uint64_t free_blocks;     /* from the superblock */
        uint64_t metadata_blocks; /* as dumpe2fs lists them, group by group, and the journal */
        uint64_t journal_blocks;
        uint64_t first_data_block;
        uint64_t cluster_blocks; /* 1 without bigalloc */
        /* Inode table blocks that hold no inode in use (dumpe2fs "Free inodes:"): used, not
         * metadata, past the group's unused-inode mark where it has one; before it, either. */
        uint64_t table_used_blocks;
        uint64_t table_either_blocks;
} Ext4Facts;

/* Every block of a list ("1 2 3 7", "4385-8192, 9000") is of one of @kinds. Returns the count. */
uint64_t expect_blocks(const Witness *w, const char *list, unsigned kinds, const char *what);
/* The layout of the ext4 at @spec ("image?offset=N" or a device), at @base of the device,
 * against dumpe2fs and debugfs: its metadata (of the inode tables, the blocks that hold an inode
 * in use), free blocks and journal. */
void check_with_e2fsprogs(const FsLayout *l, const char *spec, uint64_t base, Ext4Facts *ret);
/* The blocks of each file (debugfs) are used: not free, not metadata. Returns their bytes. */
uint64_t check_files_ext4(const FsLayout *l, const char *spec, uint64_t base, uint64_t block_size,
                          const char *const *names, size_t n);
/* The metadata and used bytes of the ext4 in [@base, @base + @size) against dumpe2fs and the
 * files' bytes. */
void check_ext4_totals(const FsLayout *l, uint64_t base, uint64_t size, const Ext4Facts *facts,
                       uint64_t file_bytes);

/* ---- partition tables ---- */

typedef struct MbrEntry {
        uint8_t type;         /* 0x83 Linux, 0x05 extended */
        uint64_t start, size; /* bytes: from the table's own sector (an EBR's first entry) */
} MbrEntry;

/* A DOS partition table (an MBR, or an extended boot record) of up to four entries in the
 * sector at @at of the image, written by hand: sfdisk refuses tables that overlap. */
void write_dos_table(const char *path, uint64_t at, const MbrEntry *e, size_t n);
/* An ext4 of @size bytes at @offset of f->image. */
void mkfs_ext4_at(const Fixture *f, uint64_t offset, uint64_t size);

/* ---- loop devices and mounts (root) ---- */

typedef struct Extents {
        FsRange ranges[4096];
        size_t n;
        uint64_t bytes;
} Extents;

/* Attaches f->image as f->loop with partition scanning; waits for its partition 1. */
void attach(Fixture *f);
/* The start or size (sysfs @attribute) of f->loop's partition 1, in bytes. */
uint64_t partition_bytes(const Fixture *f, const char *attribute);
void mount_p1(Fixture *f, const char *type);
void unmount(Fixture *f);
/* The physical extents of a file (FIEMAP, after a sync), as bytes of the whole device. */
void add_file_extents(Extents *e, const char *path, uint64_t base);
void assert_extents_used(const FsLayout *l, const Extents *e);
/* Writes FILE_SIZE files up to @fill_percent of the free space, deletes two of every three, and
 * returns the extents of the rest. */
void fill_and_thin(const Fixture *f, unsigned fill_percent, uint64_t base, Extents *ret);

/* ---- what a discovery tells ahead ---- */

/* What a discovery told as reads to come (FsLayoutHints): every range, and the most in one call.
 * Zero-initialised; free(v) after. */
typedef struct Told {
        ByteRange *v;
        size_t n, allocated;
        size_t calls, most;
} Told;

/* FsLayoutHints.ahead for a Told as the userdata. */
void told_collect(const ByteRange *ranges, size_t n, void *userdata);
/* Whether bytes [@offset, @offset + @length) lie in one range told. */
bool told(const Told *t, uint64_t offset, uint64_t length);
