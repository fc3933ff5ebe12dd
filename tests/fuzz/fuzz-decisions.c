/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the decisions adversarial use reached first: which device may be opened
 * (block_device_verdict(), file_type_name(), device_path_from_arg()) and which state directory,
 * state file and state key may be trusted (state_dir_verdict(), state_file_verdict(),
 * state_key_valid()). An oracle written here restates each rule and its error, in the order the
 * headers document them; a device the verdict accepts must also survive the state codec.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chunkmap.h"
#include "device.h"
#include "fuzz-util.h"
#include "parse.h"
#include "state.h"
#include "unaligned.h"
#include "util.h"

/*
 * The input: a little-endian header (zero-filled when the input is shorter), then the device
 * argument, a "%%" line and the state key (its bytes as they are, NULs included).
 */
#define HDR_MODE 0     /* u32: mode of the device */
#define HDR_SIZE 4     /* u64: its size */
#define HDR_LBS 12     /* u32: its logical block size */
#define HDR_ST_MODE 16 /* u32: st_mode of the state directory and of the state file */
#define HDR_ST_UID 20  /* u32: their st_uid */
#define HDR_EUID 24    /* u32: our effective uid, and so the owner a state file must have */
#define HDR_ST_SIZE 28 /* s64: st_size of the state file */
#define HDR_LEN 36

/* The largest logical block size state_decode() takes (lbs_valid() in state.c). */
#define STATE_LBS_MAX 65536u
/* Devices up to here go through the codec: at most 2^16 chunks, a few microseconds an input;
 * fuzz-state.c covers large maps. */
#define CODEC_SIZE_MAX (UINT64_C(32) << 30)
#define FALLBACK_KEY "vol-0123456789abcdef0"

typedef struct Decisions {
        mode_t mode;
        uint64_t size;
        uint32_t lbs;
        struct stat st;
        uid_t euid;
        char *arg;
        FuzzChunk key;
} Decisions;

static void decode_input(const uint8_t *data, size_t size, Decisions *ret) {
        uint8_t h[HDR_LEN] = {0};
        FuzzChunk parts[2];

        memcpy(h, data, MIN(size, sizeof(h)));
        *ret = (Decisions){
                .mode = unaligned_read_le32(h + HDR_MODE),
                .size = unaligned_read_le64(h + HDR_SIZE),
                .lbs = unaligned_read_le32(h + HDR_LBS),
                .st.st_mode = unaligned_read_le32(h + HDR_ST_MODE),
                .st.st_uid = unaligned_read_le32(h + HDR_ST_UID),
                .st.st_size = (off_t)unaligned_read_le64(h + HDR_ST_SIZE),
                .euid = unaligned_read_le32(h + HDR_EUID),
        };
        if (size > HDR_LEN)
                (void)fuzz_split(data + HDR_LEN, size - HDR_LEN, parts, ELEMENTSOF(parts));
        else
                memset(parts, 0, sizeof(parts));
        ret->arg = fuzz_strdup(&parts[0]);
        if (!ret->arg) {
                ret->arg = strdup("");
                fuzz_assert(ret->arg);
        }
        ret->key = parts[1];
}

/* A power of two from 512 to 64 KiB: what the block layer allows, and what a state file holds. */
static bool lbs_ok(uint32_t lbs) {
        return __builtin_popcount(lbs) == 1 && lbs >= 512 && lbs <= STATE_LBS_MAX;
}

static int expected_device_verdict(mode_t mode, uint64_t size, uint32_t lbs) {
        if ((mode & S_IFMT) != S_IFBLK)
                return -ENOTBLK;
        if (!lbs_ok(lbs))
                return -EINVAL;
        if (size == 0)
                return -ENODATA;
        if (size % lbs != 0) /* a tail O_DIRECT cannot read */
                return -ERANGE;
        return 0;
}

static const struct {
        mode_t type;
        const char *word;
} file_types[] = {
        {S_IFREG, "regular"}, {S_IFDIR, "directory"}, {S_IFCHR, "character"}, {S_IFBLK, "block"},
        {S_IFIFO, "FIFO"},    {S_IFSOCK, "socket"},   {S_IFLNK, "link"},
};

/* Names are printable, depend on the type bits alone, say what the type is, and never name one
 * type as another (so "not a block device: it is a block device" cannot be written). */
static void check_file_type_name(mode_t mode) {
        const char *name = file_type_name(mode), *word = "unknown";

        fuzz_assert(name && name[0]);
        for (const char *p = name; *p; p++)
                fuzz_assert(*p >= ' ' && *p < 0x7f && *p != '%');
        fuzz_assert(strcmp(name, file_type_name(mode & S_IFMT)) == 0);
        for (size_t i = 0; i < ELEMENTSOF(file_types); i++) {
                bool same = (mode & S_IFMT) == file_types[i].type;

                if (same)
                        word = file_types[i].word;
                else
                        fuzz_assert(strcmp(name, file_type_name(file_types[i].type)) != 0);
        }
        fuzz_assert(strstr(name, word));
}

/* state_new(), encode, decode: 0 if the state a daemon would write for this device loads again. */
static int codec_round_trip(const char *key, uint64_t size, uint32_t lbs) {
        _cleanup_(state_freep) HydrateState *s = NULL, *copy = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        const char *why = NULL;
        size_t n = 0;
        int r;

        r = state_new(&s, key, size, lbs, chunk_size_for(size));
        if (r < 0)
                return r;
        fuzz_assert(state_encode(s, &buf, &n) == 0);
        r = state_decode(buf, n, &copy);
        if (r < 0) {
                fuzz_assert(r == -EBADMSG && !copy);
                return r;
        }
        fuzz_assert(state_matches(copy, key, size, lbs, &why) == 0);
        fuzz_assert(state_matches(copy, key, size + lbs, lbs, &why) == -ESTALE);
        fuzz_assert(why && strstr(why, "size") && !strstr(why, "block size"));
        why = NULL;
        fuzz_assert(state_matches(copy, key, size, lbs * 2, &why) == -ESTALE);
        fuzz_assert(why && strstr(why, "block size"));
        why = NULL;
        /* another volume's: the fuzzer writes "vol-other" as the key, too */
        fuzz_assert(state_matches(copy, strcmp(key, "vol-other") == 0 ? "vol-another" : "vol-other",
                                  size, lbs, &why) == -ESTALE);
        fuzz_assert(why && strstr(why, "volume"));
        return 0;
}

static void check_device(const Decisions *d, const char *key) {
        int r = block_device_verdict(d->mode, d->size, d->lbs);

        fuzz_assert(r == expected_device_verdict(d->mode, d->size, d->lbs));
        check_file_type_name(d->mode);
        fuzz_assert((r == -ENOTBLK) ==
                    (strcmp(file_type_name(d->mode), file_type_name(S_IFBLK)) != 0));

        /* What the daemon opens, it can checkpoint and resume, and nothing else. */
        if (r == -ENOTBLK || d->size == 0 || d->size > CODEC_SIZE_MAX)
                return;
        fuzz_assert((codec_round_trip(key, d->size, d->lbs) == 0) == (r == 0));
}

static void check_device_path(const char *arg) {
        _cleanup_free_ char *path = device_path_from_arg(arg), *again = NULL;

        fuzz_assert(path);
        if (strchr(arg, '/'))
                fuzz_assert(strcmp(path, arg) == 0);
        else
                fuzz_assert(strncmp(path, "/dev/", 5) == 0 && strcmp(path + 5, arg) == 0);
        again = device_path_from_arg(path);
        fuzz_assert(again && strcmp(again, path) == 0);
}

static int expected_dir_verdict(const struct stat *st, uid_t euid) {
        if ((st->st_mode & S_IFMT) != S_IFDIR)
                return -ENOTDIR;
        if (st->st_uid != euid)
                return -EPERM; /* its owner could plant a checkpoint that says "complete" */
        if (st->st_mode & (S_IRWXG | S_IRWXO))
                return -EACCES;
        return 0;
}

static int expected_file_verdict(const struct stat *st, uid_t owner) {
        if ((st->st_mode & S_IFMT) == S_IFLNK)
                return -ELOOP;
        if ((st->st_mode & S_IFMT) != S_IFREG)
                return -EBADMSG;
        if (st->st_uid != owner)
                return -EPERM;
        if (st->st_size < 0 || (uint64_t)st->st_size > STATE_FILE_MAX)
                return -EFBIG;
        return 0;
}

static void check_state_paths(const Decisions *d) {
        fuzz_assert(state_dir_verdict(&d->st, d->euid) == expected_dir_verdict(&d->st, d->euid));
        fuzz_assert(state_file_verdict(&d->st, d->euid) == expected_file_verdict(&d->st, d->euid));
}

static bool expected_key_valid(const uint8_t *key, size_t len) {
        if (len < 1 || len > STATE_KEY_MAX || key[0] == '.')
                return false;
        for (size_t i = 0; i < len; i++)
                if (key[i] < '!' || key[i] > '~' || key[i] == '/')
                        return false;
        return true;
}

/* Returns the key as a string if it is valid, else NULL. */
static char *check_key(const FuzzChunk *c) {
        const uint8_t *key = c->size > 0 ? c->data : (const uint8_t *)"";
        bool valid = state_key_valid((const char *)key, c->size);
        _cleanup_free_ char *s = NULL, *name = NULL;

        fuzz_assert(valid == expected_key_valid(key, c->size));
        if (!valid)
                return NULL;
        s = fuzz_strdup(c);
        name = state_file_name(s);
        fuzz_assert(name && strncmp(name, s, c->size) == 0);
        fuzz_assert(strcmp(name + c->size, ".state") == 0);
        fuzz_assert(!strchr(name, '/') && strlen(".") + strlen(name) + strlen(".tmp") <= NAME_MAX);
        return TAKE_PTR(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *key = NULL;
        Decisions d;

        decode_input(data, size, &d);
        key = check_key(&d.key);
        check_device(&d, key ? key : FALLBACK_KEY);
        check_device_path(d.arg);
        check_state_paths(&d);
        free(d.arg);
        return 0;
}
