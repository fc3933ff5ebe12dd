/* SPDX-License-Identifier: MIT */
/*
 * state-make: a test tool that writes one state file with the library's own codec and atomic
 * save, as ebs-hydrated would leave it, so that tests of what reads state files (ebs-hydratectl
 * metrics and node_exporter) need neither root nor a loop device. Not installed.
 *
 *   state-make DIR KEY SIZE DONE [bad=OFFSET+LENGTH]... [complete] [used-complete] [as=NAME]
 *
 * SIZE and DONE are bytes; DONE is rounded up to whole 512 KiB chunks, marked read from the
 * start; as=NAME saves the state of KEY under NAME.state (a copied file).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "util.h"

#define CHUNK (UINT32_C(512) << 10)

static int apply(HydrateState *s, const char *arg, const char **ret_as) {
        uint64_t offset, length;

        if (strcmp(arg, "complete") == 0)
                s->complete = true;
        else if (strcmp(arg, "used-complete") == 0)
                s->used_complete = true;
        else if (strncmp(arg, "as=", 3) == 0)
                *ret_as = arg + 3;
        else if (sscanf(arg, "bad=%" SCNu64 "+%" SCNu64, &offset, &length) == 2)
                return state_add_bad(s, offset, length);
        else
                return -EINVAL;
        return 0;
}

/* Saves @s in @dir, as KEY.state (state_save() names the file after the key it holds), then
 * renames it to @name.state if @name is given. */
static int save_as(const char *dir, const HydrateState *s, const char *name) {
        _cleanup_close_ int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *from = state_file_name(s->key), *to = NULL;
        int r;

        if (dir_fd < 0)
                return -errno;
        r = state_save(dir_fd, s);
        if (r < 0 || !name)
                return r;
        to = state_file_name(name);
        if (!from || !to)
                return -ENOMEM;
        return renameat(dir_fd, from, dir_fd, to) < 0 ? -errno : 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        const char *as = NULL;
        uint64_t size, done;
        int r;

        if (argc < 5 || sscanf(argv[3], "%" SCNu64, &size) != 1 ||
            sscanf(argv[4], "%" SCNu64, &done) != 1 || done > size) {
                fprintf(stderr, "usage: state-make DIR KEY SIZE DONE [bad=OFFSET+LENGTH]... "
                                "[complete] [used-complete] [as=NAME]\n");
                return 2;
        }
        r = state_new(&s, argv[2], size, 4096, CHUNK);
        if (r < 0) {
                fprintf(stderr, "state-make: %s\n", strerror(-r));
                return 1;
        }
        chunkmap_mark_done(s->map, 0, (done + CHUNK - 1) / CHUNK);
        for (int i = 5; i < argc; i++)
                if (apply(s, argv[i], &as) < 0) {
                        fprintf(stderr, "state-make: bad argument '%s'\n", argv[i]);
                        return 2;
                }
        r = save_as(argv[1], s, as);
        if (r < 0) {
                fprintf(stderr, "state-make: cannot save in %s: %s\n", argv[1], strerror(-r));
                return 1;
        }
        return 0;
}
