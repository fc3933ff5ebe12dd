/* SPDX-License-Identifier: MIT */
/*
 * What a [Hydrate] section sets, as a type: the configuration (config/) fills it from
 * hydrate.conf and the command line, the hydrator (core/) runs by it. The type lives here so
 * that neither links the other for it; parsing and the defaults are config.h's.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* HotPaths= with its NUL: one line of a file (config.h's CONFIG_LINE_MAX). */
#define HYDRATE_HOT_PATHS_MAX 200

#define HYDRATE_QUEUE_DEPTH_AUTO 0u /* QueueDepth=auto: the hydrator finds it (tuner.h) */
#define HYDRATE_DEFAULT_QUEUE_DEPTH HYDRATE_QUEUE_DEPTH_AUTO
#define HYDRATE_DEFAULT_BLOCK_SIZE (UINT64_C(1) << 20)
#define HYDRATE_QUEUE_DEPTH_MAX 1024u
#define HYDRATE_BLOCK_SIZE_MIN UINT64_C(4096)
#define HYDRATE_BLOCK_SIZE_MAX (UINT64_C(64) << 20)

/* Mode=: what to read of a device whose file systems say which blocks are free. */
typedef enum HydrateMode {
        HYDRATE_MODE_FULL, /* every block; free space last */
        HYDRATE_MODE_USED, /* free space is never read */
        _HYDRATE_MODE_MAX,
} HydrateMode;

#define HYDRATE_DEFAULT_MODE HYDRATE_MODE_FULL

/* What a [Hydrate] section sets. Defaults come from hydrate_settings_init(). */
typedef struct HydrateSettings {
        bool enabled;         /* Enabled= */
        unsigned queue_depth; /* QueueDepth=, 1..HYDRATE_QUEUE_DEPTH_MAX, or _AUTO */
        uint64_t block_size;  /* BlockSize=, multiple of 4096 within [MIN, MAX] */
        uint64_t rate_limit;  /* RateLimit=, bytes per second, 0 = unlimited */
        HydrateMode mode;     /* Mode= */
        /* HotPaths=: absolute paths separated by spaces, "" for none; a later assignment
         * replaces an earlier one. Fits one line of a file, so it is kept by value. */
        char hot_paths[HYDRATE_HOT_PATHS_MAX];
        bool yield; /* Yield=: give way to other I/O on the device (tuner.h) */
        bool aws;   /* Aws=auto: act on what ebs-hydrate-aws learns (ebs-hydrate/findings.h) */
} HydrateSettings;
