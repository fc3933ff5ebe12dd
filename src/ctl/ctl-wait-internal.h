/* SPDX-License-Identifier: MIT */
/*
 * The watching half of "ebs-hydratectl wait" (ctl-wait-watch.c): what the runtime directory
 * holds, kept up to date from inotify's names, so that a wake-up reads only the records that
 * changed (thousands stay there until the next boot); what the state files prove, read again
 * only when one of them changes; and a pidfd for each writer of a record waited on, so that a
 * daemon killed mid-run wakes the waiter, which then no longer believes what it last wrote.
 */
#pragma once

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "record.h"
#include "state.h"

typedef char WaitName[NAME_MAX + 1];

/* --- the records --- */

typedef struct SnapshotEntry {
        WaitName name;
        VolumeRecord record;
        struct timespec mtime; /* which of two records naming one disk is newer */
        uint64_t targets;      /* which targets its names match (Snapshot.match), as bits */
} SnapshotEntry;

typedef struct Snapshot {
        SnapshotEntry *items;
        size_t n, allocated;
        /* Which targets a record's names match, computed once as it is read: a wake-up then
         * looks at the few records its targets name, not at every one (NULL: all of them). */
        uint64_t (*match)(const VolumeRecord *r, void *userdata);
        void *match_data;
} Snapshot;

void snapshot_clear(Snapshot *s);
/*
 * snapshot_read() - every record in @dir, afresh; snapshot_update() - only the files @names
 * (read again, added, or dropped when gone or no longer a record to trust). A directory that
 * group or others may write to (without the sticky bit) is refused with -EPERM (logged): anyone
 * could plant "completed" there; so is, in any directory, a record owned by another user than
 * the directory's owner or root. A missing directory is empty.
 */
int snapshot_read(Snapshot *s, const char *dir);
int snapshot_update(Snapshot *s, const char *dir, const WaitName *names, size_t n);

/* --- what inotify says --- */

#define WAIT_CHANGES_MAX 256 /* more names than this in one look: everything is read again */

typedef struct WaitChanges {
        bool records_all; /* the directory itself changed, or too many names, or an overflow */
        WaitName *records;
        size_t n_records, records_allocated;
        bool states_all;
        WaitName *states; /* the keys of state files saved or renamed */
        size_t n_states, states_allocated;
} WaitChanges;

void wait_changes_clear(WaitChanges *c); /* empty again, memory kept */
void wait_changes_done(WaitChanges *c);

typedef struct Watch {
        int fd;          /* inotify */
        int parent_wd;   /* the runtime directory's parent, for it to appear, go, or be replaced */
        int dir_wd;      /* the runtime directory, while it is there */
        int state_wd;    /* the state directory (root), or -1 */
        const char *dir; /* the runtime directory, without a trailing slash */
        char *dir_buf;
        char *parent;
        const char *base; /* the runtime directory's name in its parent */
} Watch;

/* watch_init() - inotify, and the watches on @dir and its parent (a missing one is no error).
 * 0 or -errno (logged). */
int watch_init(Watch *w, const char *dir);
void watch_done(Watch *w);
/* watch_state_dir() - root's state directory too: its saves may complete a volume that has no
 * record. Its descriptor, or -1 for a caller who may not read it. */
int watch_state_dir(Watch *w, const char *state_dir);
/* watch_drain() - what inotify has, into @c (added to what it holds). 1 if anything that
 * matters changed, 0 if not, or -errno (logged). */
int watch_drain(Watch *w, WaitChanges *c);
/* watch_blind() - is even the runtime directory's parent not watched? Then a look each second. */
bool watch_blind(const Watch *w);

/* --- what the state files prove --- */

typedef struct StateProof {
        char key[STATE_KEY_MAX + 1];
        bool proven;         /* complete, or a Mode=used run's end */
        VolumeRecord record; /* what that amounts to, as a record */
} StateProof;

typedef struct StateCache {
        StateProof *items;
        size_t n, allocated;
} StateCache;

/* state_cache_get() - what the state file of @key proves (read once, then again only after
 * state_cache_forget()). False when nothing, or when @state_fd is -1. */
bool state_cache_get(StateCache *c, int state_fd, const char *key, VolumeRecord *ret);
/* state_cache_forget() - the state files of @c's changes are read again when asked for. */
void state_cache_forget(StateCache *c, const WaitChanges *changes);
void state_cache_done(StateCache *c);

/* --- the writers of the records waited on --- */

typedef struct Writer {
        pid_t pid;
        uint64_t start_time;
        int fd; /* its pidfd */
} Writer;

typedef struct Writers {
        Writer *items; /* watched: each with its pidfd */
        size_t n, allocated;
        Writer *wanted; /* to be watched from the next writers_sync() */
        size_t n_wanted, wanted_allocated;
        Writer *ended; /* those whose pidfd said so (a zombie still answers kill()) */
        size_t n_ended, ended_allocated;
        bool blind; /* one could not be given a pidfd (ENOSYS): a look each second */
} Writers;

/* writer_gone() - is the run that wrote @r over without saying so (killed, or its last record
 * lost)? Only a record that says the run goes on is asked. */
bool writer_gone(const Writers *w, const VolumeRecord *r);
/* writers_note_ended() - the writers whose pidfd (@fds, in the order of w->items) is readable
 * have ended. */
int writers_note_ended(Writers *w, const struct pollfd *fds);
/* writers_want() - @pid (started at @start_time) is to be watched until writers_sync(). */
int writers_want(Writers *w, pid_t pid, uint64_t start_time);
/* writers_sync() - pidfds for the writers wanted since the last sync, the others closed. True
 * when one of them is gone already (look again now). */
bool writers_sync(Writers *w);
void writers_done(Writers *w);
