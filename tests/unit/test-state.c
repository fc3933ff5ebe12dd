/* SPDX-License-Identifier: MIT */
/*
 * State codec and persistence: round trip, every kind of damage (truncation, bit flips,
 * version, inconsistent fields), identity mismatch, bad-range merging, atomic save and
 * setting a damaged file aside; file modes, and links or FIFOs planted under the state's names.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "fixtures.h"
#include "state.h"
#include "util.h"

#define K UINT64_C(1024)
#define SIZE (UINT64_C(10) * 512 * K - 4096)

typedef struct Fixture {
        HydrateState *s;
        uint8_t *buf;
        size_t size;
        char dir[64];
        int dir_fd;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_int_equal(state_new(&f->s, "vol-0123456789abcdef0", SIZE, 4096, 512 * K), 0);
        chunkmap_mark_done(f->s->map, 1, 3);
        chunkmap_mark_done(f->s->map, 9, 1);
        assert_int_equal(state_add_bad(f->s, 5 * 512 * K, 512 * K), 0);
        f->s->created_usec = 1111;
        f->s->updated_usec = 2222;
        f->s->active_usec = 3333;
        f->s->bytes_read = 4444;
        assert_int_equal(state_encode(f->s, &f->buf, &f->size), 0);
        strcpy(f->dir, "/tmp/test-state-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        f->dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY);
        assert_true(f->dir_fd >= 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        state_free(f->s);
        free(f->buf);
        close(f->dir_fd);
        assert_int_equal(rm_rf(f->dir), 0);
        free(f);
        return 0;
}

/* Recompute the trailing CRC so a test can damage a field without tripping the checksum. */
static void reseal(uint8_t *buf, size_t size) {
        uint32_t crc = htole32((uint32_t)crc32(0L, buf, (uInt)(size - 4)));

        memcpy(buf + size - 4, &crc, 4);
}

static void test_state_roundtrip(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;

        assert_int_equal(state_decode(f->buf, f->size, &d), 0);
        assert_string_equal(d->key, "vol-0123456789abcdef0");
        assert_int_equal(d->size, SIZE);
        assert_int_equal(d->logical_block_size, 4096);
        assert_int_equal(d->map->chunk_size, 512 * K);
        assert_int_equal(d->map->n_done, 4);
        assert_true(chunkmap_is_done(d->map, 9));
        assert_false(chunkmap_is_done(d->map, 0));
        assert_false(d->complete);
        assert_int_equal(d->n_bad, 1);
        assert_int_equal(d->bad[0].offset, 5 * 512 * K);
        assert_int_equal(d->bad[0].length, 512 * K);
        assert_int_equal(d->created_usec, 1111);
        assert_int_equal(d->updated_usec, 2222);
        assert_int_equal(d->active_usec, 3333);
        assert_int_equal(d->bytes_read, 4444);
        state_free(d);
}

static void test_state_complete_roundtrip(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        uint8_t *buf;
        size_t size;

        chunkmap_mark_done(f->s->map, 0, 10);
        f->s->complete = true;
        assert_int_equal(state_encode(f->s, &buf, &size), 0);
        assert_int_equal(state_decode(buf, size, &d), 0);
        assert_true(d->complete);
        state_free(d);
        free(buf);
}

static void test_state_false_complete(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;

        /* "complete" with chunks missing is a lie the decoder refuses, checksum or not. */
        f->buf[12] = 1;
        reseal(f->buf, f->size);
        assert_int_equal(state_decode(f->buf, f->size, &d), -EBADMSG);
        assert_null(d);
}

/* Mode=used's mark (flag 2) survives a round trip; with "complete" (it would contradict it), or
 * with an unknown flag, the file is refused. */
static void test_state_used_complete(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        uint8_t *buf;
        size_t size;

        assert_false(f->s->used_complete);
        f->s->used_complete = true;
        assert_int_equal(state_encode(f->s, &buf, &size), 0);
        assert_int_equal(buf[12], 2);
        assert_int_equal(state_decode(buf, size, &d), 0);
        assert_true(d->used_complete);
        assert_false(d->complete);
        state_free(d);
        d = NULL;

        free(buf);
        chunkmap_mark_done(f->s->map, 0, 10);
        f->s->used_complete = false;
        f->s->complete = true;
        assert_int_equal(state_encode(f->s, &buf, &size), 0);
        assert_int_equal(state_decode(buf, size, &d), 0); /* complete alone: fine */
        state_free(d);
        d = NULL;
        buf[12] = 3;
        reseal(buf, size);
        assert_int_equal(state_decode(buf, size, &d), -EBADMSG);
        buf[12] = 1 | 4;
        reseal(buf, size);
        assert_int_equal(state_decode(buf, size, &d), -EBADMSG);
        assert_null(d);
        free(buf);
}

static void test_state_truncated(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;

        for (size_t n = 0; n < f->size; n++)
                assert_int_equal(state_decode(f->buf, n, &d), -EBADMSG);
        assert_null(d);
}

static void test_state_bit_flipped(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;

        /* Every single-bit flip anywhere in the file is caught. */
        for (size_t i = 0; i < f->size; i++)
                for (int b = 0; b < 8; b++) {
                        f->buf[i] ^= (uint8_t)(1u << b);
                        assert_int_equal(state_decode(f->buf, f->size, &d), -EBADMSG);
                        f->buf[i] ^= (uint8_t)(1u << b);
                }
        assert_null(d);
}

static void test_state_wrong_version(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;

        f->buf[8] = 2;
        reseal(f->buf, f->size);
        assert_int_equal(state_decode(f->buf, f->size, &d), -EPROTONOSUPPORT);
}

static void test_state_inconsistent_fields(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        const size_t n_done_at = 40, chunk_at = 28, n_bad_at = 84;

        f->buf[n_done_at] ^= 1; /* n_done disagrees with the bitmap */
        reseal(f->buf, f->size);
        assert_int_equal(state_decode(f->buf, f->size, &d), -EBADMSG);
        f->buf[n_done_at] ^= 1;

        f->buf[chunk_at + 2] = 0x10; /* chunk size 1 MiB no longer matches n_chunks */
        reseal(f->buf, f->size);
        assert_int_equal(state_decode(f->buf, f->size, &d), -EBADMSG);
        f->buf[chunk_at + 2] = 0x08;

        f->buf[n_bad_at] = 0xff; /* more bad ranges than bytes */
        reseal(f->buf, f->size);
        assert_int_equal(state_decode(f->buf, f->size, &d), -EBADMSG);
        f->buf[n_bad_at] = 1;

        reseal(f->buf, f->size);
        assert_int_equal(state_decode(f->buf, f->size, &d), 0);
        state_free(d);
}

static void test_state_identity_mismatch(void **state) {
        Fixture *f = *state;
        const char *why = NULL;

        assert_int_equal(state_matches(f->s, "vol-0123456789abcdef0", SIZE, 4096, &why), 0);
        assert_int_equal(state_matches(f->s, "vol-0123456789abcdef1", SIZE, 4096, &why), -ESTALE);
        assert_string_equal(why, "belongs to another volume");
        assert_int_equal(state_matches(f->s, "vol-0123456789abcdef0", SIZE + 4096, 4096, &why),
                         -ESTALE);
        assert_string_equal(why, "was written for another device size");
        assert_int_equal(state_matches(f->s, "vol-0123456789abcdef0", SIZE, 512, &why), -ESTALE);
        assert_string_equal(why, "was written for another logical block size");
}

static void test_state_bad_ranges_merge(void **state) {
        Fixture *f = *state;
        HydrateState *s = f->s; /* has [2.5 MiB, 3 MiB) */

        assert_int_equal(state_add_bad(s, 0, 4096), 0);
        assert_int_equal(state_add_bad(s, 8 * 512 * K, 512 * K), 0);
        assert_int_equal(s->n_bad, 3);
        /* Touching both neighbours of nothing in between: the middle one grows to meet them. */
        assert_int_equal(state_add_bad(s, 6 * 512 * K, 2 * 512 * K), 0);
        assert_int_equal(s->n_bad, 2);
        assert_int_equal(s->bad[1].offset, 5 * 512 * K);
        assert_int_equal(s->bad[1].length, 4 * 512 * K);
        assert_int_equal(state_add_bad(s, 4096, 4096), 0); /* adjacent to [0, 4096) */
        assert_int_equal(s->n_bad, 2);
        assert_int_equal(s->bad[0].length, 8192);
        assert_int_equal(state_clear_bad(s, 0, 512 * K), 0);
        assert_int_equal(s->n_bad, 1);
        assert_int_equal(s->bad[0].offset, 5 * 512 * K);
}

static void test_state_bad_ranges_clear_partly(void **state) {
        Fixture *f = *state;
        HydrateState *s = f->s; /* has [5, 6) in units of 512 KiB */
        const uint64_t C = 512 * K;

        /* Four adjacent bad chunks merge into one range; each later reads fine on its own. */
        assert_int_equal(state_add_bad(s, 6 * C, 3 * C), 0);
        assert_int_equal(s->n_bad, 1);
        assert_int_equal(state_clear_bad(s, 6 * C, C), 0); /* the middle: split */
        assert_int_equal(s->n_bad, 2);
        assert_int_equal(s->bad[0].offset, 5 * C);
        assert_int_equal(s->bad[0].length, C);
        assert_int_equal(s->bad[1].offset, 7 * C);
        assert_int_equal(s->bad[1].length, 2 * C);
        assert_int_equal(state_clear_bad(s, 5 * C, C), 0); /* all of the first */
        assert_int_equal(state_clear_bad(s, 8 * C, C), 0); /* the tail of the second */
        assert_int_equal(s->n_bad, 1);
        assert_int_equal(s->bad[0].offset, 7 * C);
        assert_int_equal(s->bad[0].length, C);
        assert_int_equal(state_clear_bad(s, 6 * C, 2 * C), 0); /* overlapping its head */
        assert_int_equal(s->n_bad, 0);
}

static void test_state_key_rules(void **state) {
        char long_key[STATE_KEY_MAX + 2];

        assert_true(state_key_valid("vol-0123456789abcdef0", 21));
        assert_true(state_key_valid("QEMU_NVMe_Ctrl_deadbeef", 23));
        assert_false(state_key_valid("", 0));
        assert_false(state_key_valid("has space", 9));
        assert_false(state_key_valid("a/b", 3));
        assert_false(state_key_valid(".hidden", 7));
        assert_false(state_key_valid("caf\xc3\xa9", 5));
        memset(long_key, 'k', sizeof(long_key));
        assert_true(state_key_valid(long_key, STATE_KEY_MAX));
        assert_false(state_key_valid(long_key, STATE_KEY_MAX + 1));
}

static void test_state_save_load(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        char path[128];
        struct stat st;

        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        snprintf(path, sizeof(path), "%s/vol-0123456789abcdef0.state", f->dir);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(st.st_size, f->size);
        assert_int_equal(state_load(f->dir_fd, "vol-0123456789abcdef0", &d), 0);
        assert_int_equal(d->map->n_done, 4);
        state_free(d);
        assert_int_equal(state_load(f->dir_fd, "vol-ffffffff", &d), -ENOENT);
        /* No temporary file is left behind. */
        snprintf(path, sizeof(path), "%s/.vol-0123456789abcdef0.state.tmp", f->dir);
        assert_int_equal(access(path, F_OK), -1);
}

/* A file outside the state's names that a planted symlink points at; it must never change. */
static void make_victim(const Fixture *f, char *path, size_t size) {
        int fd;

        snprintf(path, size, "%s/victim", f->dir);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        assert_true(fd >= 0);
        /* A valid state image: were the link followed, loading it would succeed. */
        assert_int_equal(write(fd, f->buf, f->size), (ssize_t)f->size);
        close(fd);
}

static void assert_victim_intact(const Fixture *f, const char *path) {
        uint8_t buf[4096];
        struct stat st;
        int fd;

        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644);
        assert_int_equal(st.st_size, f->size);
        fd = open(path, O_RDONLY);
        assert_true(fd >= 0);
        assert_true(f->size <= sizeof(buf));
        assert_int_equal(read(fd, buf, sizeof(buf)), (ssize_t)f->size);
        close(fd);
        assert_memory_equal(buf, f->buf, f->size);
}

static void plant_link(const Fixture *f, const char *target, const char *name) {
        char path[256];

        snprintf(path, sizeof(path), "%s/%s", f->dir, name);
        assert_int_equal(symlink(target, path), 0);
}

static void test_state_load_refuses_symlink(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        char victim[128];

        make_victim(f, victim, sizeof(victim));
        plant_link(f, victim, "vol-0123456789abcdef0.state");
        assert_int_equal(state_load(f->dir_fd, "vol-0123456789abcdef0", &d), -ELOOP);
        assert_null(d);
        assert_victim_intact(f, victim);
}

/* A FIFO in place of the state or the lock is refused at once, not waited on for a writer. */
static void test_state_refuses_fifo(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        char path[128];

        alarm(10); /* a hang is a failure, not a stuck test */
        snprintf(path, sizeof(path), "%s/vol-1.state", f->dir);
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(state_load(f->dir_fd, "vol-1", &d), -EBADMSG);
        assert_null(d);
        snprintf(path, sizeof(path), "%s/vol-1.lock", f->dir);
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(state_lock(f->dir_fd, "vol-1"), -ELOOP);
        alarm(0);
}

/*
 * Saving over planted links: the temporary name and the state's name are replaced as names
 * (unlink, O_EXCL create, rename), so the links' target never changes, and the new file is 0600
 * whatever the umask.
 */
static void test_state_save_replaces_symlinks(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        char victim[128], path[256];
        struct stat st;
        mode_t old_umask = umask(0);

        make_victim(f, victim, sizeof(victim));
        plant_link(f, victim, "vol-0123456789abcdef0.state");
        plant_link(f, victim, ".vol-0123456789abcdef0.state.tmp");
        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        umask(old_umask);
        assert_victim_intact(f, victim);
        snprintf(path, sizeof(path), "%s/vol-0123456789abcdef0.state", f->dir);
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 0777, 0600);
        snprintf(path, sizeof(path), "%s/.vol-0123456789abcdef0.state.tmp", f->dir);
        assert_int_equal(lstat(path, &st), -1);
        assert_int_equal(state_load(f->dir_fd, "vol-0123456789abcdef0", &d), 0);
        state_free(d);
}

/* The lock is created 0600 whatever the umask, and a planted link is neither followed nor
 * created through, even when it dangles. */
static void test_state_lock_files(void **state) {
        Fixture *f = *state;
        char victim[128], dangling[128], path[256];
        struct stat st;
        mode_t old_umask = umask(0);
        int fd;

        fd = state_lock(f->dir_fd, "vol-1");
        umask(old_umask);
        assert_true(fd >= 0);
        snprintf(path, sizeof(path), "%s/vol-1.lock", f->dir);
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(state_lock(f->dir_fd, "vol-1"), -EBUSY);
        close(fd);

        make_victim(f, victim, sizeof(victim));
        plant_link(f, victim, "vol-2.lock");
        assert_int_equal(state_lock(f->dir_fd, "vol-2"), -ELOOP);
        assert_victim_intact(f, victim);
        snprintf(dangling, sizeof(dangling), "%s/created-through-link", f->dir);
        plant_link(f, dangling, "vol-3.lock");
        assert_int_equal(state_lock(f->dir_fd, "vol-3"), -ELOOP);
        assert_int_equal(lstat(dangling, &st), -1);
}

static void test_state_set_aside(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        char *aside = NULL, path[256];

        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        assert_int_equal(state_set_aside(f->dir_fd, f->s->key, "corrupt", &aside), 0);
        assert_true(strncmp(aside, "vol-0123456789abcdef0.state.corrupt-", 36) == 0);
        snprintf(path, sizeof(path), "%s/%s", f->dir, aside);
        assert_int_equal(access(path, F_OK), 0);
        assert_int_equal(state_load(f->dir_fd, f->s->key, &d), -ENOENT);
        free(aside);
}

/* Two set-asides in one second (a device grown, then shrunk) keep both files. */
static void test_state_set_aside_never_collides(void **state) {
        Fixture *f = *state;
        char *first = NULL, *second = NULL, *third = NULL, path[256];

        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        assert_int_equal(state_set_aside(f->dir_fd, f->s->key, "mismatch", &first), 0);
        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        assert_int_equal(state_set_aside(f->dir_fd, f->s->key, "mismatch", &second), 0);
        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        assert_int_equal(state_set_aside(f->dir_fd, f->s->key, "mismatch", &third), 0);
        assert_string_not_equal(first, second);
        assert_string_not_equal(second, third);
        assert_string_not_equal(first, third);
        snprintf(path, sizeof(path), "%s/%s", f->dir, first);
        assert_int_equal(access(path, F_OK), 0);
        snprintf(path, sizeof(path), "%s/%s", f->dir, second);
        assert_int_equal(access(path, F_OK), 0);
        snprintf(path, sizeof(path), "%s/%s", f->dir, third);
        assert_int_equal(access(path, F_OK), 0);
        free(first);
        free(second);
        free(third);
}

/* A state file written by another user is never trusted, however valid it is. */
static void test_state_load_refuses_foreign_owner(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        char path[256];

        if (geteuid() != 0)
                skip(); /* only root can give a file away */
        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        snprintf(path, sizeof(path), "%s/vol-0123456789abcdef0.state", f->dir);
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_int_equal(state_load(f->dir_fd, f->s->key, &d), -EPERM);
        assert_null(d);
        assert_int_equal(chown(path, 0, 0), 0);
        assert_int_equal(state_load(f->dir_fd, f->s->key, &d), 0);
        state_free(d);
}

/* Neither a huge file nor a socket under the name is read (or opened): both are refused with an
 * error the hydrator sets aside, never one that fails every run. */
static void test_state_load_refuses_huge_and_socket(void **state) {
        Fixture *f = *state;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        HydrateState *d = NULL;
        char path[256];
        int fd, sock;

        snprintf(path, sizeof(path), "%s/vol-huge.state", f->dir);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)(UINT64_C(10) << 30)), 0);
        close(fd);
        assert_int_equal(state_load(f->dir_fd, "vol-huge", &d), -EFBIG);

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/vol-sock.state", f->dir);
        sock = socket(AF_UNIX, SOCK_STREAM, 0);
        assert_true(sock >= 0);
        assert_int_equal(bind(sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(state_load(f->dir_fd, "vol-sock", &d), -EBADMSG);
        close(sock);
        assert_null(d);
}

/*
 * fsync is wrapped (tests/CMakeLists.txt): once a test sets fsync_mocked, each call takes its
 * result from will_return(__wrap_fsync, 0 or -errno), so an unexpected extra call (a retry)
 * fails the test. The file of the call that failed stays open in fsync_failed_fd, which keeps
 * its inode number from being reused.
 */
static bool fsync_mocked;
static int fsync_failed_fd = -1;
static unsigned fsync_after_failure; /* successful calls on that same inode since */

int __real_fsync(int fd);
int __wrap_fsync(int fd);

static bool same_file(int a, int b) {
        struct stat sa, sb;

        assert_int_equal(fstat(a, &sa), 0);
        assert_int_equal(fstat(b, &sb), 0);
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int __wrap_fsync(int fd) {
        int r;

        if (!fsync_mocked)
                return __real_fsync(fd);
        r = mock_type(int);
        if (r < 0) {
                if (fsync_failed_fd < 0)
                        fsync_failed_fd = dup(fd);
                errno = -r;
                return -1;
        }
        if (fsync_failed_fd >= 0 && same_file(fd, fsync_failed_fd))
                fsync_after_failure++;
        return __real_fsync(fd);
}

static int teardown_fsync(void **state) {
        fsync_mocked = false;
        fsync_after_failure = 0;
        if (fsync_failed_fd >= 0)
                close(fsync_failed_fd);
        fsync_failed_fd = -1;
        return teardown(state);
}

static void assert_file_is(const Fixture *f, const char *name, const uint8_t *buf, size_t size) {
        uint8_t *have = NULL;
        size_t n = 0;
        char path[256];
        FILE *fp;

        snprintf(path, sizeof(path), "%s/%s", f->dir, name);
        fp = fopen(path, "re");
        assert_non_null(fp);
        have = malloc(size + 1);
        n = fread(have, 1, size + 1, fp);
        fclose(fp);
        assert_int_equal(n, size);
        assert_memory_equal(have, buf, size);
        free(have);
}

/* The state directory holds exactly the state file: no temporary file left behind. */
static void assert_only_state_file(const Fixture *f) {
        DIR *d = opendir(f->dir);
        struct dirent *e;
        unsigned n = 0;

        assert_non_null(d);
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                        assert_string_equal(e->d_name, "vol-0123456789abcdef0.state");
                        n++;
                }
        closedir(d);
        assert_int_equal(n, 1);
}

/* A save whose fsync fails reports -EIO, leaves the good state in place and no temporary file,
 * and never retries the fsync; the next save writes and syncs a new file. */
static void test_state_save_fsync_eio(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        struct stat before, after, failed;

        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        assert_int_equal(fstatat(f->dir_fd, "vol-0123456789abcdef0.state", &before, 0), 0);
        chunkmap_mark_done(f->s->map, 6, 2);

        fsync_mocked = true;
        will_return(__wrap_fsync, -EIO); /* exactly one call: no retry, no directory fsync */
        assert_int_equal(state_save(f->dir_fd, f->s), -EIO);
        assert_true(fsync_failed_fd >= 0);
        assert_int_equal(fstat(fsync_failed_fd, &failed), 0);
        assert_int_equal(failed.st_nlink, 0); /* the temporary file is gone, not renamed */
        assert_file_is(f, "vol-0123456789abcdef0.state", f->buf, f->size);
        assert_int_equal(fstatat(f->dir_fd, "vol-0123456789abcdef0.state", &after, 0), 0);
        assert_int_equal(after.st_ino, before.st_ino);
        assert_only_state_file(f);

        /* The next save: a new file, synced, then the directory; the failed file is never
         * synced again. */
        will_return_count(__wrap_fsync, 0, 2);
        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        assert_int_equal(fsync_after_failure, 0);
        assert_int_equal(fstatat(f->dir_fd, "vol-0123456789abcdef0.state", &after, 0), 0);
        assert_int_not_equal(after.st_ino, failed.st_ino);
        fsync_mocked = false;
        assert_only_state_file(f);
        assert_int_equal(state_load(f->dir_fd, f->s->key, &d), 0);
        assert_int_equal(d->map->n_done, 6);
        state_free(d);
}

/* The directory fsync after the rename fails: the save still reports -EIO. */
static void test_state_save_dir_fsync_eio(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;

        fsync_mocked = true;
        will_return(__wrap_fsync, 0);
        will_return(__wrap_fsync, -EIO);
        assert_int_equal(state_save(f->dir_fd, f->s), -EIO);
        assert_only_state_file(f);
        will_return_count(__wrap_fsync, 0, 2);
        assert_int_equal(state_save(f->dir_fd, f->s), 0);
        fsync_mocked = false;
        assert_int_equal(state_load(f->dir_fd, f->s->key, &d), 0);
        state_free(d);
}

/*
 * State files written before the codec streamed (the fuzz corpus, made by the encoder of the
 * time): each still loads, as a whole and as a summary that agrees with it, and encodes again to
 * the very same bytes. The format did not change with the codec.
 */
static void test_state_files_of_before_still_load(void **state) {
        static const char *const names[] = {"complete.state", "fresh.state", "odd-map.state",
                                            "partial.state", "serial-key.state"};
        const char *src = getenv("EBS_HYDRATE_SOURCE_DIR");

        assert_non_null(src);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *path = NULL, *image = NULL;
                _cleanup_free_ uint8_t *again = NULL;
                _cleanup_(state_freep) HydrateState *s = NULL;
                size_t size = 0, again_size = 0;
                StateSummary summary;
                FILE *file;

                assert_true(asprintf(&path, "%s/tests/fuzz/corpus/state/%s", src, names[i]) > 0);
                file = fopen(path, "re");
                assert_non_null(file);
                image = malloc(STATE_FILE_MAX);
                assert_non_null(image);
                size = fread(image, 1, STATE_FILE_MAX, file);
                fclose(file);
                if (state_decode((uint8_t *)image, size, &s) != 0)
                        fail_msg("%s does not load", names[i]);
                assert_int_equal(state_summary((uint8_t *)image, size, &summary), 0);
                assert_string_equal(summary.key, s->key);
                assert_true(summary.done_bytes == chunkmap_done_bytes(s->map));
                assert_int_equal(summary.complete, s->complete);
                assert_int_equal(summary.used_complete, s->used_complete);
                assert_int_equal(summary.n_bad, s->n_bad);
                assert_int_equal(state_encode(s, &again, &again_size), 0);
                assert_int_equal(again_size, size);
                assert_memory_equal(again, image, size);
        }
}

/* Only "<valid key>.state" names a state file; its key is the name without the suffix. */
static void test_state_key_from_file_name(void **state) {
        static const char *const not_state[] = {
                ".state",      "vol-1.lock",    ".vol-1.state.tmp", "vol-1.state.mismatch-20260101",
                "vol 1.state", ".hidden.state", "vol-1.stat",       "vol-1.statex",
        };
        char key[STATE_KEY_MAX + 1], longest[STATE_KEY_MAX + sizeof(STATE_SUFFIX) + 1];

        assert_true(state_key_from_file_name("vol-1.state", strlen("vol-1.state"), key));
        assert_string_equal(key, "vol-1");
        /* @len, not the NUL, ends the name (an inotify event's name is padded) */
        assert_true(state_key_from_file_name("vol-2.state\0\0", strlen("vol-2.state"), key));
        assert_string_equal(key, "vol-2");
        for (size_t i = 0; i < ELEMENTSOF(not_state); i++)
                assert_false(state_key_from_file_name(not_state[i], strlen(not_state[i]), key));
        memset(longest, 'k', STATE_KEY_MAX);
        strcpy(longest + STATE_KEY_MAX, STATE_SUFFIX);
        assert_true(state_key_from_file_name(longest, strlen(longest), key));
        assert_int_equal(strlen(key), STATE_KEY_MAX);
        memset(longest, 'k', STATE_KEY_MAX + 1); /* one too long */
        strcpy(longest + STATE_KEY_MAX + 1, STATE_SUFFIX);
        assert_false(state_key_from_file_name(longest, strlen(longest), key));
}

/* state_dir_next(): every state file's key once, and nothing else the directory holds. */
static void test_state_dir_next(void **state) {
        Fixture *f = *state;
        static const char *const names[] = {"vol-a.state", "vol-b.state", "vol-a.lock",
                                            ".vol-a.state.tmp", "notes"};
        char key[STATE_KEY_MAX + 1];
        bool a = false, b = false;
        DIR *d;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                int fd = openat(f->dir_fd, names[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

                assert_true(fd >= 0);
                close(fd);
        }
        d = opendir(f->dir);
        assert_non_null(d);
        while ((r = state_dir_next(d, key)) > 0) {
                if (strcmp(key, "vol-a") == 0 && !a)
                        a = true;
                else if (strcmp(key, "vol-b") == 0 && !b)
                        b = true;
                else
                        fail_msg("unexpected key '%s'", key);
        }
        assert_int_equal(r, 0);
        assert_true(a && b);
        closedir(d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_state_roundtrip, setup, teardown),
                cmocka_unit_test(test_state_files_of_before_still_load),
                cmocka_unit_test_setup_teardown(test_state_complete_roundtrip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_false_complete, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_used_complete, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_truncated, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_bit_flipped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_wrong_version, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_inconsistent_fields, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_identity_mismatch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_bad_ranges_merge, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_bad_ranges_clear_partly, setup,
                                                teardown),
                cmocka_unit_test(test_state_key_rules),
                cmocka_unit_test_setup_teardown(test_state_save_load, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_load_refuses_symlink, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_refuses_fifo, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_save_replaces_symlinks, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_lock_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_set_aside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_set_aside_never_collides, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_state_load_refuses_foreign_owner, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_state_load_refuses_huge_and_socket, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_state_save_fsync_eio, setup, teardown_fsync),
                cmocka_unit_test_setup_teardown(test_state_save_dir_fsync_eio, setup,
                                                teardown_fsync),
                cmocka_unit_test(test_state_key_from_file_name),
                cmocka_unit_test_setup_teardown(test_state_dir_next, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
