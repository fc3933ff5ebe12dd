/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for config_load(): a two-directory search path (usr, then etc) with main files and
 * drop-ins, all cut from one input, merged for a MatchTarget that the input names too. The merge
 * must agree with applying the same files one by one in the documented order, error text included.
 *
 * Input, parts separated by "%%" lines (an empty part is a missing file):
 *   0: the target: up to three lines, volume id, mapping name, kernel name (empty: no target)
 *   1: usr/hydrate.conf        2: etc/hydrate.conf
 *   3 + 2k: usr/hydrate.conf.d/NN.conf    4 + 2k: etc/hydrate.conf.d/NN.conf    (NN: k, 00..11)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz-util.h"
#include "util.h"

#define DROPIN_NAMES 12
#define PART_TARGET 0
#define PART_MAIN 1   /* + directory index */
#define PART_DROPIN 3 /* + 2 * name index + directory index */
#define PARTS (PART_DROPIN + 2 * DROPIN_NAMES)

static const char *const dir_names[2] = {"usr", "etc"};

typedef struct Input {
        FuzzChunk parts[PARTS];
        char *target_fields[3];
        MatchTarget target;
        bool has_target;
        char *dirs[2];
} Input;

static char *xasprintf(const char *format, ...) _printf_(1, 2);
static char *xasprintf(const char *format, ...) {
        va_list ap;
        char *s;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        fuzz_assert(r >= 0);
        return s;
}

static void parse_target(Input *in) {
        const FuzzChunk *c = &in->parts[PART_TARGET];
        const uint8_t *p = c->data, *end = c->data + c->size;

        in->has_target = c->size > 0;
        for (size_t i = 0; i < 3 && p < end; i++) {
                const uint8_t *eol = memchr(p, '\n', (size_t)(end - p)) ?: end;
                FuzzChunk line = {p, (size_t)(eol - p)};

                in->target_fields[i] = fuzz_strdup(&line);
                p = eol + (eol < end);
        }
        in->target = (MatchTarget){
                .volume_id = in->target_fields[0],
                .device_name = in->target_fields[1],
                .kernel_name = in->target_fields[2],
        };
}

static char *dropin_rel(size_t dir, size_t k) {
        return xasprintf("%s/" CONFIG_DROPIN_DIR_NAME "/%02zu.conf", dir_names[dir], k);
}

static void write_tree(Input *in) {
        for (size_t d = 0; d < 2; d++) {
                _cleanup_free_ char *main_rel = NULL;

                fuzz_mkdirs(dir_names[d]);
                in->dirs[d] = xasprintf("%s/%s", fuzz_scratch_dir(), dir_names[d]);
                main_rel = xasprintf("%s/" CONFIG_FILE_NAME, dir_names[d]);
                fuzz_write_file(main_rel, &in->parts[PART_MAIN + d]);
                for (size_t k = 0; k < DROPIN_NAMES; k++) {
                        _cleanup_free_ char *rel = dropin_rel(d, k);

                        fuzz_write_file(rel, &in->parts[PART_DROPIN + 2 * k + d]);
                }
        }
}

/* The directory that provides a file: etc hides usr. -1 if neither has it. */
static int winning_dir(const Input *in, size_t part_usr) {
        return in->parts[part_usr + 1].size > 0 ? 1 : in->parts[part_usr].size > 0 ? 0 : -1;
}

/* config_apply_file() on @rel if present; returns its result. */
static int apply_one(const Input *in, int dir, const char *rel, HydrateSettings *settings,
                     char **ret_error) {
        _cleanup_free_ char *path = NULL;

        if (dir < 0)
                return 0;
        path = xasprintf("%s/%s", in->dirs[dir], rel);
        return config_apply_file(path, in->has_target ? &in->target : NULL, settings, ret_error);
}

/* The documented order, spelt out: main file of the highest directory, then drop-ins by name. */
static int reference_merge(const Input *in, HydrateSettings *settings, char **ret_error) {
        HydrateSettings merged = *settings;
        int r;

        r = apply_one(in, winning_dir(in, PART_MAIN), CONFIG_FILE_NAME, &merged, ret_error);
        for (size_t k = 0; r >= 0 && k < DROPIN_NAMES; k++) {
                _cleanup_free_ char *rel = xasprintf(CONFIG_DROPIN_DIR_NAME "/%02zu.conf", k);

                r = apply_one(in, winning_dir(in, PART_DROPIN + 2 * k), rel, &merged, ret_error);
        }
        if (r >= 0)
                *settings = merged;
        return r;
}

static bool settings_valid(const HydrateSettings *s) {
        return (s->queue_depth == HYDRATE_QUEUE_DEPTH_AUTO ||
                (s->queue_depth >= 1 && s->queue_depth <= HYDRATE_QUEUE_DEPTH_MAX)) &&
               s->block_size % 4096 == 0 && s->block_size >= HYDRATE_BLOCK_SIZE_MIN &&
               s->block_size <= HYDRATE_BLOCK_SIZE_MAX;
}

static bool settings_equal(const HydrateSettings *a, const HydrateSettings *b) {
        return a->enabled == b->enabled && a->queue_depth == b->queue_depth &&
               a->block_size == b->block_size && a->rate_limit == b->rate_limit;
}

static size_t count_lines(const FuzzChunk *c) {
        size_t n = 1;

        for (size_t i = 0; i < c->size; i++)
                n += c->data[i] == '\n';
        return n;
}

/* "DIR/REL:LINE: what", naming a file we wrote and a line that it has. */
static void check_error_names_line(const Input *in, const char *error) {
        const char *root = fuzz_scratch_dir();
        size_t root_len = strlen(root);
        unsigned long line;
        char *end;

        fuzz_assert(error && strncmp(error, root, root_len) == 0 && error[root_len] == '/');
        for (size_t part = PART_MAIN; part < PARTS; part++) {
                _cleanup_free_ char *rel =
                        part < PART_DROPIN
                                ? xasprintf("%s/" CONFIG_FILE_NAME, dir_names[part - PART_MAIN])
                                : dropin_rel((part - PART_DROPIN) % 2, (part - PART_DROPIN) / 2);
                size_t n = strlen(rel);

                if (strncmp(error + root_len + 1, rel, n) != 0 || error[root_len + 1 + n] != ':')
                        continue;
                fuzz_assert(in->parts[part].size > 0);
                line = strtoul(error + root_len + 1 + n + 1, &end, 10);
                fuzz_assert(line >= 1 && line <= count_lines(&in->parts[part]));
                fuzz_assert(strncmp(end, ": ", 2) == 0 && end[2] != '\0');
                return;
        }
        fuzz_assert(!"error names no file of the input");
}

static void input_done(Input *in) {
        for (size_t i = 0; i < ELEMENTSOF(in->target_fields); i++)
                free(in->target_fields[i]);
        for (size_t d = 0; d < 2; d++)
                free(in->dirs[d]);
        fuzz_scratch_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(input_done) Input in = {};
        _cleanup_free_ char *error = NULL, *ref_error = NULL;
        HydrateSettings defaults, settings, ref;
        const char *dirs[3];
        int r, ref_r;

        (void)fuzz_split(data, size, in.parts, PARTS);
        parse_target(&in);
        write_tree(&in);
        dirs[0] = in.dirs[0];
        dirs[1] = in.dirs[1];
        dirs[2] = NULL;

        hydrate_settings_init(&defaults);
        settings = ref = defaults;
        r = config_load(dirs, in.has_target ? &in.target : NULL, &settings, &error);
        ref_r = reference_merge(&in, &ref, &ref_error);

        fuzz_assert(r == 0 || r == -EINVAL);
        fuzz_assert(r == ref_r);
        if (r < 0) {
                fuzz_assert(settings_equal(&settings, &defaults));
                fuzz_assert(error && ref_error && strcmp(error, ref_error) == 0);
                check_error_names_line(&in, error);
        } else {
                fuzz_assert(!error && !ref_error);
                fuzz_assert(settings_valid(&settings));
                fuzz_assert(settings_equal(&settings, &ref));
        }
        return 0;
}
