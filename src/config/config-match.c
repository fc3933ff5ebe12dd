/* SPDX-License-Identifier: MIT */
/*
 * The [Match] section: VolumeId=, DeviceName= and KernelName= globs, refused when fnmatch(3) would
 * read them as something other than what was meant or when they can never match, and tested
 * against the names of a device.
 */

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "config-internal.h"
#include "config.h"
#include "string-table.h"
#include "util.h"

static const char *const match_key_table[_MATCH_KEY_MAX] = {
        [MATCH_VOLUME_ID] = "VolumeId",
        [MATCH_DEVICE_NAME] = "DeviceName",
        [MATCH_KERNEL_NAME] = "KernelName",
};

DEFINE_PRIVATE_STRING_TABLE_LOOKUP(match_key, MatchKey)

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

/* Appends each whitespace-separated word of @words to the NULL-terminated list *@l. */
static int strv_extend_words(char ***l, const char *words) {
        size_t n = 0, allocated;

        while (*l && (*l)[n])
                n++;
        allocated = *l ? n + 1 : 0; /* at least: an extra grow costs nothing but time */
        for (const char *w = words + strspn(words, WHITESPACE); *w; w += strspn(w, WHITESPACE)) {
                size_t len = strcspn(w, WHITESPACE);

                if (ARRAY_GROW(*l, allocated, n + 2) < 0)
                        return -ENOMEM;
                (*l)[n] = strndup(w, len);
                if (!(*l)[n])
                        return -ENOMEM;
                (*l)[++n] = NULL;
                w += len;
        }
        return 0;
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
                           ESCAPED(pattern, SIZE_MAX), match_key_to_string(k), why);
}

int parse_match_key(Parser *p, const char *key, const char *value) {
        MatchKey k = match_key_from_string(key);

        if (k < 0)
                return parser_fail(p, -EINVAL, "unknown key '%s' in section [Match]",
                                   ESCAPED(key, SIZE_MAX));
        if (isempty(value)) {
                p->match[k] = strv_free(p->match[k]);
                return 0;
        }
        for (const char *w = value + strspn(value, WHITESPACE); *w; w += strspn(w, WHITESPACE)) {
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

static bool patterns_match(char **patterns, MatchKey k, const char *value) {
        for (char **i = patterns; *i; i++) {
                if (k == MATCH_DEVICE_NAME ? device_name_matches(*i, value)
                                           : !isempty(value) && fnmatch(*i, value, 0) == 0)
                        return true;
        }
        return false;
}

bool parser_matches(const Parser *p, const MatchTarget *target) {
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
