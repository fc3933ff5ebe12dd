/* SPDX-License-Identifier: MIT */
/*
 * The snapshot's block list (src/state/blocklist.c): runs both ways, every count checked when
 * read back, damage of any byte of the stream caught, and the file as the daemon reads it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

#include "blocklist.h"
#include "fixtures.h"
#include "util.h"

#define VOL "vol-0123456789abcdef0"
#define SNAP "snap-0abc"
#define HELPER_UID 4242

typedef struct Collect {
        uint64_t *bits; /* what the runs said */
        uint64_t n_blocks;
        uint64_t runs;
        uint64_t end;
} Collect;

static int collect(uint64_t first, uint64_t count, void *userdata) {
        Collect *c = userdata;

        assert_true(first >= c->end); /* in offset order */
        assert_true(first + count <= c->n_blocks);
        for (uint64_t i = first; i < first + count; i++)
                c->bits[i / 64] |= UINT64_C(1) << (i % 64);
        c->end = first + count;
        c->runs++;
        return 0;
}

static BlockListInfo info_for(uint64_t n_blocks) {
        BlockListInfo info = {.n_blocks = n_blocks};

        strcpy(info.volume_id, VOL);
        strcpy(info.snapshot_id, SNAP);
        return info;
}

/* Encodes @bits, decodes them again, and compares. */
static void round_trip(const uint64_t *bits, uint64_t n_blocks, uint64_t stored, uint64_t runs) {
        BlockListInfo info = info_for(n_blocks), back;
        Collect c = {.bits = calloc(DIV_ROUND_UP(n_blocks, 64), 8), .n_blocks = n_blocks};
        _cleanup_free_ char *data = NULL;
        size_t size;

        assert_non_null(c.bits);
        assert_int_equal(blocklist_encode(&info, bits, &data, &size), 0);
        assert_int_equal(info.n_stored, stored);
        assert_int_equal(info.n_runs, runs);
        assert_int_equal(blocklist_decode(data, size, &back, collect, &c), 0);
        assert_int_equal(back.n_blocks, n_blocks);
        assert_int_equal(back.n_stored, stored);
        assert_int_equal(back.n_runs, runs);
        assert_int_equal(c.runs, runs);
        assert_string_equal(back.snapshot_id, SNAP);
        assert_string_equal(back.volume_id, VOL);
        for (uint64_t i = 0; i < n_blocks; i++)
                assert_int_equal((c.bits[i / 64] >> (i % 64)) & 1, (bits[i / 64] >> (i % 64)) & 1);
        free(c.bits);
}

static void test_blocklist_round_trip(void **state) {
        uint64_t bits[40] = {0};
        uint64_t n = 40 * 64 - 13; /* not a whole word */

        round_trip(bits, n, 0, 0); /* nothing stored: a snapshot of an empty volume */
        memset(bits, 0xff, sizeof(bits));
        round_trip(bits, n, n, 1); /* bits past the end are not blocks */
        memset(bits, 0, sizeof(bits));
        bits[0] = 1;                         /* block 0 */
        bits[1] = UINT64_C(3) << 62;         /* 126-127, touching 128 */
        bits[2] = 1 | UINT64_C(1) << 63;     /* 128, 191 */
        bits[39] = UINT64_C(1) << (64 - 14); /* the last block */
        round_trip(bits, n, 1 + 3 + 1 + 1, 4);
        srand(7);
        for (size_t i = 0; i < 39; i++)
                bits[i] = (uint64_t)rand() << 33 ^ (uint64_t)rand(); /* the worst: scattered */
        {
                uint64_t stored = 0, runs = 0;

                bits[39] = 0;
                for (uint64_t i = 0; i < n; i++)
                        if ((bits[i / 64] >> (i % 64)) & 1) {
                                stored++;
                                runs += i == 0 || !((bits[(i - 1) / 64] >> ((i - 1) % 64)) & 1);
                        }
                round_trip(bits, n, stored, runs);
        }
}

/* The size EBS's largest volume takes: every other block stored (the worst), and one extent. */
static void test_blocklist_large(void **state) {
        /* Under a wrapper (valgrind: 75 s for this) 1 TiB goes through the same code; the
         * plain and sanitizer passes check the size limit at 64 TiB. */
        uint64_t n =
                getenv("EBS_HYDRATE_WRAPPER") ? BLOCKLIST_BLOCKS_MAX / 64 : BLOCKLIST_BLOCKS_MAX;
        uint64_t *bits = malloc(n / 8);
        BlockListInfo info = info_for(n), back;
        _cleanup_free_ char *data = NULL;
        size_t size;

        assert_non_null(bits);
        memset(bits, 0x55, n / 8);
        assert_int_equal(blocklist_encode(&info, bits, &data, &size), 0);
        assert_int_equal(info.n_runs, n / 2);
        assert_true(size < BLOCKLIST_FILE_MAX);
        print_message("every other block of %" PRIu64 " GiB: %zu bytes\n", n / 2048, size);
        assert_int_equal(blocklist_decode(data, size, &back, NULL, NULL), 0);
        assert_int_equal(back.n_stored, n / 2);
        free(data);
        data = NULL;
        memset(bits, 0, n / 8);
        memset(bits + 1000, 0xff, 8 * 1000);
        assert_int_equal(blocklist_encode(&info, bits, &data, &size), 0);
        assert_true(size < 200);
        free(bits);
}

static void test_blocklist_refused_to_encode(void **state) {
        uint64_t bits[1] = {1};
        BlockListInfo info = info_for(64);
        char *data = NULL;
        size_t size;

        strcpy(info.snapshot_id, "snap-0abc\nSTORED=0");
        assert_int_equal(blocklist_encode(&info, bits, &data, &size), -EINVAL);
        info = info_for(0);
        assert_int_equal(blocklist_encode(&info, bits, &data, &size), -EINVAL);
        info = info_for(BLOCKLIST_BLOCKS_MAX + 1);
        assert_int_equal(blocklist_encode(&info, bits, &data, &size), -EINVAL);
        info = info_for(64);
        strcpy(info.volume_id, "../etc");
        assert_int_equal(blocklist_encode(&info, bits, &data, &size), -EINVAL);
        assert_null(data);
}

/* A file made by hand: @header, then @numbers as LEB128 in one zlib stream. */
static size_t craft(char *buf, size_t size, const char *header, const uint64_t *numbers, size_t n) {
        uint8_t raw[256];
        size_t n_raw = 0, h = strlen(header);
        uLongf out = (uLongf)(size - h - 4);

        for (size_t i = 0; i < n; i++) {
                uint64_t v = numbers[i];

                do {
                        raw[n_raw++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
                        v >>= 7;
                } while (v);
        }
        memcpy(buf, header, h);
        assert_int_equal(compress2((Bytef *)buf + h, &out, raw, n_raw, 6), Z_OK);
        {
                uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)buf, (uInt)(h + out));

                for (unsigned i = 0; i < 4; i++)
                        buf[h + out + i] = (char)(crc >> (8 * i));
        }
        return h + out + 4;
}

#define HEADER(blocks, stored, runs)                                                         \
        "EBS_HYDRATE_BLOCKS=1\nVOLUME_ID=" VOL "\nSNAPSHOT_ID=" SNAP "\nBLOCK_SIZE=524288\n" \
        "BLOCKS=" #blocks "\nSTORED=" #stored "\nRUNS=" #runs "\n\n"

static int decode(const char *buf, size_t size) {
        BlockListInfo info;

        return blocklist_decode(buf, size, &info, NULL, NULL);
}

static void test_blocklist_refused_to_decode(void **state) {
        char buf[1024];
        size_t n;

        /* good: runs 2-3 and 6-9 */
        n = craft(buf, sizeof(buf), HEADER(10, 6, 2), (uint64_t[]){2, 1, 2, 3}, 4);
        assert_int_equal(decode(buf, n), 0);
        /* touching runs (they are one), overlapping is impossible to write: a gap of 0 */
        n = craft(buf, sizeof(buf), HEADER(10, 6, 2), (uint64_t[]){2, 1, 0, 3}, 4);
        assert_int_equal(decode(buf, n), -EBADMSG);
        /* past the end */
        n = craft(buf, sizeof(buf), HEADER(10, 6, 2), (uint64_t[]){2, 1, 5, 3}, 4);
        assert_int_equal(decode(buf, n), -EBADMSG);
        n = craft(buf, sizeof(buf), HEADER(10, 1, 1), (uint64_t[]){UINT64_MAX, 0}, 2);
        assert_int_equal(decode(buf, n), -EBADMSG);
        /* counts that do not add up: more stored, fewer runs, more runs than said */
        n = craft(buf, sizeof(buf), HEADER(10, 7, 2), (uint64_t[]){2, 1, 2, 3}, 4);
        assert_int_equal(decode(buf, n), -EBADMSG);
        n = craft(buf, sizeof(buf), HEADER(10, 6, 3), (uint64_t[]){2, 1, 2, 3}, 4);
        assert_int_equal(decode(buf, n), -EBADMSG);
        n = craft(buf, sizeof(buf), HEADER(10, 2, 1), (uint64_t[]){2, 1, 2, 3}, 4);
        assert_int_equal(decode(buf, n), -EBADMSG);
        /* half a run at the end */
        n = craft(buf, sizeof(buf), HEADER(10, 2, 1), (uint64_t[]){2, 1, 2}, 3);
        assert_int_equal(decode(buf, n), -EBADMSG);
        /* another version, another block size, a line missing, a line twice */
        n = craft(buf, sizeof(buf),
                  "EBS_HYDRATE_BLOCKS=2\nVOLUME_ID=" VOL "\nSNAPSHOT_ID=" SNAP
                  "\nBLOCK_SIZE=524288\nBLOCKS=10\nSTORED=2\nRUNS=1\n\n",
                  (uint64_t[]){2, 1}, 2);
        assert_int_equal(decode(buf, n), -EBADMSG);
        n = craft(buf, sizeof(buf),
                  "EBS_HYDRATE_BLOCKS=1\nVOLUME_ID=" VOL "\nSNAPSHOT_ID=" SNAP
                  "\nBLOCK_SIZE=512\nBLOCKS=10\nSTORED=2\nRUNS=1\n\n",
                  (uint64_t[]){2, 1}, 2);
        assert_int_equal(decode(buf, n), -EBADMSG);
        n = craft(buf, sizeof(buf),
                  "EBS_HYDRATE_BLOCKS=1\nVOLUME_ID=" VOL "\nBLOCK_SIZE=524288\nBLOCKS=10\n"
                  "STORED=2\nRUNS=1\n\n",
                  (uint64_t[]){2, 1}, 2);
        assert_int_equal(decode(buf, n), -EBADMSG);
        n = craft(buf, sizeof(buf),
                  "EBS_HYDRATE_BLOCKS=1\nVOLUME_ID=" VOL "\nSNAPSHOT_ID=" SNAP
                  "\nBLOCK_SIZE=524288\nBLOCKS=10\nSTORED=2\nSTORED=2\nRUNS=1\n\n",
                  (uint64_t[]){2, 1}, 2);
        assert_int_equal(decode(buf, n), -EBADMSG);
        /* a newer helper's line is ignored */
        n = craft(buf, sizeof(buf),
                  "EBS_HYDRATE_BLOCKS=1\nVOLUME_ID=" VOL "\nSNAPSHOT_ID=" SNAP
                  "\nBLOCK_SIZE=524288\nBLOCKS=10\nSTORED=2\nRUNS=1\nLISTED_AT=5\n\n",
                  (uint64_t[]){2, 1}, 2);
        assert_int_equal(decode(buf, n), 0);
        /* no end to the header; no stream */
        n = craft(buf, sizeof(buf), "EBS_HYDRATE_BLOCKS=1\nVOLUME_ID=" VOL, (uint64_t[]){0}, 0);
        assert_int_equal(decode(buf, n), -EBADMSG);
        n = craft(buf, sizeof(buf), HEADER(10, 0, 0), (uint64_t[]){0}, 0);
        assert_int_equal(decode(buf, n), 0); /* an empty stream is a stream: nothing stored */
        memcpy(buf, HEADER(10, 0, 0), strlen(HEADER(10, 0, 0)));
        n = strlen(HEADER(10, 0, 0));
        {
                uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)buf, (uInt)n);

                for (unsigned i = 0; i < 4; i++)
                        buf[n + i] = (char)(crc >> (8 * i));
        }
        assert_int_equal(decode(buf, n + 4), -EBADMSG);
}

/* Every cut, every damaged bit (the lines' too) and a byte after the end: refused. */
static void test_blocklist_damage(void **state) {
        uint64_t bits[8] = {0x0f0f00ff00000001, 0, 0xffff, 0x8000000000000000, 1, 0, 0, 3};
        BlockListInfo info = info_for(8 * 64);
        _cleanup_free_ char *data = NULL;
        size_t size;
        char *copy;

        assert_int_equal(blocklist_encode(&info, bits, &data, &size), 0);
        copy = malloc(size + 1);
        assert_non_null(copy);
        for (size_t cut = 0; cut < size; cut++)
                assert_int_equal(decode(data, cut), -EBADMSG);
        for (size_t i = 0; i < size; i++)
                for (unsigned b = 0; b < 8; b++) {
                        memcpy(copy, data, size);
                        copy[i] ^= (char)(1u << b);
                        assert_int_equal(decode(copy, size), -EBADMSG);
                }
        memcpy(copy, data, size);
        copy[size] = 0;
        assert_int_equal(decode(copy, size + 1), -EBADMSG);
        free(copy);
}

static void test_blocklist_file(void **state) {
        _cleanup_free_ char *dir = fixture_tmpdir("blocklist");
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint64_t bits[2] = {0xf0, 1};
        BlockListInfo info = info_for(100), back;
        Collect c = {.bits = (uint64_t[2]){0}, .n_blocks = 100};
        char path[512];

        assert_true(fd >= 0);
        assert_int_equal(blocklist_load(fd, VOL, HELPER_UID, &back, NULL, NULL), -ENOENT);
        assert_int_equal(blocklist_save(fd, &info, bits), 0);
        assert_int_equal(blocklist_load(fd, VOL, HELPER_UID, &back, collect, &c), 0);
        assert_int_equal(back.n_stored, 5);
        assert_int_equal(c.bits[0], 0xf0);
        assert_int_equal(c.bits[1], 1);
        snprintf(path, sizeof(path), "%s/" VOL ".blocks", dir);
        if (geteuid() == 0) {
                assert_int_equal(chown(path, HELPER_UID, HELPER_UID), 0);
                assert_int_equal(blocklist_load(fd, VOL, HELPER_UID, &back, NULL, NULL), 0);
                assert_int_equal(chown(path, HELPER_UID + 1, HELPER_UID + 1), 0);
                assert_int_equal(blocklist_load(fd, VOL, HELPER_UID, &back, NULL, NULL), -EPERM);
        }
        /* another volume's list under this volume's name: refused before any run is given */
        strcpy(info.volume_id, "vol-0ffffffffffffffff");
        assert_int_equal(blocklist_save(fd, &info, bits), 0);
        {
                char other[512];

                snprintf(other, sizeof(other), "%s/vol-0ffffffffffffffff.blocks", dir);
                assert_int_equal(rename(other, path), 0);
        }
        c.runs = 0;
        assert_int_equal(blocklist_load(fd, VOL, HELPER_UID, &back, collect, &c), -EBADMSG);
        assert_int_equal(c.runs, 0);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkfifo(path, 0644), 0);
        assert_int_equal(blocklist_load(fd, VOL, HELPER_UID, &back, NULL, NULL), -EBADMSG);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("/etc/passwd", path), 0);
        assert_int_equal(blocklist_load(fd, VOL, HELPER_UID, &back, NULL, NULL), -EBADMSG);
        assert_int_equal(blocklist_load(fd, "../etc", HELPER_UID, &back, NULL, NULL), -EINVAL);
        /* removed: the link, never what it points at; none left is no error */
        assert_int_equal(blocklist_remove(fd, VOL), 0);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(access("/etc/passwd", F_OK), 0);
        assert_int_equal(blocklist_remove(fd, VOL), 0);
        assert_int_equal(blocklist_remove(fd, "../etc"), -EINVAL);
        assert_int_equal(rm_rf(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_blocklist_round_trip),
                cmocka_unit_test(test_blocklist_large),
                cmocka_unit_test(test_blocklist_refused_to_encode),
                cmocka_unit_test(test_blocklist_refused_to_decode),
                cmocka_unit_test(test_blocklist_damage),
                cmocka_unit_test(test_blocklist_file),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
