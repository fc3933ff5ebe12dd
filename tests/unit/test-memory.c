/* SPDX-License-Identifier: MIT */
/*
 * Memory that does not grow with the volume (issue 22, item 5), counted, not timed: the chunk
 * map, the plan, a checkpoint's save and load on a 64 TiB volume hold what their own accounting
 * says and allocate no more than a bound that does not depend on the size of the volume (every
 * malloc, calloc, realloc and posix_memalign of the project's code is wrapped and counted); and
 * mapping a 4 TiB ext4 by chunk fits under a data limit that libext2fs' whole block bitmap alone
 * (128 MiB) would break.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "chunkmap.h"
#include "fixtures-fslayout.h"
#include "fslayout.h"
#include "plan.h"
#include "state.h"
#include "util.h"

#define TiB (UINT64_C(1) << 40)
#define SLACK (64 * KiB) /* structures, names, directories of pages: not per chunk */

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
int __real_posix_memalign(void **p, size_t align, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
int __wrap_posix_memalign(void **p, size_t align, size_t size);

/* Bytes asked for since the last reset: an upper bound on what was held at once. */
static uint64_t allocated;

void *__wrap_malloc(size_t size) {
        allocated += size;
        return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size) {
        allocated += (uint64_t)n * size;
        return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size) {
        allocated += size;
        return __real_realloc(p, size);
}

int __wrap_posix_memalign(void **p, size_t align, size_t size) {
        allocated += size;
        return __real_posix_memalign(p, align, size);
}

/* A 64 TiB volume's state: 16 M chunks of 4 MiB, every third chunk done, two bad ranges. */
static HydrateState *state_64tib(void) {
        HydrateState *s = NULL;

        assert_int_equal(
                state_new(&s, "vol-0123456789abcdef0", 64 * TiB, 4096, chunk_size_for(64 * TiB)),
                0);
        assert_int_equal(s->map->n_chunks, CHUNK_COUNT_TARGET);
        for (uint64_t c = 0; c < s->map->n_chunks; c += 3)
                (void)chunkmap_mark_done(s->map, c, 1);
        assert_int_equal(state_add_bad(s, 4096, 4096), 0);
        assert_int_equal(state_add_bad(s, 60 * TiB, 8192), 0);
        return s;
}

static void test_memory_chunkmap_64tib(void **state) {
        uint64_t bitmap = CHUNK_COUNT_TARGET / 8;
        ChunkMap *m = NULL;
        size_t idle;

        allocated = 0;
        assert_int_equal(chunkmap_new(&m, 64 * TiB, chunk_size_for(64 * TiB)), 0);
        /* The done bitmap, and no busy bitmap of the same size beside it. */
        assert_true(allocated <= bitmap + SLACK);
        idle = chunkmap_memory(m);
        assert_true(idle >= bitmap && idle <= bitmap + SLACK);

        /* 256 reads of one chunk in flight, in one place: one page of the busy bitmap. */
        assert_int_equal(chunkmap_set_busy(m, 1000, 256, true), 0);
        assert_true(chunkmap_memory(m) <= idle + CHUNKMAP_BUSY_PAGE_WORDS * sizeof(uint64_t));
        assert_true(chunkmap_is_busy(m, 1255));
        (void)chunkmap_mark_done(m, 1000, 255);
        assert_int_equal(chunkmap_set_busy(m, 1255, 1, false), 0);
        assert_int_equal(chunkmap_memory(m), idle); /* the page went with its last busy chunk */
        chunkmap_free(m);
}

static void test_memory_plan_64tib(void **state) {
        FsRange ranges[] = {
                {0, 1 * MiB, FS_RANGE_METADATA},
                {1 * MiB, 10 * TiB, FS_RANGE_USED},
                {10 * TiB + 1 * MiB, 54 * TiB - 1 * MiB, FS_RANGE_FREE},
        };
        FsLayout layout = {.ranges = ranges, .n_ranges = ELEMENTSOF(ranges)};
        ByteRange hot[] = {{5 * TiB, 100 * MiB}};
        uint64_t stages = CHUNK_COUNT_TARGET / 4; /* two bits a chunk */
        ChunkMap *m = NULL;
        Plan *p = NULL;

        assert_int_equal(chunkmap_new(&m, 64 * TiB, chunk_size_for(64 * TiB)), 0);

        /* Nothing known: nothing per chunk at all. */
        allocated = 0;
        assert_int_equal(plan_new(&p, m, NULL, NULL, 0, false), 0);
        assert_true(allocated <= SLACK);
        assert_true(plan_memory(p) <= SLACK);
        p = plan_free(p);

        /* File-system aware: two bits a chunk, built once (no second plan, no byte per chunk). */
        allocated = 0;
        assert_int_equal(plan_new(&p, m, &layout, hot, ELEMENTSOF(hot), true), 0);
        assert_true(allocated <= stages + SLACK);
        assert_true(plan_memory(p) >= stages && plan_memory(p) <= stages + SLACK);
        assert_int_equal(plan_stage_of(p, 0), PLAN_STAGE_METADATA);
        assert_int_equal(plan_stage_of(p, 5 * TiB / m->chunk_size), PLAN_STAGE_HOT);
        assert_int_equal(plan_stage_of(p, 20 * TiB / m->chunk_size), PLAN_STAGE_FREE);
        plan_free(p);

        /* A device with nothing on it (one used range over all of it): no array at all. */
        {
                FsRange all = {0, 64 * TiB, FS_RANGE_USED};
                FsLayout blank = {.ranges = &all, .n_ranges = 1};

                allocated = 0;
                assert_int_equal(
                        fs_chunk_kinds_from_layout(&blank.chunks, &blank, m->size, m->chunk_size),
                        0);
                blank.n_ranges = 0;
                assert_true(fs_chunk_kinds_memory(blank.chunks) <= SLACK);
                assert_int_equal(plan_new(&p, m, &blank, NULL, 0, false), 0);
                assert_true(allocated <= SLACK);
                assert_false(p->fs_aware);
                p = plan_free(p);
        }

        /* The chunk kinds of a discovery by chunk are taken over, not copied. */
        assert_int_equal(
                fs_chunk_kinds_from_layout(&layout.chunks, &layout, m->size, m->chunk_size), 0);
        layout.n_ranges = 0;
        allocated = 0;
        assert_int_equal(plan_new(&p, m, &layout, NULL, 0, false), 0);
        assert_null(layout.chunks);
        assert_true(allocated <= SLACK);
        assert_int_equal(plan_stage_of(p, 20 * TiB / m->chunk_size), PLAN_STAGE_FREE);
        plan_free(p);
        chunkmap_free(m);
}

static char *scratch_dir(void) {
        char *dir = strdup("/tmp/test-memory-XXXXXX");

        assert_non_null(dir);
        assert_non_null(mkdtemp(dir));
        assert_int_equal(chmod(dir, 0700), 0);
        return dir;
}

static void remove_dir(char *dir) {
        assert_int_equal(run("rm -rf %s", dir), 0);
        free(dir);
}

/* A checkpoint save streams the bitmap: it allocates a buffer, not a copy of the map. */
static void test_memory_save_64tib(void **state) {
        HydrateState *s = state_64tib();
        char *dir = scratch_dir();
        int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        assert_true(dir_fd >= 0);
        allocated = 0;
        assert_int_equal(state_save(dir_fd, s), 0);
        print_message("save of a 64 TiB state: %llu bytes allocated\n",
                      (unsigned long long)allocated);
        assert_true(allocated <= STATE_IO_BUFFER + 4 * KiB);
        close(dir_fd);
        state_free(s);
        remove_dir(dir);
}

/* A load makes the chunk map and a buffer, not the file's image beside it; a summary makes no
 * map at all, and says what the map would. */
static void test_memory_load_64tib(void **state) {
        HydrateState *s = state_64tib(), *loaded = NULL;
        char *dir = scratch_dir();
        int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        StateSummary summary;
        size_t map_memory;

        assert_true(dir_fd >= 0);
        assert_int_equal(state_save(dir_fd, s), 0);
        allocated = 0;
        assert_int_equal(state_load(dir_fd, s->key, &loaded), 0);
        map_memory = chunkmap_memory(loaded->map);
        print_message("load of a 64 TiB state: %llu bytes allocated, the map holds %zu\n",
                      (unsigned long long)allocated, map_memory);
        assert_true(allocated <= map_memory + STATE_IO_BUFFER + SLACK);
        assert_int_equal(loaded->map->n_done, s->map->n_done);

        allocated = 0;
        assert_int_equal(state_load_summary(dir_fd, s->key, &summary), 0);
        assert_true(allocated <= STATE_IO_BUFFER + SLACK);
        assert_string_equal(summary.key, s->key);
        assert_true(summary.done_bytes == chunkmap_done_bytes(s->map));
        assert_false(summary.complete);
        assert_int_equal(summary.n_bad, 2);

        close(dir_fd);
        state_free(loaded);
        state_free(s);
        remove_dir(dir);
}

/* In a child: map @image by chunk of @chunk_size under a data limit of @limit bytes more than
 * it uses now; exit 0 if it was mapped with free space, 1 if not, 2 if it failed. */
static int map_under_limit(const char *image, uint64_t size, uint32_t chunk_size, uint64_t limit) {
        FsLayout l = {};
        struct rlimit rl;
        char *error = NULL;
        FILE *f;
        char line[256];
        unsigned long data_kib = 0;
        int fd, r;

        f = fopen("/proc/self/status", "re");
        while (f && fgets(line, sizeof(line), f))
                (void)sscanf(line, "VmData: %lu kB", &data_kib);
        if (f)
                fclose(f);
        rl.rlim_cur = rl.rlim_max = data_kib * 1024 + limit;
        if (data_kib == 0 || setrlimit(RLIMIT_DATA, &rl) < 0)
                return 2;
        fd = open(image, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fslayout_discover_chunks(fd, size, chunk_size, NULL, &l, &error) < 0) {
                free(error);
                return 2;
        }
        for (size_t i = 0; i < l.n_notes; i++)
                printf("  %s\n", l.notes[i]);
        fflush(stdout);
        r = fslayout_bytes(&l, FS_RANGE_FREE) > size / 2 ? 0 : 1;
        fslayout_free(&l);
        close(fd);
        return r;
}

static void test_memory_ext4_by_chunk(void **state) {
        Fixture *f = *state;
        uint64_t size = 4 * TiB, limit = 24 * MiB;
        uint32_t chunk_size = chunk_size_for(size);
        pid_t pid;
        int status;

        REQUIRE_TOOLS("mkfs.ext4");
        make_image(f, size);
        if (run("mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1,nodiscard %s "
                ">/dev/null 2>&1",
                f->image) != 0) {
                print_message("mkfs.ext4 cannot make a 4 TiB image here: skipped\n");
                skip();
        }
        fflush(stdout);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(map_under_limit(f->image, size, chunk_size, limit));
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        /* 1: mapped, but not its free space (libext2fs could not hold its bitmap) */
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* What the project's code allocates to map @path (@size bytes) by chunk, its notes printed under
 * @title; a note must hold @method. */
static uint64_t allocated_to_map(const char *path, uint64_t size, const char *method,
                                 const char *title) {
        FsLayout l = {};
        char *error = NULL;
        uint64_t bytes;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        allocated = 0;
        if (fslayout_discover_chunks(fd, size, chunk_size_for(size), NULL, &l, &error) < 0)
                fail_msg("fslayout_discover_chunks(%s): %s", path, strempty(error));
        bytes = allocated;
        print_layout(title, &l);
        print_message("  %llu bytes allocated\n", (unsigned long long)bytes);
        assert_true(has_note(&l, method, NULL));
        fslayout_free(&l);
        close(fd);
        return bytes;
}

/*
 * A mounted ext4 by chunk: what its own scan reads (the journal, and the metadata of each of
 * 8 K block groups: 1 KiB blocks, 1024 a group, no flex_bg, so a range of bitmaps per group)
 * goes into the chunk kinds as it comes, as when the same disk is read as an image file, not
 * into a list that grows with the file system. The one difference allowed is GETFSMAP's batch
 * of records (1024 of 64 bytes).
 */
static void test_memory_mounted_ext4_by_chunk(void **state) {
        Fixture *f = *state;
        uint64_t size = 8 * GiB, mounted, image;
        char p1[96];

        REQUIRE_ROOT();
        REQUIRE_TOOLS("sgdisk", "losetup", "partx", "mkfs.ext4");
        make_image(f, size);
        assert_int_equal(run("sgdisk -o -n1:2048:0 %s >/dev/null", f->image), 0);
        attach(f);
        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        assert_int_equal(run("mkfs.ext4 -q -F -b 1024 -g 1024 -O ^flex_bg,^resize_inode "
                             "-E lazy_itable_init=1,lazy_journal_init=1,nodiscard %s "
                             ">/dev/null 2>&1",
                             p1),
                         0);
        mount_p1(f, "ext4");

        mounted = allocated_to_map(f->loop, size, "GETFSMAP, libext2fs for the journal",
                                   "mounted ext4, 8 GiB, 8 K groups");
        image = allocated_to_map(f->image, size, "journal needs recovery",
                                 "its image file, read while the disk is mounted");
        assert_true(mounted <= image + 64 * KiB + SLACK);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_memory_chunkmap_64tib),
                cmocka_unit_test(test_memory_plan_64tib),
                cmocka_unit_test(test_memory_save_64tib),
                cmocka_unit_test(test_memory_load_64tib),
                FIXTURE_TEST(test_memory_ext4_by_chunk),
                FIXTURE_TEST(test_memory_mounted_ext4_by_chunk),
        };

        add_sbin_to_path();
        return cmocka_run_group_tests(tests, NULL, NULL);
}
