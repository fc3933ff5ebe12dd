/* SPDX-License-Identifier: MIT */
/*
 * What the files of src/config share, and nothing outside it sees: the state of one file being
 * parsed, the way its first error is recorded, and the entry points from the line parser
 * (config-parse.c) into the [Hydrate] keys (config-keys.c) and [Match] (config-match.c).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "parse.h"
#include "util.h"

#define WHITESPACE " \t\r"

/* At most @n bytes of @s, from one line of a file, escaped for a message (parse.h). The buffer
 * lives until the end of the enclosing block. */
#define ESCAPED(s, n) CESCAPE((s), (n), CESCAPE_MAX(CONFIG_LINE_MAX))

typedef enum MatchKey {
        MATCH_VOLUME_ID,
        MATCH_DEVICE_NAME,
        MATCH_KERNEL_NAME,
        _MATCH_KEY_MAX,
        _MATCH_KEY_INVALID = -EINVAL,
} MatchKey;

/* One file being parsed: inih's reader and handler both work on it. */
typedef struct Parser {
        const char *path;
        const char *pos; /* the part of the file not yet handed to inih */
        const char *end;
        unsigned lineno; /* the line inih is working on */
        HydrateSettings settings;
        char **match[_MATCH_KEY_MAX]; /* NULL-terminated glob lists, NULL when empty */
        int error_code;               /* first error, as negative errno */
        unsigned error_line;
        char *error; /* "PATH:LINE: ..." */
} Parser;

static inline char **strv_free(char **l) {
        for (char **i = l; i && *i; i++)
                free(*i);
        free(l);
        return NULL;
}

/* config-parse.c */

/* @path escaped for a message (parse.h), malloc'ed; NULL when out of memory. */
char *escape_path(const char *path);

/* Records the first error of the file at @lineno; later ones are dropped. Returns @code. Whatever
 * the message quotes from the file must be ESCAPED(). */
int parser_fail_at(Parser *p, unsigned lineno, int code, const char *format, ...) _printf_(4, 5);

#define parser_fail(p, code, ...) parser_fail_at((p), (p)->lineno, (code), __VA_ARGS__)

/* "invalid value '@value' for @key= (expected ...)", -EINVAL (or -ENOMEM). */
int parser_fail_value(Parser *p, const char *key, const char *value, const char *expected, ...)
        _printf_(4, 5);

/* config-keys.c: one assignment in [Hydrate] into p->settings. */
int parse_hydrate_key(Parser *p, const char *key, const char *value);

/* config-match.c: one assignment in [Match] into p->match; whether @target fits what it says. */
int parse_match_key(Parser *p, const char *key, const char *value);
bool parser_matches(const Parser *p, const MatchTarget *target);
