/* SPDX-License-Identifier: MIT */
/*
 * fslayout's read-only libext2fs I/O manager: blocks at the "offset=" option, byte counts, no
 * write of any kind, and the last blocks read kept (the oldest replaced first, none kept of a
 * read that failed, all forgotten when the block size changes), checked against a file whose
 * bytes change under the channel.
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
#include <unistd.h>
#include <cmocka.h>

#include "fslayout-readio.h"
#include "util.h"

#define BLOCK 1024
#define BLOCKS 32

typedef struct Fixture {
        char path[64];
        int fd;
        io_channel ch;
} Fixture;

/* Every byte of block @b of the file is @b + @generation. */
static void fill_block(const Fixture *f, unsigned b, unsigned generation) {
        uint8_t buf[BLOCK];

        memset(buf, (int)(b + generation), sizeof(buf));
        assert_int_equal(pwrite(f->fd, buf, sizeof(buf), (off_t)b * BLOCK), BLOCK);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        strcpy(f->path, "/tmp/test-fslayout-readio-XXXXXX");
        f->fd = mkstemp(f->path);
        assert_true(f->fd >= 0);
        for (unsigned b = 0; b < BLOCKS; b++)
                fill_block(f, b, 0);
        assert_int_equal(fslayout_read_io_manager->open(f->path, 0, &f->ch), 0);
        assert_int_equal(io_channel_set_blksize(f->ch, BLOCK), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        if (f->ch)
                (void)io_channel_close(f->ch);
        (void)close(f->fd);
        (void)unlink(f->path);
        free(f);
        return 0;
}

/* The first byte of block @b as the channel reads it. */
static int first_byte(Fixture *f, unsigned long long b) {
        uint8_t buf[BLOCK];

        assert_int_equal(io_channel_read_blk64(f->ch, b, 1, buf), 0);
        for (unsigned i = 1; i < BLOCK; i++)
                assert_int_equal(buf[i], buf[0]);
        return buf[0];
}

static void test_fslayout_readio_reads(void **state) {
        Fixture *f = *state;
        uint8_t buf[3 * BLOCK];

        assert_int_equal(io_channel_read_blk64(f->ch, 4, 3, buf), 0);
        assert_int_equal(buf[0], 4);
        assert_int_equal(buf[2 * BLOCK], 6);
        assert_int_equal(io_channel_read_blk64(f->ch, 5, -10, buf), 0); /* bytes */
        assert_int_equal(buf[9], 5);
        assert_int_equal(io_channel_set_options(f->ch, "offset=2048"), 0);
        assert_int_equal(first_byte(f, 0), 2);
        assert_int_equal(io_channel_read_blk64(f->ch, BLOCKS, 1, buf), EXT2_ET_SHORT_READ);
        assert_int_equal(io_channel_write_blk64(f->ch, 1, 1, buf), EROFS);
        assert_int_equal(io_channel_write_byte(f->ch, 0, 1, buf), EROFS);
        assert_int_equal(io_channel_flush(f->ch), 0);
        assert_int_equal(first_byte(f, 0), 2); /* nothing was written */
}

static void test_fslayout_readio_keeps_blocks(void **state) {
        Fixture *f = *state;

        assert_int_equal(first_byte(f, 3), 3);
        fill_block(f, 3, 100);
        assert_int_equal(first_byte(f, 3), 3); /* kept */
        for (unsigned b = 10; b < 16; b++)
                assert_int_equal(first_byte(f, b), b);
        assert_int_equal(first_byte(f, 3), 3); /* used again: now the newest of 7 */
        /* Eight new blocks: the first takes the free place, six replace 10-15, which are older,
         * the last replaces it. */
        for (unsigned b = 16; b < 24; b++)
                assert_int_equal(first_byte(f, b), b);
        assert_int_equal(first_byte(f, 3), 103);

        /* A read that fails keeps nothing in the place it took. */
        assert_int_equal(ftruncate(f->fd, 28 * BLOCK), 0);
        {
                uint8_t buf[BLOCK];

                assert_int_equal(io_channel_read_blk64(f->ch, 30, 1, buf), EXT2_ET_SHORT_READ);
        }
        assert_int_equal(ftruncate(f->fd, BLOCKS * BLOCK), 0); /* block 30: zeroes now */
        assert_int_equal(first_byte(f, 30), 0);

        /* Another block size: blocks are other bytes, nothing kept is believed. */
        fill_block(f, 3, 50);
        assert_int_equal(io_channel_set_blksize(f->ch, 2 * BLOCK), 0);
        assert_int_equal(io_channel_set_blksize(f->ch, BLOCK), 0);
        assert_int_equal(first_byte(f, 3), 53);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_fslayout_readio_reads, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fslayout_readio_keeps_blocks, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
