/* SPDX-License-Identifier: MIT */
/*
 * The read-only libext2fs I/O manager (fslayout-readio.h). A channel is a descriptor opened
 * O_RDONLY, a byte offset and a block size; block n of the channel is at byte
 * offset + n * block size, and a negative count is a number of bytes (libext2fs' convention).
 * The last few single blocks read are kept, as unix_io keeps them: a file system opened with
 * EXT2_FLAG_SUPER_ONLY reads a group's descriptor block again for every accessor of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fslayout-readio.h"
#include "parse.h"
#include "util.h"

#define CACHE_BLOCKS 8u

typedef struct CachedBlock {
        unsigned long long block;
        uint64_t used; /* the channel's clock when last read or found: the oldest goes first */
        bool valid;
        void *data; /* a block of the channel's block size */
} CachedBlock;

typedef struct ReadChannel {
        int fd;
        uint64_t offset;
        CachedBlock cache[CACHE_BLOCKS];
        uint64_t clock;
} ReadChannel;

static errcode_t read_open(const char *name, int flags, io_channel *ret);
static errcode_t read_close(io_channel channel);

/* Forgets the blocks kept, their memory too: a block is another size, or at another place. */
static void cache_drop(ReadChannel *c) {
        for (unsigned i = 0; i < CACHE_BLOCKS; i++) {
                free(c->cache[i].data);
                c->cache[i] = (CachedBlock){};
        }
}

static errcode_t read_set_blksize(io_channel channel, int blksize) {
        if (blksize <= 0)
                return EXT2_ET_INVALID_ARGUMENT;
        if (blksize != channel->block_size)
                cache_drop(channel->private_data);
        channel->block_size = blksize;
        return 0;
}

static errcode_t read_bytes(const ReadChannel *c, uint64_t at, size_t size, void *data) {
        uint8_t *p = data;

        while (size > 0) {
                ssize_t n = pread(c->fd, p, size, (off_t)at);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno;
                if (n == 0)
                        return EXT2_ET_SHORT_READ;
                p += n;
                at += (uint64_t)n;
                size -= (size_t)n;
        }
        return 0;
}

/* One block, from the blocks kept or read into the place of the oldest of them. */
static errcode_t read_one_block(io_channel channel, unsigned long long block, void *data) {
        ReadChannel *c = channel->private_data;
        size_t size = (size_t)channel->block_size;
        CachedBlock *oldest = &c->cache[0];
        errcode_t e;

        for (unsigned i = 0; i < CACHE_BLOCKS; i++) {
                CachedBlock *b = &c->cache[i];

                if (b->valid && b->block == block) {
                        b->used = ++c->clock;
                        memcpy(data, b->data, size);
                        return 0;
                }
                if (!b->valid || b->used < oldest->used)
                        oldest = b;
        }
        if (!oldest->data) {
                oldest->data = malloc(size);
                if (!oldest->data) /* keep nothing, read all the same */
                        return read_bytes(c, c->offset + block * (uint64_t)size, size, data);
        }
        oldest->valid = false;
        e = read_bytes(c, c->offset + block * (uint64_t)size, size, oldest->data);
        if (e != 0)
                return e;
        *oldest = (CachedBlock){
                .block = block, .used = ++c->clock, .valid = true, .data = oldest->data};
        memcpy(data, oldest->data, size);
        return 0;
}

static errcode_t read_blk64(io_channel channel, unsigned long long block, int count, void *data) {
        const ReadChannel *c = channel->private_data;
        size_t size = count < 0 ? (size_t) - (int64_t)count : (size_t)count * channel->block_size;

        if (count == 1)
                return read_one_block(channel, block, data);
        return read_bytes(c, c->offset + block * (uint64_t)channel->block_size, size, data);
}

static errcode_t read_blk(io_channel channel, unsigned long block, int count, void *data) {
        return read_blk64(channel, block, count, data);
}

static errcode_t refuse_write(io_channel channel, unsigned long block, int count,
                              const void *data) {
        return EROFS;
}

static errcode_t refuse_write64(io_channel channel, unsigned long long block, int count,
                                const void *data) {
        return EROFS;
}

static errcode_t refuse_write_byte(io_channel channel, unsigned long offset, int count,
                                   const void *data) {
        return EROFS;
}

static errcode_t no_flush(io_channel channel) {
        return 0; /* nothing was written: nothing to flush */
}

/* "offset=BYTES", as unix_io takes it: where the file system starts. */
static errcode_t read_set_option(io_channel channel, const char *option, const char *arg) {
        ReadChannel *c = channel->private_data;
        uint64_t v;

        if (strcmp(option, "offset") != 0)
                return EXT2_ET_INVALID_ARGUMENT;
        if (!arg || parse_unsigned(arg, 0, INT64_MAX, &v) < 0)
                return EXT2_ET_INVALID_ARGUMENT;
        if (v != c->offset)
                cache_drop(c);
        c->offset = v;
        return 0;
}

static struct struct_io_manager manager = {
        .magic = EXT2_ET_MAGIC_IO_MANAGER,
        .name = "ebs-hydrate read-only I/O manager",
        .open = read_open,
        .close = read_close,
        .set_blksize = read_set_blksize,
        .read_blk = read_blk,
        .write_blk = refuse_write,
        .flush = no_flush,
        .write_byte = refuse_write_byte,
        .set_option = read_set_option,
        .read_blk64 = read_blk64,
        .write_blk64 = refuse_write64,
};

io_manager fslayout_read_io_manager = &manager;

static errcode_t read_open(const char *name, int flags, io_channel *ret) {
        io_channel channel;
        ReadChannel *c;

        if (!name)
                return EXT2_ET_BAD_DEVICE_NAME;
        if (flags & IO_FLAG_RW)
                return EROFS;
        channel = calloc(1, sizeof(*channel));
        c = calloc(1, sizeof(*c));
        if (channel)
                channel->name = strdup(name);
        if (!channel || !c || !channel->name) {
                if (channel)
                        free(channel->name);
                free(channel);
                free(c);
                return EXT2_ET_NO_MEMORY;
        }
        c->fd = open(name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (c->fd < 0) {
                errcode_t e = errno;

                free(channel->name);
                free(channel);
                free(c);
                return e;
        }
        channel->magic = EXT2_ET_MAGIC_IO_CHANNEL;
        channel->manager = fslayout_read_io_manager;
        channel->block_size = 1024;
        channel->refcount = 1;
        channel->private_data = c;
        *ret = channel;
        return 0;
}

static errcode_t read_close(io_channel channel) {
        ReadChannel *c = channel->private_data;

        if (--channel->refcount > 0)
                return 0;
        cache_drop(c);
        (void)close(c->fd);
        free(c);
        free(channel->name);
        free(channel);
        return 0;
}
