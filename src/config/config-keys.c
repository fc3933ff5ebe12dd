/* SPDX-License-Identifier: MIT */
/*
 * The [Hydrate] section: its defaults, the table of its keys, and the value syntax of each, which
 * the command-line options of ebs-hydrated share (config.h) so that the two cannot drift apart.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config-internal.h"
#include "config.h"
#include "parse.h"
#include "string-table.h"
#include "util.h"

#define BLOCK_SIZE_ALIGN UINT64_C(4096)

void hydrate_settings_init(HydrateSettings *s) {
        *s = (HydrateSettings){
                .enabled = true,
                .queue_depth = HYDRATE_DEFAULT_QUEUE_DEPTH,
                .block_size = HYDRATE_DEFAULT_BLOCK_SIZE,
                .rate_limit = 0,
                .mode = HYDRATE_DEFAULT_MODE,
                .yield = true,
                .aws = true,
        };
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

int hydrate_parse_aws(const char *s, bool *ret) {
        if (streq(s, "auto"))
                *ret = true;
        else if (streq(s, "no"))
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

static int parse_aws(Parser *p, const char *key, const char *value) {
        if (hydrate_parse_aws(value, &p->settings.aws) < 0)
                return parser_fail_value(p, key, value, HYDRATE_AWS_SYNTAX);
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

static const char *const hydrate_mode_table[_HYDRATE_MODE_MAX] = {
        [HYDRATE_MODE_FULL] = "full",
        [HYDRATE_MODE_USED] = "used",
};

DEFINE_STRING_TABLE_TO_STRING(hydrate_mode, HydrateMode)

int hydrate_parse_mode(const char *s, HydrateMode *ret) {
        ssize_t m = string_table_lookup(hydrate_mode_table, ELEMENTSOF(hydrate_mode_table), s);

        if (m < 0)
                return (int)m;
        *ret = (HydrateMode)m;
        return 0;
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
        {"Aws", SETTING(aws), parse_aws},
};

int parse_hydrate_key(Parser *p, const char *key, const char *value) {
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
