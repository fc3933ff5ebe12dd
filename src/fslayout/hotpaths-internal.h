/* SPDX-License-Identifier: MIT */
/*
 * What hotpaths.c (the HotPaths= entries: what each is, what is said of it) and hotpaths-walk.c
 * (the threads that list the directories and map the files below them) share. Not for other
 * modules: hotpaths.h is the interface.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hotpaths.h"
#include "parse.h"

/* A path as a warning shows it: file names can hold any byte (parse.h). A log line is no longer. */
#define SHOWN(path) CESCAPE((path), SIZE_MAX, 1024)

/* Directories already walked under one entry, by inode number (one file system per entry): a
 * directory bind-mounted below itself is walked once, not forever. Open addressing. */
typedef struct InodeSet {
        uint64_t *v; /* inode + 1; 0 is an empty slot */
        size_t n, allocated;
} InodeSet;

/* One HotPaths= entry and what its walk met, for the warnings said when all is walked. */
typedef struct Top {
        char *path;
        dev_t dev; /* its file system: the walk enters no other */
        bool is_dir;
        size_t files;   /* regular files met */
        uint64_t bytes; /* of their extents on the disk */
        bool elsewhere; /* files on a device other than the disk */
        bool warned;    /* something about it was said already */
        InodeSet seen;
} Top;

typedef struct Job Job; /* hotpaths-walk.c's */

typedef struct Walk {
        pthread_mutex_t lock;
        pthread_cond_t changed;
        Job *lists, *maps; /* waiting; maps first, so that what waits stays small */
        size_t maps_waiting;
        unsigned busy; /* threads with a job */
        bool stop;     /* out of memory, or HOTPATHS_RANGES_MAX reached */
        int error;     /* -ENOMEM */
        bool full;
        dev_t disk;
        const char *sysfs_root;
        ByteRange *ranges;
        size_t n, allocated;
} Walk;

/* hotpaths_walk_add_top() - the first job of the entry @top, whose dev, is_dir and files are
 * set: itself, a file to map or a directory to list (its symbolic link followed). 0 or -ENOMEM. */
int hotpaths_walk_add_top(Walk *w, Top *top);

/* hotpaths_walk_run() - runs the jobs, in up to HOTPATHS_THREADS threads (the caller's
 * included) as they can be started, until there are none left or the walk stops. */
void hotpaths_walk_run(Walk *w);

/* hotpaths_walk_done() - frees the jobs that still wait (a walk that stopped). */
void hotpaths_walk_done(Walk *w);
