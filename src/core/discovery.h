/* SPDX-License-Identifier: MIT */
/*
 * Mapping a device's file systems (fslayout_discover_chunks) and its HotPaths= (hotpaths_resolve)
 * in a thread of its own, while the event loop goes on: both read the device with blocking reads
 * (libblkid, libext2fs, FIEMAP), and a device that stops answering must not take the event
 * loop, the watchdog, STATUS= and SIGTERM with it. The device's counters in sysfs tell a slow
 * discovery (a cold volume: each first read ~0.1 s) from a stalled one (reads held, none
 * returned): a stall is said once, as for the reads of the hydration itself.
 * What the thread learns reaches the event loop as it goes, in this order: the blocks it is
 * about to read (@ahead, any number of times), the layout (@mapped), HotPaths= (@done).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "fslayout.h"
#include "state.h"
#include "util.h"

typedef struct Discovery Discovery;
typedef void (*discovery_done_t)(Discovery *d, void *userdata);
typedef void (*discovery_ahead_t)(Discovery *d, const ByteRange *ranges, size_t n, void *userdata);

typedef struct DiscoveryRequest {
        int fd;                 /* the device; the thread reads through a dup() of it */
        uint64_t size;          /* bytes */
        uint32_t chunk_size;    /* the layout comes by chunks of this size (the state's) */
        dev_t rdev;             /* for HotPaths= */
        const char *hot_paths;  /* HotPaths= as configured ("" for none) */
        const char *sysfs_root; /* "/sys" normally */
        const char *stat_path;  /* <sysfs>/block/<name>/stat, NULL to not watch for stalls */
        const char *key;        /* for the journal records */
        const char *devnode;    /* /dev/<name>, likewise */
        void (*stalled)(void *userdata); /* called when a stall is first seen; may be NULL */
        /* Device byte ranges the thread reads next (FsLayoutHints), in that order; may be NULL. */
        discovery_ahead_t ahead;
        /* The layout is known (discovery_result()); HotPaths= follows. May be NULL. */
        discovery_done_t mapped;
} DiscoveryRequest;

/* What the thread found: the layout once @mapped has been called, HotPaths= once @done has. */
typedef struct DiscoveryResult {
        int mapped; /* fslayout_discover_chunks(): >= 0 mapped, < 0 not (read whole, in order) */
        FsLayout layout; /* chunk kinds (taken over by the plan) and notes */
        char *error;     /* why not, when fslayout_discover() said */
        int hot_error;   /* hotpaths_resolve(): 0, or -ENOMEM */
        ByteRange *hot;  /* HotPaths= as device ranges */
        size_t n_hot;
} DiscoveryResult;

/*
 * discovery_start() - start mapping in a new thread; the callbacks of @req and @done run from
 * @event's loop (never from within this call): @done when it has finished. The strings of @req
 * are copied. The thread is named "discovery" (its walkers of HotPaths= "hotpaths"), so that the
 * block layer's traces tell its reads from the hydration's.
 * Return: 0, or a negative errno (nothing started).
 */
int discovery_start(Discovery **ret, sd_event *event, const DiscoveryRequest *req,
                    discovery_done_t done, void *userdata);

/* discovery_result() - the result: its layout fields once @mapped was called (or @done), its
 * HotPaths= fields once @done was; NULL before @mapped. */
DiscoveryResult *discovery_result(Discovery *d);

/* discovery_stalled_usec() - how long the device has held reads without returning any, while
 * discovery waits for it; 0 when it is not stalled (or cannot be watched). */
uint64_t discovery_stalled_usec(const Discovery *d);

/*
 * discovery_free() - release @d. A thread still blocked in the device is left to finish: it
 * frees what it owns when the device answers (the kernel keeps the process until then).
 * NULL-safe; returns NULL.
 */
Discovery *discovery_free(Discovery *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Discovery *, discovery_free)
