/* SPDX-License-Identifier: MIT */
/*
 * State codec and persistence: round trip, every kind of damage (truncation, bit flips,
 * version, inconsistent fields), identity mismatch, bad-range merging, atomic save and
 * setting a damaged file aside.
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
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

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
        char cmd[128];

        state_free(f->s);
        free(f->buf);
        close(f->dir_fd);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
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
        assert_string_equal(why, "it belongs to another volume");
        assert_int_equal(state_matches(f->s, "vol-0123456789abcdef0", SIZE + 4096, 4096, &why),
                         -ESTALE);
        assert_string_equal(why, "the device size changed");
        assert_int_equal(state_matches(f->s, "vol-0123456789abcdef0", SIZE, 512, &why), -ESTALE);
        assert_string_equal(why, "the logical block size changed");
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

static void test_state_load_refuses_symlink(void **state) {
        Fixture *f = *state;
        HydrateState *d = NULL;
        char path[128];

        snprintf(path, sizeof(path), "%s/vol-12345678.state", f->dir);
        assert_int_equal(symlink("/etc/passwd", path), 0);
        assert_int_equal(state_load(f->dir_fd, "vol-12345678", &d), -EBADMSG);
        assert_null(d);
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_state_roundtrip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_complete_roundtrip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_state_false_complete, setup, teardown),
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
                cmocka_unit_test_setup_teardown(test_state_set_aside, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
