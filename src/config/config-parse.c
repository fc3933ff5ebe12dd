/* SPDX-License-Identifier: MIT */
/*
 * One configuration file, from its bytes to its settings and [Match] lists: inih splits keys from
 * values, but we hand it one checked line at a time, so that every error names its file and exact
 * line and no over-long line is ever silently truncated. Only the first error of a file is kept.
 */

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-internal.h"
#include "config.h"
#include "parse.h"
#include "util.h"

/* @path escaped for a message (parse.h), malloc'ed; NULL when out of memory. */
char *escape_path(const char *path) {
        size_t n = strlen(path);
        char *buf = malloc(CESCAPE_MAX(n));

        return buf ? cescape(buf, CESCAPE_MAX(n), path, n) : NULL;
}

/* Records the first error of the file at @lineno; later ones are dropped. Returns @code. Whatever
 * the message quotes from the file must be ESCAPED(). */
int parser_fail_at(Parser *p, unsigned lineno, int code, const char *format, ...) {
        _cleanup_free_ char *what = NULL, *name = NULL;
        va_list ap;
        int r;

        if (p->error_code < 0)
                return code;
        va_start(ap, format);
        r = vasprintf(&what, format, ap);
        va_end(ap);
        if (r < 0)
                what = NULL; /* undefined after a failure */
        name = escape_path(p->path);
        if (r < 0 || !name || asprintf(&p->error, "%s:%u: %s", name, lineno, what) < 0) {
                p->error = NULL;
                code = -ENOMEM;
        }
        p->error_code = code;
        p->error_line = lineno;
        return code;
}

int parser_fail_value(Parser *p, const char *key, const char *value, const char *expected, ...) {
        _cleanup_free_ char *why = NULL;
        va_list ap;
        int r;

        va_start(ap, expected);
        r = vasprintf(&why, expected, ap);
        va_end(ap);
        if (r < 0) {
                why = NULL;
                return parser_fail(p, -ENOMEM, "out of memory");
        }
        return parser_fail(p, -EINVAL, "invalid value '%s' for %s= (expected %s)",
                           ESCAPED(value, SIZE_MAX), key, why);
}

static void parser_done(Parser *p) {
        for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++)
                p->match[k] = strv_free(p->match[k]);
        free(p->error);
        p->error = NULL;
}

static bool section_is_known(const char *name, size_t len) {
        return (len == strlen("Match") && strncmp(name, "Match", len) == 0) ||
               (len == strlen("Hydrate") && strncmp(name, "Hydrate", len) == 0);
}

/*
 * '#' and ';' may only start a comment line. inih would drop a " ; note" after a value silently
 * and keep a " # note" as part of it, and no section name, key or value can contain either
 * character (sizes, booleans, "auto", volume ids, mapping and kernel names, globs of these).
 * Returns true, with the error recorded, if @line (@n characters, not a comment line) has one.
 */
static bool check_comment_chars(Parser *p, const char *line, size_t n) {
        size_t i = strcspn(line, "#;");

        if (i >= n)
                return false;
        if (isspace((unsigned char)line[i - 1]))
                (void)parser_fail(p, -EINVAL,
                                  "comments must be on a line of their own ('#' or ';' at the "
                                  "start of the line)");
        else
                (void)parser_fail(p, -EINVAL,
                                  "invalid character '%c' in '%s' ('#' and ';' may only start "
                                  "a comment line)",
                                  line[i], ESCAPED(line, n));
        return true;
}

/*
 * Catches at their own line what inih would report late (an empty unknown section is never
 * passed to the handler), without a reason (a line without '=') or not at all (an inline
 * comment), and rejects "Key: value".
 */
static void check_line(Parser *p, const char *line) {
        size_t n = strlen(line);

        while (n > 0 && isspace((unsigned char)line[n - 1]))
                n--;
        if (n == 0 || line[0] == '#' || line[0] == ';')
                return;
        if (check_comment_chars(p, line, n))
                return;
        if (line[0] != '[') {
                if (line[strcspn(line, "=:")] != '=')
                        (void)parser_fail(
                                p, -EINVAL,
                                "expected 'Key=Value', '[Section]' or a comment, got '%s'",
                                ESCAPED(line, n));
        } else if (n < 2 || line[n - 1] != ']') {
                (void)parser_fail(p, -EINVAL, "malformed section header '%s'", ESCAPED(line, n));
        } else if (!section_is_known(line + 1, n - 2)) {
                (void)parser_fail(p, -EINVAL, "unknown section [%s]", ESCAPED(line + 1, n - 2));
        }
}

/*
 * inih's line reader. Handing over one line at a time (without its newline, which inih would
 * count as an extra line when the line fills its buffer) keeps p->lineno exact for the
 * handler. Leading whitespace is dropped: indentation is not a continuation line here. The
 * file ends at its first mistake: only that one is reported, and inih has reported any on an
 * earlier line already.
 */
static char *next_line(char *str, int num, void *stream) {
        Parser *p = stream;
        const char *line = p->pos, *eol;
        size_t len, limit;

        if (line >= p->end || num < 1 || p->error_code < 0)
                return NULL;
        eol = memchr(line, '\n', (size_t)(p->end - line));
        len = (size_t)((eol ?: p->end) - line);
        p->pos = eol ? eol + 1 : p->end;
        p->lineno++;

        limit = MIN((size_t)CONFIG_LINE_MAX, (size_t)num - 1);
        if (len > limit) {
                (void)parser_fail(p, -EINVAL, "line too long (%zu characters, at most %zu)", len,
                                  limit);
                return NULL;
        }
        if (memchr(line, '\0', len)) {
                (void)parser_fail(p, -EINVAL, "line contains a NUL byte");
                return NULL;
        }
        while (len > 0 && isspace((unsigned char)*line)) {
                line++;
                len--;
        }
        memcpy(str, line, len);
        str[len] = '\0';
        check_line(p, str);
        return p->error_code < 0 ? NULL : str;
}

/* inih's handler: nonzero on success. */
static int handle_assignment(void *user, const char *section, const char *key, const char *value) {
        Parser *p = user;
        int r;

        value = strempty(value);
        if (streq(section, "Hydrate"))
                r = parse_hydrate_key(p, key, value);
        else if (streq(section, "Match"))
                r = parse_match_key(p, key, value);
        else if (isempty(section))
                r = parser_fail(p, -EINVAL, "key '%s' before any section header",
                                ESCAPED(key, SIZE_MAX));
        else /* check_line() has failed at the header already: this error is never the first */
                r = parser_fail(p, -EINVAL, "key '%s' in unknown section [%s]",
                                ESCAPED(key, SIZE_MAX), ESCAPED(section, SIZE_MAX));
        return r >= 0;
}

static int parser_run(Parser *p, const char *buf, size_t size) {
        int line;

        p->pos = buf;
        p->end = buf + size;
        if (size >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
                p->pos += 3; /* UTF-8 byte order mark */
        line = ini_parse_stream(next_line, p, handle_assignment, p);
        if (line < 0)
                return parser_fail(p, -ENOMEM, "out of memory");
        /* A line inih rejected that neither next_line() nor the handler did. */
        if (line > 0 && (p->error_code == 0 || (unsigned)line < p->error_line)) {
                free(p->error);
                p->error = NULL;
                p->error_code = 0;
                (void)parser_fail_at(
                        p, (unsigned)line, -EINVAL,
                        "syntax error, expected 'Key=Value', '[Section]' or a comment");
        }
        return p->error_code;
}

/**
 * config_parse_buffer() - parse one file's contents and, if its [Match] matches, apply them.
 * @name: the file's name, for messages.
 * @data: its contents, @size bytes, not necessarily NUL-terminated.
 * @size: the number of bytes at @data.
 * @target: what [Match] tests; NULL is a device about which nothing is known.
 * @settings: in: current settings; out: with the [Hydrate] applied if the file matches.
 * @ret_error: NULL on success; on failure a malloc'ed "NAME:LINE: ..." (NULL if out of memory).
 *
 * The contents are validated in full even when they do not match. @settings is left untouched
 * on failure. No I/O: config_load() reads each file and hands it over to this.
 *
 * Return: 0, -EINVAL for a mistake in the file, or -ENOMEM.
 */
int config_parse_buffer(const char *name, const char *data, size_t size, const MatchTarget *target,
                        HydrateSettings *settings, char **ret_error) {
        _cleanup_(parser_done) Parser p = {.path = name, .settings = *settings};
        int r;

        if (ret_error)
                *ret_error = NULL;
        r = parser_run(&p, size > 0 ? data : "", size);
        if (r < 0) {
                if (ret_error)
                        *ret_error = TAKE_PTR(p.error);
                return r;
        }
        if (parser_matches(&p, target))
                *settings = p.settings;
        return 0;
}
