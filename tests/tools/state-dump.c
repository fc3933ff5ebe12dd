/* SPDX-License-Identifier: MIT */
/*
 * state-dump: a test tool that decodes one state file with the library's codec and prints what
 * it records, the done chunks as merged byte ranges, so that a test can hold them against an
 * independent witness (the cold-volume rig's overlay). Not installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "state.h"
#include "util.h"

#define EXIT_ERROR 1
#define EXIT_USAGE 2
#define EXIT_NO_STATE 3

/* Loads DIR/KEY.state through the daemon's own loader, so the tool reads what the daemon would. */
static int load(const char *path, HydrateState **ret) {
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int dir_fd = -1;
        char *slash, *key, *suffix;

        if (!copy)
                return -ENOMEM;
        slash = strrchr(copy, '/');
        key = slash ? slash + 1 : copy;
        suffix = strrchr(key, '.');
        if (!suffix || strcmp(suffix, ".state") != 0)
                return -EINVAL;
        *suffix = '\0';
        if (slash)
                *slash = '\0';
        dir_fd = open(slash ? (copy[0] ? copy : "/") : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return -errno;
        return state_load(dir_fd, key, ret);
}

/* One "done OFFSET LENGTH" line per run of done chunks; the last chunk is clipped to the size. */
static void print_done(const ChunkMap *m) {
        uint64_t i = 0;

        while (i < m->n_chunks) {
                uint64_t first;

                if (!chunkmap_is_done(m, i)) {
                        i++;
                        continue;
                }
                for (first = i; i < m->n_chunks && chunkmap_is_done(m, i); i++)
                        ;
                printf("done %" PRIu64 " %" PRIu64 "\n", chunkmap_offset(m, first),
                       chunkmap_range_bytes(m, first, i - first));
        }
}

static void print_state(const HydrateState *s) {
        printf("key %s\nsize %" PRIu64 "\nchunk-size %" PRIu32 "\ncomplete %s\nupdated %" PRIu64
               "\ndone-bytes %" PRIu64 "\n",
               s->key, s->size, s->map->chunk_size, s->complete ? "yes" : "no", s->updated_usec,
               chunkmap_done_bytes(s->map));
        print_done(s->map);
        for (size_t i = 0; i < s->n_bad; i++)
                printf("bad %" PRIu64 " %" PRIu64 "\n", s->bad[i].offset, s->bad[i].length);
}

int main(int argc, char *argv[]) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        int r;

        if (argc != 2 || argv[1][0] == '-') {
                fprintf(stderr, "Usage: state-dump DIR/KEY.state\n"
                                "Print what a state file records: key, size, chunk-size, "
                                "complete, updated\n(CLOCK_REALTIME microseconds), done-bytes,\n"
                                "then 'done OFFSET LENGTH' per run of done chunks and 'bad "
                                "OFFSET LENGTH' per\n"
                                "unreadable range. Exit 0, 1 if it does not decode, 3 if there "
                                "is no such file.\n");
                return EXIT_USAGE;
        }
        r = load(argv[1], &s);
        if (r == -ENOENT) {
                fprintf(stderr, "state-dump: %s: no such file\n", argv[1]);
                return EXIT_NO_STATE;
        }
        if (r < 0) {
                fprintf(stderr, "state-dump: %s: %s\n", argv[1],
                        r == -EBADMSG           ? "corrupt"
                        : r == -EPROTONOSUPPORT ? "unsupported version"
                        : r == -EINVAL          ? "not a KEY.state file name"
                                                : strerror(-r));
                return EXIT_ERROR;
        }
        print_state(s);
        return 0;
}
