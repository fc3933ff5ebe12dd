/* SPDX-License-Identifier: MIT */
/*
 * Configuration, systemd-style: hydrate.conf plus hydrate.conf.d/ drop-ins from a search path,
 * each file optionally restricted to some devices by a [Match] section, later files winning.
 * The merge is pure: it needs no device, only the names a [Match] can test.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hydrate-settings.h"

#define CONFIG_FILE_NAME "hydrate.conf"
#define CONFIG_DROPIN_DIR_NAME "hydrate.conf.d"
#define CONFIG_LINE_MAX 199 /* longer lines are an error, never silently truncated */

/* HydrateSettings holds HotPaths= by value: a line of a file. */
_Static_assert(HYDRATE_HOT_PATHS_MAX == CONFIG_LINE_MAX + 1, "HotPaths= fits one line");

/* What a [Match] section can test. Any field may be NULL or "" (unknown): it then matches nothing.
 */
typedef struct MatchTarget {
        const char *volume_id;   /* vol-0123456789abcdef0 */
        const char *device_name; /* block-device mapping: sdf, /dev/sdf, xvdf ... */
        const char *kernel_name; /* nvme1n1 */
} MatchTarget;

void hydrate_settings_init(HydrateSettings *s);

/*
 * The value syntax of the [Hydrate] keys, shared by the files and the command-line options so
 * that the two cannot drift apart. Each returns 0, or -EINVAL with *ret untouched.
 * hydrate_parse_queue_depth(): "auto" (HYDRATE_QUEUE_DEPTH_AUTO) or 1..HYDRATE_QUEUE_DEPTH_MAX.
 * hydrate_parse_block_size(): a size that is a multiple of 4K within [MIN, MAX].
 * hydrate_parse_rate_limit(): a size in bytes per second; "off" or "none" (any case) is 0.
 */
int hydrate_parse_queue_depth(const char *s, unsigned *ret);
int hydrate_parse_block_size(const char *s, uint64_t *ret);
int hydrate_parse_rate_limit(const char *s, uint64_t *ret);
/* hydrate_parse_mode(): "full" or "used". */
int hydrate_parse_mode(const char *s, HydrateMode *ret);
/* hydrate_parse_aws(): "auto" (act on AWS's findings) or "no". */
int hydrate_parse_aws(const char *s, bool *ret);
/* hydrate_mode_to_string() - "full", "used", or NULL for an invalid value. */
const char *hydrate_mode_to_string(HydrateMode mode);

#define HYDRATE_QUEUE_DEPTH_SYNTAX "auto or an integer from 1 to 1024"
#define HYDRATE_BLOCK_SIZE_SYNTAX "a multiple of 4096 from 4K to 64M"
#define HYDRATE_RATE_LIMIT_SYNTAX "bytes per second such as 200M, or 0, off or none"
#define HYDRATE_MODE_SYNTAX "full or used"
#define HYDRATE_HOT_PATHS_SYNTAX "absolute paths separated by spaces"
#define HYDRATE_AWS_SYNTAX "auto or no"

/*
 * config_load() - merge the configuration that applies to @target.
 * @dirs: NULL-terminated search path, lowest priority first (e.g. /usr/lib/ebs-hydrate, then
 *        /etc/ebs-hydrate). Missing directories and files are fine; a dangling symbolic link is
 *        not, nor is anything but a regular file in place of one (/dev/null aside: it masks).
 * @settings: in: defaults; out: merged result.
 * @ret_error: on failure, a malloc'ed "FILE:LINE: what is wrong" (or "FILE: cannot read: why"),
 *             with every byte of the file's name and contents that is not printable ASCII
 *             escaped (cescape() in parse.h).
 *
 * Order: hydrate.conf of the highest-priority directory that has one, then every
 * hydrate.conf.d/<name>.conf sorted by <name> (a name in a higher-priority directory hides the
 * same name in a lower one). A file whose [Match] does not match @target is skipped, but it is
 * still fully validated: a bad file is an error whether it applies or not.
 * Returns 0, -EINVAL for a bad file, -ENOLINK for a dangling symbolic link, -EISDIR or -EBADFD
 * for something that is not a regular file, or another negative errno for I/O errors.
 */
int config_load(const char *const *dirs, const MatchTarget *target, HydrateSettings *settings,
                char **ret_error);

/*
 * config_apply_file() - parse one file and, if its [Match] matches, apply it to @settings.
 * Same error contract as config_load(); -ENOENT if the file does not exist. Exposed for tests
 * and for `ebs-hydratectl` later.
 */
int config_apply_file(const char *path, const MatchTarget *target, HydrateSettings *settings,
                      char **ret_error);

/*
 * config_parse_buffer() - what config_apply_file() does once it has read the file: parse @size
 * bytes at @data as the file @name (for messages) and apply them if their [Match] matches.
 * No I/O, for the fuzzer and tests. Returns 0, -EINVAL (*ret_error "NAME:LINE: ...") or -ENOMEM.
 */
int config_parse_buffer(const char *name, const char *data, size_t size, const MatchTarget *target,
                        HydrateSettings *settings, char **ret_error);

/* device_name_matches() - glob @pattern against mapping @name, treating sdX/xvdX and /dev/ prefixes
 * alike. */
bool device_name_matches(const char *pattern, const char *name);
