/* SPDX-License-Identifier: MIT */
/*
 * hydrate.conf and its drop-ins, loaded the way systemd loads .network files: every file is
 * parsed and validated in full, then applied only if its [Match] section matches the device.
 * inih splits keys from values; we hand it one checked line at a time, so that every error
 * names its file and exact line and no over-long line is ever silently truncated.
 */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "config.h"
#include "parse.h"
#include "util.h"

#define CONFIG_FILE_SIZE_MAX ((size_t)1 << 20) /* files of this size or more are refused */
#define BLOCK_SIZE_ALIGN UINT64_C(4096)
#define WHITESPACE " \t\r"
#define streq(a, b) (strcmp((a), (b)) == 0)

/* At most @n bytes of @s, from one line of a file, escaped for a message (parse.h). The buffer
 * lives until the end of the enclosing block. */
#define ESCAPED(s, n) CESCAPE((s), (n), CESCAPE_MAX(CONFIG_LINE_MAX))

typedef enum MatchKey {
        MATCH_VOLUME_ID,
        MATCH_DEVICE_NAME,
        MATCH_KERNEL_NAME,
        _MATCH_KEY_MAX,
} MatchKey;

static const char *const match_key_names[_MATCH_KEY_MAX] = {
        [MATCH_VOLUME_ID] = "VolumeId",
        [MATCH_DEVICE_NAME] = "DeviceName",
        [MATCH_KERNEL_NAME] = "KernelName",
};

/* Why a pattern with a '/' can never match: none of the names has one. */
static const char *const match_key_no_slash[_MATCH_KEY_MAX] = {
        [MATCH_VOLUME_ID] = "volume ids contain no '/'",
        [MATCH_DEVICE_NAME] = "mapping names contain no '/' after a leading /dev/",
        [MATCH_KERNEL_NAME] = "kernel names contain no '/': nvme1n1, not /dev/nvme1n1",
};

static const char *const char_classes[] = {
        "alnum", "alpha", "blank", "cntrl", "digit", "graph",
        "lower", "print", "punct", "space", "upper", "xdigit",
};

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

typedef struct DropIn {
        char *name;
        char *path;
        size_t priority; /* index in the search path: higher wins */
} DropIn;

typedef struct DropInList {
        DropIn *items;
        size_t n;
} DropInList;

static bool isempty(const char *s) {
        return !s || !*s;
}

static char **strv_free(char **l) {
        for (char **i = l; i && *i; i++)
                free(*i);
        free(l);
        return NULL;
}

/* Appends each whitespace-separated word of @words to the NULL-terminated list *@l. */
static int strv_extend_words(char ***l, const char *words) {
        size_t n = 0;

        while (*l && (*l)[n])
                n++;
        for (const char *w = words + strspn(words, WHITESPACE); *w; w += strspn(w, WHITESPACE)) {
                size_t len = strcspn(w, WHITESPACE);
                char **grown = reallocarray(*l, n + 2, sizeof(char *));

                if (!grown)
                        return -ENOMEM;
                *l = grown;
                grown[n] = strndup(w, len);
                if (!grown[n])
                        return -ENOMEM;
                grown[++n] = NULL;
                w += len;
        }
        return 0;
}

void hydrate_settings_init(HydrateSettings *s) {
        *s = (HydrateSettings){
                .enabled = true,
                .queue_depth = HYDRATE_DEFAULT_QUEUE_DEPTH,
                .block_size = HYDRATE_DEFAULT_BLOCK_SIZE,
                .rate_limit = 0,
                .mode = HYDRATE_DEFAULT_MODE,
                .yield = true,
        };
}

/* Strips "/dev/" and turns "xvd" into "sd", so every spelling of a mapping name compares alike. */
static char *normalize_device_name(const char *s) {
        char *r;

        if (strncmp(s, "/dev/", 5) == 0)
                s += 5;
        if (strncmp(s, "xvd", 3) != 0)
                return strdup(s);
        return asprintf(&r, "sd%s", s + 3) < 0 ? NULL : r;
}

/**
 * device_name_matches() - glob a block-device mapping name.
 * @pattern: fnmatch(3) glob, such as "sdf", "/dev/sdf", "xvd*".
 * @name: the mapping name of the device, such as "sdf", "/dev/xvdf"; NULL or "" matches nothing.
 *
 * Both sides are compared without a leading "/dev/" and with a leading "xvd" read as "sd".
 *
 * Return: true if @pattern matches @name; false otherwise, and when out of memory.
 */
bool device_name_matches(const char *pattern, const char *name) {
        _cleanup_free_ char *p = NULL, *n = NULL;

        if (isempty(pattern) || isempty(name))
                return false;
        p = normalize_device_name(pattern);
        n = normalize_device_name(name);
        return p && !isempty(n) && fnmatch(p, n, 0) == 0;
}

/* @path escaped for a message (parse.h), malloc'ed; NULL when out of memory. */
static char *escape_path(const char *path) {
        size_t n = strlen(path);
        char *buf = malloc(CESCAPE_MAX(n));

        return buf ? cescape(buf, CESCAPE_MAX(n), path, n) : NULL;
}

/* Records the first error of the file at @lineno; later ones are dropped. Returns @code. Whatever
 * the message quotes from the file must be ESCAPED(). */
static int parser_fail_at(Parser *p, unsigned lineno, int code, const char *format, ...)
        _printf_(4, 5);
static int parser_fail_at(Parser *p, unsigned lineno, int code, const char *format, ...) {
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

#define parser_fail(p, code, ...) parser_fail_at((p), (p)->lineno, (code), __VA_ARGS__)

static int parser_fail_value(Parser *p, const char *key, const char *value, const char *expected,
                             ...) _printf_(4, 5);
static int parser_fail_value(Parser *p, const char *key, const char *value, const char *expected,
                             ...) {
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

static int parse_enabled(Parser *p, const char *key, const char *value) {
        if (parse_boolean(value, &p->settings.enabled) < 0)
                return parser_fail_value(p, key, value, "a boolean: yes or no");
        return 0;
}

static int parse_yield(Parser *p, const char *key, const char *value) {
        if (parse_boolean(value, &p->settings.yield) < 0)
                return parser_fail_value(p, key, value, "a boolean: yes or no");
        return 0;
}

/* The *_SYNTAX messages in config.h spell these limits out: keep them in step. */
_Static_assert(HYDRATE_QUEUE_DEPTH_MAX == 1024, "update HYDRATE_QUEUE_DEPTH_SYNTAX");
_Static_assert(HYDRATE_BLOCK_SIZE_MIN == 4096 && HYDRATE_BLOCK_SIZE_MAX == (64u << 20) &&
                       BLOCK_SIZE_ALIGN == 4096,
               "update HYDRATE_BLOCK_SIZE_SYNTAX");

int hydrate_parse_queue_depth(const char *s, unsigned *ret) {
        uint64_t v;

        if (strcmp(s, "auto") == 0) {
                *ret = HYDRATE_QUEUE_DEPTH_AUTO;
                return 0;
        }
        if (parse_unsigned(s, 1, HYDRATE_QUEUE_DEPTH_MAX, &v) < 0)
                return -EINVAL;
        *ret = (unsigned)v;
        return 0;
}

int hydrate_parse_block_size(const char *s, uint64_t *ret) {
        uint64_t v;

        if (parse_size(s, &v) < 0 || v % BLOCK_SIZE_ALIGN != 0 || v < HYDRATE_BLOCK_SIZE_MIN ||
            v > HYDRATE_BLOCK_SIZE_MAX)
                return -EINVAL;
        *ret = v;
        return 0;
}

int hydrate_parse_rate_limit(const char *s, uint64_t *ret) {
        if (strcasecmp(s, "off") == 0 || strcasecmp(s, "none") == 0) {
                *ret = 0;
                return 0;
        }
        return parse_size(s, ret) < 0 ? -EINVAL : 0;
}

static const char *const mode_names[_HYDRATE_MODE_MAX] = {
        [HYDRATE_MODE_FULL] = "full",
        [HYDRATE_MODE_USED] = "used",
};

const char *hydrate_mode_to_string(HydrateMode mode) {
        return mode >= 0 && mode < _HYDRATE_MODE_MAX ? mode_names[mode] : NULL;
}

int hydrate_parse_mode(const char *s, HydrateMode *ret) {
        for (HydrateMode m = 0; m < _HYDRATE_MODE_MAX; m++)
                if (streq(s, mode_names[m])) {
                        *ret = m;
                        return 0;
                }
        return -EINVAL;
}

static int parse_queue_depth(Parser *p, const char *key, const char *value) {
        if (hydrate_parse_queue_depth(value, &p->settings.queue_depth) < 0)
                return parser_fail_value(p, key, value, HYDRATE_QUEUE_DEPTH_SYNTAX);
        return 0;
}

static int parse_block_size(Parser *p, const char *key, const char *value) {
        if (hydrate_parse_block_size(value, &p->settings.block_size) < 0)
                return parser_fail_value(p, key, value, HYDRATE_BLOCK_SIZE_SYNTAX);
        return 0;
}

static int parse_rate_limit(Parser *p, const char *key, const char *value) {
        if (hydrate_parse_rate_limit(value, &p->settings.rate_limit) < 0)
                return parser_fail_value(p, key, value, HYDRATE_RATE_LIMIT_SYNTAX);
        return 0;
}

static int parse_mode(Parser *p, const char *key, const char *value) {
        if (hydrate_parse_mode(value, &p->settings.mode) < 0)
                return parser_fail_value(p, key, value, HYDRATE_MODE_SYNTAX);
        return 0;
}

/* Every word must be an absolute path; whether it exists is found out when it is used. */
static int parse_hot_paths(Parser *p, const char *key, const char *value) {
        for (const char *w = value + strspn(value, WHITESPACE); *w; w += strspn(w, WHITESPACE)) {
                size_t len = strcspn(w, WHITESPACE);

                if (w[0] != '/')
                        return parser_fail(p, -EINVAL, "invalid path '%s' in %s= (expected %s)",
                                           ESCAPED(w, len), key, HYDRATE_HOT_PATHS_SYNTAX);
                w += len;
        }
        if (strlen(value) >= sizeof(p->settings.hot_paths)) /* cannot be: lines are shorter */
                return parser_fail_value(p, key, value, HYDRATE_HOT_PATHS_SYNTAX);
        snprintf(p->settings.hot_paths, sizeof(p->settings.hot_paths), "%s", value);
        return 0;
}

#define SETTING(field) offsetof(HydrateSettings, field), sizeof(((HydrateSettings *)NULL)->field)

static const struct HydrateKey {
        const char *name;
        size_t offset; /* of the field in HydrateSettings, reset to its default by "Key=" */
        size_t size;
        int (*parse)(Parser *p, const char *key, const char *value);
} hydrate_keys[] = {
        {"Enabled", SETTING(enabled), parse_enabled},
        {"QueueDepth", SETTING(queue_depth), parse_queue_depth},
        {"BlockSize", SETTING(block_size), parse_block_size},
        {"RateLimit", SETTING(rate_limit), parse_rate_limit},
        {"Mode", SETTING(mode), parse_mode},
        {"HotPaths", SETTING(hot_paths), parse_hot_paths},
        {"Yield", SETTING(yield), parse_yield},
};

static int parse_hydrate_key(Parser *p, const char *key, const char *value) {
        HydrateSettings defaults;

        for (size_t i = 0; i < ELEMENTSOF(hydrate_keys); i++) {
                const struct HydrateKey *k = &hydrate_keys[i];

                if (!streq(key, k->name))
                        continue;
                if (!isempty(value))
                        return k->parse(p, key, value);
                hydrate_settings_init(&defaults);
                memcpy((char *)&p->settings + k->offset, (char *)&defaults + k->offset, k->size);
                return 0;
        }
        return parser_fail(p, -EINVAL, "unknown key '%s' in section [Hydrate]",
                           ESCAPED(key, SIZE_MAX));
}

static bool is_char_class(const char *name, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(char_classes); i++)
                if (strlen(char_classes[i]) == len && strncmp(name, char_classes[i], len) == 0)
                        return true;
        return false;
}

/*
 * One element of a bracket expression at *@s: a character, "\c", "[.c.]", "[=c=]" or a class
 * "[:name:]". Stores its character in *@ret_c (-1 for a class) and moves *@s past it.
 * Returns NULL, or why the element is malformed.
 */
static const char *bracket_element(const char **s, int *ret_c) {
        const char *p = *s;

        if (p[0] == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
                const char end[3] = {p[1], ']', '\0'}, *close = strstr(p + 2, end);

                if (!close)
                        return p[1] == ':' ? "'[:' without its ':]'"
                                           : "'[.' or '[=' without its end";
                if (p[1] == ':' && !is_char_class(p + 2, (size_t)(close - p - 2)))
                        return "unknown character class";
                if (p[1] != ':' && close - p - 2 != 1)
                        return "a collating element must be a single character";
                *ret_c = p[1] == ':' ? -1 : (unsigned char)p[2];
                *s = close + 2;
                return NULL;
        }
        if (p[0] == '\\' && p[1])
                p++;
        if (!*p)
                return "'[' without a closing ']' (a literal '[' is written \\[)";
        *ret_c = (unsigned char)*p;
        *s = p + 1;
        return NULL;
}

/* The bracket expression at *@s ('['): moves *@s past its ']'. Returns NULL, or what is wrong. */
static const char *bracket_problem(const char **s) {
        const char *p = *s + 1 + (((*s)[1] == '!' || (*s)[1] == '^')), *why;

        /* A ']' right after the '[' (or "[!") is a member, not the end. */
        for (bool first = true;; first = false) {
                int lo, hi;

                if (*p == ']' && !first) {
                        *s = p + 1;
                        return NULL;
                }
                why = bracket_element(&p, &lo);
                if (why)
                        return why;
                if (p[0] != '-' || p[1] == ']' || !p[1])
                        continue;
                p++;
                why = bracket_element(&p, &hi);
                if (why)
                        return why;
                if (lo < 0 || hi < 0)
                        return "a character class cannot bound a range";
                if (hi < lo)
                        return "a reversed range matches nothing";
        }
}

/*
 * Why fnmatch(3) pattern @s cannot be what was meant, or NULL. fnmatch() reads an unclosed '['
 * as a literal one, and a trailing '\', an unknown class or a reversed range as something that
 * matches nothing, all without a word.
 */
static const char *glob_problem(const char *s) {
        for (const char *p = s; *p;) {
                if (*p == '\\') {
                        if (!p[1])
                                return "a '\\' at the end escapes nothing";
                        p += 2;
                } else if (*p == '[') {
                        const char *why = bracket_problem(&p);

                        if (why)
                                return why;
                } else {
                        p++;
                }
        }
        return NULL;
}

/* Refuses a pattern (@len bytes at @w) that can never match what key @k tests. */
static int check_pattern(Parser *p, MatchKey k, const char *w, size_t len) {
        char pattern[CONFIG_LINE_MAX + 1];
        const char *s = pattern, *why;

        (void)snprintf(pattern, sizeof(pattern), "%.*s", (int)MIN(len, (size_t)CONFIG_LINE_MAX), w);
        if (k == MATCH_DEVICE_NAME && strncmp(s, "/dev/", 5) == 0)
                s += 5;
        why = strchr(s, '/') ? match_key_no_slash[k] : glob_problem(s);
        if (!why)
                return 0;
        return parser_fail(p, -EINVAL, "invalid pattern '%s' in %s= (%s)",
                           ESCAPED(pattern, SIZE_MAX), match_key_names[k], why);
}

static int parse_match_key(Parser *p, const char *key, const char *value) {
        for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++) {
                if (!streq(key, match_key_names[k]))
                        continue;
                if (isempty(value)) {
                        p->match[k] = strv_free(p->match[k]);
                        return 0;
                }
                for (const char *w = value + strspn(value, WHITESPACE); *w;
                     w += strspn(w, WHITESPACE)) {
                        size_t len = strcspn(w, WHITESPACE);
                        int r = check_pattern(p, k, w, len);

                        if (r < 0)
                                return r;
                        w += len;
                }
                if (strv_extend_words(&p->match[k], value) < 0)
                        return parser_fail(p, -ENOMEM, "out of memory");
                return 0;
        }
        return parser_fail(p, -EINVAL, "unknown key '%s' in section [Match]",
                           ESCAPED(key, SIZE_MAX));
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

static bool patterns_match(char **patterns, MatchKey k, const char *value) {
        for (char **i = patterns; *i; i++) {
                if (k == MATCH_DEVICE_NAME ? device_name_matches(*i, value)
                                           : !isempty(value) && fnmatch(*i, value, 0) == 0)
                        return true;
        }
        return false;
}

static bool parser_matches(const Parser *p, const MatchTarget *target) {
        const MatchTarget none = {};
        const MatchTarget *t = target ?: &none;
        const char *values[_MATCH_KEY_MAX] = {
                [MATCH_VOLUME_ID] = t->volume_id,
                [MATCH_DEVICE_NAME] = t->device_name,
                [MATCH_KERNEL_NAME] = t->kernel_name,
        };

        for (MatchKey k = 0; k < _MATCH_KEY_MAX; k++)
                if (p->match[k] && !patterns_match(p->match[k], k, values[k]))
                        return false;
        return true;
}

static char *path_join(const char *dir, const char *name) {
        char *r;

        return asprintf(&r, "%s/%s", dir, name) < 0 ? NULL : r;
}

/* Reads @fd to its end, at most CONFIG_FILE_SIZE_MAX - 1 bytes, NUL-terminated. */
static int read_fd(int fd, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;

        for (;;) {
                ssize_t n;

                if (size >= CONFIG_FILE_SIZE_MAX)
                        return -EFBIG;
                if (allocated - size < 2) {
                        char *grown;

                        /* Room for CONFIG_FILE_SIZE_MAX - 1 bytes, the NUL and one byte more,
                         * so that a file of the largest size allowed is seen to end. */
                        allocated = MIN(allocated ? allocated * 2 : 4096, CONFIG_FILE_SIZE_MAX + 1);
                        grown = realloc(buf, allocated);
                        if (!grown)
                                return -ENOMEM;
                        buf = grown;
                }
                n = read(fd, buf + size, allocated - size - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                size += (size_t)n;
        }
        buf[size] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

/* Stores "PATH: cannot read: <reason>" in *ret_error; "%m" in @format is @error. Returns @error. */
static int fail_read(char **ret_error, int error, const char *path, const char *format, ...)
        _printf_(4, 5);
static int fail_read(char **ret_error, int error, const char *path, const char *format, ...) {
        _cleanup_free_ char *name = NULL, *why = NULL;
        va_list ap;
        int r;

        if (!ret_error)
                return error;
        errno = -error;
        va_start(ap, format);
        r = vasprintf(&why, format, ap);
        va_end(ap);
        if (r < 0)
                why = NULL;
        name = escape_path(path);
        if (r < 0 || !name || asprintf(ret_error, "%s: cannot read: %s", name, why) < 0)
                *ret_error = NULL;
        return error;
}

/*
 * After a lookup of @path failed with ENOENT: 0 if nothing is there, or -ENOLINK (with
 * *ret_error set) if @path is a symbolic link to something that does not exist. A dangling link
 * is a mistake, not an absent file: it must not silently hide or replace another file.
 */
static int check_dangling(const char *path, char **ret_error) {
        _cleanup_free_ char *target = NULL;
        char buf[PATH_MAX];
        ssize_t n;

        n = readlink(path, buf, sizeof(buf) - 1);
        if (n < 0)
                return 0; /* nothing there (or gone since, or replaced by a file: also fine) */
        buf[n] = '\0';
        target = escape_path(buf);
        if (!target)
                return -ENOMEM;
        return fail_read(ret_error, -ENOLINK, path, "symbolic link to '%s', which does not exist",
                         target);
}

/* /dev/null, or a symbolic link to it: a file that is masked, as systemd has it. */
static bool is_dev_null(const struct stat *st) {
        return S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3);
}

/* Refuses anything but a regular file (or /dev/null): a FIFO would block, a device is no file. */
static int check_regular(const struct stat *st, const char *path, char **ret_error) {
        if (S_ISREG(st->st_mode) || is_dev_null(st))
                return 0;
        return fail_read(ret_error, S_ISDIR(st->st_mode) ? -EISDIR : -EBADFD, path,
                         "not a regular file but %s", file_type_name(st->st_mode));
}

/*
 * Reads the configuration file @path whole, NUL-terminated; /dev/null, or a symbolic link to it,
 * reads as empty. Only a regular file is ever opened, and without blocking: a FIFO is refused,
 * not waited on. Returns 1, 0 if @path does not exist, or a negative errno with *ret_error set.
 */
static int read_config_file(const char *path, char **ret, size_t *ret_size, char **ret_error) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (stat(path, &st) < 0)
                return errno == ENOENT ? check_dangling(path, ret_error)
                                       : fail_read(ret_error, -errno, path, "%m");
        r = check_regular(&st, path, ret_error);
        if (r < 0)
                return r;
        if (is_dev_null(&st)) {
                *ret = NULL;
                *ret_size = 0;
                return 1;
        }
        /* O_NONBLOCK: if a FIFO has taken the file's place since stat(), fstat() says so. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return fail_read(ret_error, -errno, path, "%m");
        if (fstat(fd, &st) < 0)
                return fail_read(ret_error, -errno, path, "%m");
        if (!S_ISREG(st.st_mode))
                return fail_read(ret_error, -EBADFD, path, "not a regular file but %s",
                                 file_type_name(st.st_mode));
        r = st.st_size >= (off_t)CONFIG_FILE_SIZE_MAX ? -EFBIG : read_fd(fd, ret, ret_size);
        if (r < 0)
                return fail_read(ret_error, r, path, "%m");
        return 1;
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

/* config_apply_file(), but a missing file is fine: returns 1 if applied or skipped, 0 if
 * missing. */
static int apply_if_exists(const char *path, const MatchTarget *target, HydrateSettings *settings,
                           char **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        int r;

        r = read_config_file(path, &buf, &size, ret_error);
        if (r <= 0)
                return r;
        r = config_parse_buffer(path, buf, size, target, settings, ret_error);
        return r < 0 ? r : 1;
}

/**
 * config_apply_file() - parse one file and, if its [Match] matches, apply it to @settings.
 * @path: the file.
 * @target: what [Match] tests; NULL is a device about which nothing is known.
 * @settings: in: current settings; out: with the file's [Hydrate] applied if it matches.
 * @ret_error: NULL on success; on failure a malloc'ed message (NULL if out of memory).
 *
 * The file is validated in full even when it does not match. @settings is left untouched on
 * failure.
 *
 * Return: 0; -EINVAL for a bad file; -ENOENT if it does not exist; -ENOLINK for a dangling
 * symbolic link; -EISDIR or -EBADFD for something that is not a regular file; another negative
 * errno.
 */
int config_apply_file(const char *path, const MatchTarget *target, HydrateSettings *settings,
                      char **ret_error) {
        int r;

        if (ret_error)
                *ret_error = NULL;
        r = apply_if_exists(path, target, settings, ret_error);
        if (r == 0)
                return fail_read(ret_error, -ENOENT, path, "%m");
        return r < 0 ? r : 0;
}

static int apply_main_file(const char *const *dirs, size_t n_dirs, const MatchTarget *target,
                           HydrateSettings *settings, char **ret_error) {
        for (size_t i = n_dirs; i > 0; i--) {
                _cleanup_free_ char *path = NULL;
                int r;

                path = path_join(dirs[i - 1], CONFIG_FILE_NAME);
                if (!path)
                        return -ENOMEM;
                r = apply_if_exists(path, target, settings, ret_error);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return 0;
}

static void dropin_list_done(DropInList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].path);
        }
        free(l->items);
        *l = (DropInList){};
}

static int dropin_list_add(DropInList *l, const char *dir, const char *name, size_t priority) {
        DropIn *grown = reallocarray(l->items, l->n + 1, sizeof(DropIn));
        DropIn *d;

        if (!grown)
                return -ENOMEM;
        l->items = grown;
        d = &l->items[l->n];
        *d = (DropIn){.name = strdup(name), .path = path_join(dir, name), .priority = priority};
        if (!d->name || !d->path) {
                free(d->name);
                free(d->path);
                return -ENOMEM;
        }
        l->n++;
        return 0;
}

static int dropin_filter(const struct dirent *de) {
        size_t len = strlen(de->d_name);

        return de->d_name[0] != '.' && len > strlen(".conf") &&
               streq(de->d_name + len - strlen(".conf"), ".conf");
}

/* By name; for the same name, the highest priority first. */
static int dropin_compare(const void *a, const void *b) {
        const DropIn *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        if (c != 0)
                return c;
        return x->priority < y->priority ? 1 : x->priority > y->priority ? -1 : 0;
}

static int collect_dropins_in(const char *dir, size_t priority, DropInList *l, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        struct dirent **entries = NULL;
        int n, r = 0;

        path = path_join(dir, CONFIG_DROPIN_DIR_NAME);
        if (!path)
                return -ENOMEM;
        n = scandir(path, &entries, dropin_filter, NULL);
        if (n < 0)
                return errno == ENOENT ? check_dangling(path, ret_error)
                                       : fail_read(ret_error, -errno, path, "%m");
        for (int i = 0; i < n; i++) {
                if (r >= 0)
                        r = dropin_list_add(l, path, entries[i]->d_name, priority);
                free(entries[i]);
        }
        free(entries);
        return r;
}

static int apply_dropins(const char *const *dirs, size_t n_dirs, const MatchTarget *target,
                         HydrateSettings *settings, char **ret_error) {
        _cleanup_(dropin_list_done) DropInList l = {};
        int r;

        for (size_t i = 0; i < n_dirs; i++) {
                r = collect_dropins_in(dirs[i], i, &l, ret_error);
                if (r < 0)
                        return r;
        }
        if (l.n > 0)
                qsort(l.items, l.n, sizeof(DropIn), dropin_compare);
        for (size_t i = 0; i < l.n; i++) {
                if (i > 0 && streq(l.items[i].name, l.items[i - 1].name))
                        continue; /* hidden by the same name in a higher-priority directory */
                r = apply_if_exists(l.items[i].path, target, settings, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A directory of the search path may be missing, but not be a dangling symbolic link. */
static int check_dirs(const char *const *dirs, size_t n_dirs, char **ret_error) {
        for (size_t i = 0; i < n_dirs; i++) {
                struct stat st;
                int r;

                if (stat(dirs[i], &st) == 0 || errno != ENOENT)
                        continue; /* what is wrong with it is found when it is read */
                r = check_dangling(dirs[i], ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/**
 * config_load() - merge the configuration that applies to @target.
 * @dirs: NULL-terminated search path, lowest priority first; NULL is an empty path.
 * @target: what [Match] tests; NULL is a device about which nothing is known.
 * @settings: in: defaults; out: merged result, left untouched on failure.
 * @ret_error: NULL on success; on failure a malloc'ed message (NULL if out of memory).
 *
 * See config.h for the order in which files apply.
 *
 * Return: 0, -EINVAL for a bad file, or another negative errno (see config_apply_file()).
 */
int config_load(const char *const *dirs, const MatchTarget *target, HydrateSettings *settings,
                char **ret_error) {
        HydrateSettings merged = *settings;
        size_t n_dirs = 0;
        int r;

        if (ret_error)
                *ret_error = NULL;
        while (dirs && dirs[n_dirs])
                n_dirs++;
        r = check_dirs(dirs, n_dirs, ret_error);
        if (r < 0)
                return r;
        r = apply_main_file(dirs, n_dirs, target, &merged, ret_error);
        if (r < 0)
                return r;
        r = apply_dropins(dirs, n_dirs, target, &merged, ret_error);
        if (r < 0)
                return r;
        *settings = merged;
        return 0;
}
