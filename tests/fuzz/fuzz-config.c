/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the hydrate.conf parser, in memory: config_parse_buffer() on one file and one
 * MatchTarget, both cut from the input. Nothing is written to disk, so an input costs a parse or
 * two; reading, ordering and hiding files (config_load()) is test-config.c's business.
 *
 * Input: up to three lines, volume id, mapping name, kernel name (none at all: no target), then
 * a "%%" line, then the file, to the end of the input. Without a "%%" line among the first four,
 * all of it is the file.
 *
 * Invariants: the result is 0 or -EINVAL. An error names the file and a line it has, is
 * printable ASCII only (the file's bytes are escaped), leaves the settings alone, and is the same
 * for the file cut after that line and without a target (the first mistake is reported, and
 * [Match] is validated whether it matches or not). A success gives valid settings, and applying
 * the file again changes nothing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz-util.h"
#include "util.h"

#define FILE_NAME "etc/hydrate.conf.d/50-fuzz.conf"

typedef struct Input {
        char *fields[3];
        MatchTarget target;
        bool has_target;
        char *file; /* an exact-size copy, so that ASan sees a read past its end */
        size_t size;
} Input;

static void input_done(Input *in) {
        for (size_t i = 0; i < ELEMENTSOF(in->fields); i++)
                free(in->fields[i]);
        free(in->file);
}

/* The target: up to three lines at @data, before the "%%" line at @sep. */
static void parse_target(Input *in, const uint8_t *data, const uint8_t *sep) {
        const uint8_t *p = data;

        in->has_target = sep > data;
        for (size_t i = 0; i < ELEMENTSOF(in->fields) && p < sep; i++) {
                const uint8_t *eol = memchr(p, '\n', (size_t)(sep - p)) ?: sep;
                FuzzChunk line = {p, (size_t)(eol - p)};

                in->fields[i] = fuzz_strdup(&line);
                p = eol + 1;
        }
        in->target = (MatchTarget){in->fields[0], in->fields[1], in->fields[2]};
}

/* Where the "%%" line that ends the target is: it is one of the first four lines. */
static const uint8_t *find_separator(const uint8_t *data, size_t size) {
        const uint8_t *p = data, *end = data + size;

        for (int i = 0; i < 4 && p < end; i++) {
                const uint8_t *eol = memchr(p, '\n', (size_t)(end - p)) ?: end;

                if (eol - p == 2 && p[0] == '%' && p[1] == '%')
                        return p;
                p = eol + 1;
        }
        return NULL;
}

static void input_init(Input *in, const uint8_t *data, size_t size) {
        const uint8_t *sep = find_separator(data, size);
        FuzzChunk file = {data, size};

        if (sep) {
                parse_target(in, data, sep);
                file.data = MIN(sep + 3, data + size); /* after "%%\n", if any */
                file.size = (size_t)(data + size - file.data);
        }
        in->file = malloc(MAX(file.size, (size_t)1));
        fuzz_assert(in->file);
        if (file.size > 0)
                memcpy(in->file, file.data, file.size);
        in->size = file.size;
}

static bool settings_valid(const HydrateSettings *s) {
        return (s->queue_depth == HYDRATE_QUEUE_DEPTH_AUTO ||
                (s->queue_depth >= 1 && s->queue_depth <= HYDRATE_QUEUE_DEPTH_MAX)) &&
               s->block_size % 4096 == 0 && s->block_size >= HYDRATE_BLOCK_SIZE_MIN &&
               s->block_size <= HYDRATE_BLOCK_SIZE_MAX && s->mode >= 0 &&
               s->mode < _HYDRATE_MODE_MAX && memchr(s->hot_paths, '\0', sizeof(s->hot_paths));
}

static bool settings_equal(const HydrateSettings *a, const HydrateSettings *b) {
        return a->enabled == b->enabled && a->queue_depth == b->queue_depth &&
               a->block_size == b->block_size && a->rate_limit == b->rate_limit &&
               a->mode == b->mode && strcmp(a->hot_paths, b->hot_paths) == 0 &&
               a->yield == b->yield;
}

/* config_parse_buffer() on the first @size bytes of the file, with the common checks. */
static int parse(const Input *in, size_t size, const MatchTarget *target, HydrateSettings *settings,
                 char **ret_error) {
        int r = config_parse_buffer(FILE_NAME, in->file, size, target, settings, ret_error);

        fuzz_assert(r == 0 || r == -EINVAL);
        fuzz_assert(r == 0 ? !*ret_error : !!*ret_error);
        return r;
}

/* "FILE_NAME:LINE: what", printable ASCII only; returns where line LINE ends (after its '\n'). */
static size_t check_error(const Input *in, const char *error) {
        const char *c = in->file, *end = in->file + in->size;
        unsigned long line;
        char *rest;

        fuzz_assert(strncmp(error, FILE_NAME ":", strlen(FILE_NAME ":")) == 0);
        line = strtoul(error + strlen(FILE_NAME ":"), &rest, 10);
        fuzz_assert(line >= 1 && strncmp(rest, ": ", 2) == 0 && rest[2] != '\0');
        for (const char *p = error; *p; p++)
                fuzz_assert(*p >= 0x20 && *p < 0x7f);
        for (unsigned long n = 1; n < line; n++) { /* the file has that line */
                c = memchr(c, '\n', (size_t)(end - c));
                fuzz_assert(c);
                c++;
        }
        c = memchr(c, '\n', (size_t)(end - c));
        return c ? (size_t)(c + 1 - in->file) : in->size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(input_done) Input in = {};
        _cleanup_free_ char *error = NULL, *again_error = NULL;
        const MatchTarget *target;
        HydrateSettings start, s, again;
        int r;

        input_init(&in, data, size);
        target = in.has_target ? &in.target : NULL;
        /* Not the defaults: what the file leaves alone must come out as it went in. */
        start = (HydrateSettings){.queue_depth = 3,
                                  .block_size = 8192,
                                  .rate_limit = 5,
                                  .mode = HYDRATE_MODE_USED,
                                  .hot_paths = "/odd"};
        s = start;
        r = parse(&in, in.size, target, &s, &error);
        again = s;
        if (r == 0) {
                fuzz_assert(settings_valid(&s));
                fuzz_assert(parse(&in, in.size, target, &again, &again_error) == 0);
                fuzz_assert(settings_equal(&again, &s));
                return 0;
        }
        fuzz_assert(settings_equal(&s, &start));
        fuzz_assert(parse(&in, check_error(&in, error), NULL, &again, &again_error) == r);
        fuzz_assert(strcmp(error, again_error) == 0);
        fuzz_assert(settings_equal(&again, &start));
        return 0;
}
