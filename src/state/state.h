/* SPDX-License-Identifier: MIT */
/*
 * The per-volume checkpoint: identity, chunk map, unreadable ranges and completion, in a
 * versioned, CRC-protected little-endian file written atomically (temp file, fsync, rename,
 * fsync of the directory). The codec (state-codec.c) streams: it does no I/O of its own, and
 * holds at most STATE_IO_BUFFER bytes of an image; load/save are the only parts that do I/O.
 */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "byte-range.h"
#include "chunkmap.h"
#include "util.h"

#define STATE_MAGIC "EBSHSTAT"
#define STATE_VERSION 1u
#define STATE_KEY_MAX \
        200 /* leaves room for ".<key>.state.tmp" and set-aside suffixes in NAME_MAX */
#define STATE_SUFFIX ".state"
#define STATE_FILE_MAX (UINT64_C(64) << 20)
#define STATE_IO_BUFFER (UINT32_C(64) << 10) /* what the codec holds of a file at once */
#define STATE_BAD_RANGES_MAX 65536u

typedef struct HydrateState {
        char key[STATE_KEY_MAX + 1]; /* volume id or other stable key; names the file */
        uint64_t size;               /* device size in bytes */
        uint32_t logical_block_size;
        bool complete;         /* every chunk was read */
        bool used_complete;    /* not complete, but the last run, Mode=used, finished: it read
                                  every chunk the file system used; only free space is cold */
        uint64_t created_usec; /* CLOCK_REALTIME */
        uint64_t updated_usec; /* CLOCK_REALTIME */
        uint64_t active_usec;  /* time spent hydrating, summed over runs */
        uint64_t bytes_read;   /* bytes read, summed over runs (re-reads included) */
        ChunkMap *map;
        ByteRange *bad; /* unreadable ranges, sorted, merged */
        size_t n_bad;
        size_t n_bad_allocated; /* capacity of @bad */
} HydrateState;

/* state_key_valid() - 1-STATE_KEY_MAX printable ASCII characters, no space or '/', no leading '.'.
 */
bool state_key_valid(const char *key, size_t len);

/* state_new() - fresh state for a device with no checkpoint yet. */
int state_new(HydrateState **ret, const char *key, uint64_t size, uint32_t logical_block_size,
              uint32_t chunk_size);
HydrateState *state_free(HydrateState *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(HydrateState *, state_free)

/* state_add_bad() - record [offset, offset + length) as unreadable, merging with neighbours. */
int state_add_bad(HydrateState *s, uint64_t offset, uint64_t length);
/* state_clear_bad() - forget unreadable ranges covered by [offset, offset + length) (read fine
 * now). */
int state_clear_bad(HydrateState *s, uint64_t offset, uint64_t length);

/* Where the encoder puts bytes (0 or -errno), and where the decoder takes them from (how many,
 * at most @n; 0 at the end; or -errno). */
typedef int (*state_write_t)(void *userdata, const void *buf, size_t n);
typedef ssize_t (*state_read_t)(void *userdata, void *buf, size_t n);

/*
 * state_encode_to() - encode @s in pieces of at most STATE_IO_BUFFER bytes, handed to @write in
 * order; the codec allocates only that buffer, whatever the size of the chunk map. 0, -ENOMEM,
 * or @write's error (then the output is incomplete).
 */
int state_encode_to(const HydrateState *s, state_write_t write, void *userdata);
/* state_encode_fd() - state_encode_to() into the file open as @fd. */
int state_encode_fd(const HydrateState *s, int fd);
/* state_encoded_size() - the bytes state_encode_to() writes for @s. */
size_t state_encoded_size(const HydrateState *s);
/* state_encode() - the whole image in one buffer (malloc'ed). */
int state_encode(const HydrateState *s, uint8_t **ret_buf, size_t *ret_size);

/*
 * state_decode_from() - parse and fully validate a state file image of @size bytes, read from
 * @read in pieces (the bitmap straight into the chunk map: besides the state itself, the codec
 * allocates one buffer of STATE_IO_BUFFER bytes). An image whose header does not add up to @size
 * is refused before the chunk map is made; one that ends early or goes on past @size too.
 * Returns 0; -EBADMSG (bad magic, checksum, or inconsistent fields); -EPROTONOSUPPORT (another
 * version, whole by its checksum); -ENOMEM; or @read's error.
 */
int state_decode_from(state_read_t read, void *userdata, uint64_t size, HydrateState **ret);
/* What a state file says in brief, without its chunk map (none is made): for a look at a state
 * that costs STATE_IO_BUFFER bytes, whatever the size of the volume. */
typedef struct StateSummary {
        char key[STATE_KEY_MAX + 1];
        uint64_t size; /* of the device */
        bool complete;
        bool used_complete;
        uint64_t done_bytes; /* chunkmap_done_bytes() of its chunk map */
        size_t n_bad;
} StateSummary;

/* state_summary_from() - state_decode_from(), every check the same, into a summary. */
int state_summary_from(state_read_t read, void *userdata, uint64_t size, StateSummary *ret);
int state_summary(const uint8_t *buf, size_t size, StateSummary *ret);
int state_summary_fd(int fd, uint64_t size, StateSummary *ret);

/* state_decode() - state_decode_from() on an image in memory. */
int state_decode(const uint8_t *buf, size_t size, HydrateState **ret);
/* state_decode_fd() - state_decode_from() on the file open as @fd, from its offset, @size bytes. */
int state_decode_fd(int fd, uint64_t size, HydrateState **ret);

/*
 * state_matches() - does @s describe this device? 0 if so, else -ESTALE with a static
 * description of the first difference in *ret_why.
 */
int state_matches(const HydrateState *s, const char *key, uint64_t size,
                  uint32_t logical_block_size, const char **ret_why);

/* state_file_name() - "<key>.state" (malloc'ed), or NULL on ENOMEM. Keys never contain '/'. */
char *state_file_name(const char *key);
/*
 * state_key_from_file_name() - the key of the state file named by the @len bytes at @name
 * ("<key>.state" with a valid key) into @ret_key; false for everything else a state directory
 * holds (locks, temporary files, files set aside as <key>.state.<why>-<time>).
 */
bool state_key_from_file_name(const char *name, size_t len, char ret_key[STATE_KEY_MAX + 1]);
/*
 * state_dir_next() - the key of the next state file in the directory @d is reading, into
 * @ret_key: 1, 0 at the end, or -errno if reading the directory failed.
 */
int state_dir_next(DIR *d, char ret_key[STATE_KEY_MAX + 1]);

/*
 * state_lock() - take the per-volume lock <dir>/<key>.lock (flock, exclusive, not waiting), so
 * two processes never checkpoint the same volume over each other. Returns the descriptor that
 * holds the lock; -EBUSY if another process holds it; -ELOOP if <key>.lock is a symbolic link
 * or not a regular file (never followed, never created through).
 */
int state_lock(int dir_fd, const char *key);

/*
 * state_dir_verdict() - whether a state directory with @st may be trusted by a process whose
 * effective uid is @euid: 0; -ENOTDIR; -EPERM if another uid owns it (whoever owns it can plant a
 * checkpoint that says "complete"); -EACCES if it is open to group or others. Pure.
 */
int state_dir_verdict(const struct stat *st, uid_t euid);
/*
 * state_file_verdict() - whether what lstat says of <key>.state may be opened and read as a
 * state file of @owner (the state directory's owner): 0, or the error state_load() returns for
 * it (-ELOOP, -EBADMSG, -EPERM, -EFBIG). Pure.
 */
int state_file_verdict(const struct stat *st, uid_t owner);

/*
 * state_load() - read and decode <dir>/<key>.state; -ENOENT if there is none; -ELOOP if it is a
 * symbolic link (never followed); -EBADMSG if it is not a regular file (never opened unless it
 * is a FIFO, and then without blocking) or fails to decode; -EPERM if it is owned by another
 * uid than the directory; -EFBIG if it is larger than STATE_FILE_MAX (never read).
 */
int state_load(int dir_fd, const char *key, HydrateState **ret);
/* state_load_summary() - state_load() into a summary: no chunk map is made. */
int state_load_summary(int dir_fd, const char *key, StateSummary *ret);
/* state_save() - atomically replace <dir>/<key>.state (mode 0600); any fsync failure is an error.
 */
int state_save(int dir_fd, const HydrateState *s);
/*
 * state_set_aside() - rename <key>.state to <key>.state.<why>-<unix seconds>, or to
 * ...-<unix seconds>.<n> if that name is taken, keeping it for inspection: never replaces a
 * file. The new name goes to *ret_name (malloc'ed).
 */
int state_set_aside(int dir_fd, const char *key, const char *why, char **ret_name);
