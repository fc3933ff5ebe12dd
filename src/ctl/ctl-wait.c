/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl wait (see ctl-wait.h): what the targets name (their disks are identity's,
 * disks.h; the messages when none are found are ours), what the records say of them, and the
 * loop; the verdict on one record is ctl-wait-verdict.c's, the watching
 * ctl-wait-watch.c's. A record is read again when inotify names it (the runtime directory
 * holds every volume's until the next boot: a wake-up reads what changed, not all of them), a
 * state file (root) when its save lands, and a record whose writer ended without saying so
 * (its pidfd wakes us) no longer speaks for the run: there is no polling, and a daemon that
 * stops, restarts, starts after us or is killed is seen.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "alloc-util.h"
#include "ctl-wait-internal.h"
#include "ctl-wait.h"
#include "disks.h"
#include "log.h"
#include "parse.h"
#include "progress.h"
#include "state.h"
#include "sysfs.h"
#include "time-util.h"

/* --- targets --- */

/* What a target was found to be, a few volumes' worth ("vol-1 (nvme1n1), vol-2 (nvme2n1)"), and
 * the progress line on a terminal: longer is cut, never overrun. */
#define TARGET_VOLUMES_MAX 256
#define WAIT_LINE_MAX 512

typedef struct Target {
        const char *arg;
        const char *name; /* matched by name (volume id, kernel name, mapping name), or NULL */
        DiskSet disks;    /* the disks under a path: kernel names */
        WaitVerdict verdict;
        const char *why;
        bool known;          /* a record or state file names it (every disk of a path) */
        const char *missing; /* a disk of a path that no record names */
        char volumes[TARGET_VOLUMES_MAX]; /* "vol-1 (nvme1n1)": what it was found to be */
        uint64_t done_bytes, size_bytes;
        bool oom;     /* a writer could not be noted */
        uint64_t bit; /* this target's in SnapshotEntry.targets */
} Target;

/* What a judgement reads: the records, the state files' proofs (state_fd -1: none), and where
 * the writers of the records believed go. */
typedef struct WaitContext {
        const Snapshot *snapshot;
        StateCache *states;
        int state_fd;
        Writers *writers;
} WaitContext;

/* Says why the disks of a TARGET were not found (disks_of_target()). */
static void explain_disks(const DisksError *e, void *userdata) {
        switch (e->failure) {
        case DISKS_NO_MEMORY:
                (void)log_error_errno(e->error, "Out of memory");
                break;
        case DISKS_STAT:
                (void)log_error_errno(e->error, "%s: %m", e->path);
                break;
        case DISKS_NOT_BLOCK:
                (void)log_error_errno(e->error,
                                      "%s is not on a block device (device %u:%u): no volume "
                                      "can hold it",
                                      e->path, major(e->dev), minor(e->dev));
                break;
        case DISKS_OVERLAY_DEEP:
                (void)log_error_errno(e->error, "%s: overlays nested too deep to follow", e->path);
                break;
        case DISKS_OVERLAY_UNNAMED:
                (void)log_error_errno(e->error,
                                      "%s is on an overlay whose layers the mount table does "
                                      "not name: no volume can be found for it",
                                      e->path);
                break;
        case DISKS_OVERLAY_LAYER:
                (void)log_error_errno(e->error,
                                      "%s is on an overlay: its layer %s cannot be waited for",
                                      e->path, e->layer);
                break;
        }
}

/*
 * A TARGET with a '/' is a path: a block device, or a file on a mounted file system, whose disks
 * are waited for; without one a kernel name. Anything else is matched by name (volume id,
 * mapping name, a disk not attached yet). Returns 0; -ENOENT, -ENOTDIR or -ENODEV (logged) for
 * a path that can never name a volume; another -errno (logged) for one that could not be looked
 * at (EACCES: not the caller's to search).
 */
static int resolve_target(Target *t) {
        int r = disks_of_target(t->arg, &t->disks, explain_disks, NULL);

        if (r > 0)
                t->name = t->arg;
        return MIN(r, 0);
}

/* --- what the records and state files say --- */

static bool newer(const struct timespec *a, const struct timespec *b) {
        return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec : a->tv_nsec > b->tv_nsec;
}

/*
 * Is the disk of @r attached now, as it was when the record was written? Kernel and mapping names
 * are given again to other volumes (one detached, another attached), and records stay until the
 * next boot: the kernel's sequence number of the attachment tells them apart. Records without it
 * (older kernels) are believed.
 */
static bool record_attached(const VolumeRecord *r) {
        uint64_t seq;

        if (r->diskseq == 0)
                return true;
        return sysfs_disk_seq(r->kernel_name, &seq) >= 0 && seq == r->diskseq;
}

/* The newest record that @name names: by its volume id, which no other volume has, or by a
 * kernel or mapping name, then only for the attachment of the disk that is there now. */
static const VolumeRecord *find_by_name(const Snapshot *s, const char *name, bool kernel_only,
                                        uint64_t bit) {
        const SnapshotEntry *best = NULL;

        for (size_t i = 0; i < s->n; i++) {
                const SnapshotEntry *e = &s->items[i];
                const VolumeRecord *r = &e->record;
                bool m;

                if (!(e->targets & bit)) /* matches none of this target's names */
                        continue;
                m = kernel_only ? streq_ptr(r->kernel_name, name) : wait_name_matches(r, name);
                if (m && !streq_ptr(r->volume_id, name) && !record_attached(r))
                        continue;
                if (m && (!best || newer(&e->mtime, &best->mtime)))
                        best = e;
        }
        return best ? &best->record : NULL;
}

/* Adds "vol-1 (nvme1n1)" to what @t was found to be (cut if there are too many). */
static void note_volume(Target *t, const VolumeRecord *r) {
        size_t n = strlen(t->volumes);
        int w;

        if (n + 3 < sizeof(t->volumes)) {
                w = snprintf(t->volumes + n, sizeof(t->volumes) - n, "%s%s%s%s%s",
                             n > 0 ? ", " : "", r->volume_id, r->kernel_name[0] ? " (" : "",
                             r->kernel_name, r->kernel_name[0] ? ")" : "");
                if (w < 0)
                        t->volumes[n] = '\0';
        }
        t->done_bytes += r->hydrated_bytes;
        t->size_bytes += r->size_bytes;
}

/* What the waiter goes by for the volume of @r: the record, unless its writer ended without
 * saying so (then the run is stopped, as far as anyone can tell); what the state file proves
 * (root), when the record is missing or its writer gone. NULL when nothing is known. */
static const VolumeRecord *believe(const VolumeRecord *r, const char *key, WaitContext *x,
                                   Target *t, VolumeRecord *buf) {
        if (r && !writer_gone(x->writers, r)) {
                if (r->state == RECORD_HYDRATING || r->state == RECORD_PAUSED) {
                        if (writers_want(x->writers, r->pid, r->start_time) < 0)
                                t->oom = true;
                }
                return r;
        }
        if (state_cache_get(x->states, x->state_fd, r ? r->volume_id : key, buf)) {
                if (r) { /* the record's names, for the messages */
                        memcpy(buf->kernel_name, r->kernel_name, sizeof(buf->kernel_name));
                        buf->size_bytes = MAX(buf->size_bytes, r->size_bytes);
                        buf->hydrated_bytes =
                                MIN(MAX(buf->hydrated_bytes, r->hydrated_bytes), buf->size_bytes);
                }
                return buf;
        }
        if (!r)
                return NULL;
        *buf = *r;
        buf->state = RECORD_STOPPED; /* killed, or its last record lost: the next run resumes */
        return buf;
}

static void judge(Target *t, WaitContext *x, RecordPhase phase) {
        const char *why = NULL;
        VolumeRecord buf;
        const VolumeRecord *r;
        size_t reached = 0;

        t->verdict = WAIT_PENDING;
        t->why = NULL;
        t->known = false;
        t->volumes[0] = '\0';
        t->done_bytes = t->size_bytes = 0;
        if (t->name) {
                r = believe(find_by_name(x->snapshot, t->name, false, t->bit), t->name, x, t, &buf);
                if (!r)
                        return;
                t->known = true;
                note_volume(t, r);
                t->verdict = wait_verdict(r, phase, &t->why);
                return;
        }
        t->missing = NULL;
        for (size_t i = 0; i < t->disks.n; i++) {
                r = find_by_name(x->snapshot, t->disks.names[i], true, t->bit);
                if (!r) {
                        t->missing = t->missing ?: t->disks.names[i];
                        continue;
                }
                r = believe(r, r->volume_id, x, t, &buf);
                note_volume(t, r);
                switch (wait_verdict(r, phase, &why)) {
                case WAIT_REACHED:
                        reached++;
                        break;
                case WAIT_SHORT:
                        t->verdict = WAIT_SHORT;
                        t->why = why;
                        return;
                default:
                        break;
                }
        }
        t->known = !t->missing;
        if (reached == t->disks.n)
                t->verdict = WAIT_REACHED;
}

/* --- watching --- */

static void progress_line(const Target *t, size_t n, RecordPhase phase) {
        char line[WAIT_LINE_MAX], pmb[FORMAT_PERMILLE_MAX];
        size_t len;

        len = (size_t)snprintf(line, sizeof(line), "Waiting for %s:", wait_phase_to_string(phase));
        for (size_t i = 0; i < n && len < sizeof(line); i++) {
                const Target *x = &t[i];

                if (x->verdict == WAIT_REACHED)
                        len += (size_t)snprintf(line + len, sizeof(line) - len, " %s reached;",
                                                x->arg);
                else if (!x->known)
                        len += (size_t)snprintf(line + len, sizeof(line) - len, " %s not seen yet;",
                                                x->arg);
                else
                        len += (size_t)snprintf(
                                line + len, sizeof(line) - len, " %s %s%%;", x->volumes,
                                format_permille(pmb,
                                                progress_permille(x->done_bytes, x->size_bytes)));
        }
        if (len > 0 && len <= sizeof(line) && line[len - 1] == ';')
                line[len - 1] = '\0';
        (void)output_printf(STDERR_FILENO, "\r\033[K%s", line);
}

typedef struct Targets {
        Target *items;
        size_t n;
} Targets;

static void targets_done(Targets *l) {
        for (size_t i = 0; l->items && i < l->n; i++)
                disk_set_done(&l->items[i].disks);
        free(l->items);
}

static void clear_progress(const WaitOptions *o) {
        if (o->progress)
                (void)output_write(STDERR_FILENO, "\r\033[K", 4);
}

/* The exit status once every target is judged, or -1 to wait on. */
static int judge_all(const WaitOptions *o, Targets *l, WaitContext *x, bool timed_out) {
        size_t reached = 0, known = 0;

        for (size_t i = 0; i < l->n; i++) {
                Target *t = &l->items[i];

                judge(t, x, o->phase);
                if (t->oom) {
                        log_error_errno(-ENOMEM, "Out of memory");
                        return EXIT_FAILURE;
                }
                if (t->verdict == WAIT_SHORT) {
                        clear_progress(o);
                        log_error("%s: %s: %s, %s will not be reached", t->arg, t->volumes, t->why,
                                  wait_phase_to_string(o->phase));
                        return EBS_HYDRATE_EXIT_WAIT_SHORT;
                }
                reached += t->verdict == WAIT_REACHED;
                known += t->known;
        }
        if (reached == l->n) {
                clear_progress(o);
                for (size_t i = 0; i < l->n; i++)
                        (void)output_printf(STDOUT_FILENO, "%s: %s: %s reached\n", l->items[i].arg,
                                            l->items[i].volumes, wait_phase_to_string(o->phase));
                return EXIT_SUCCESS;
        }
        if (!timed_out) {
                if (o->progress)
                        progress_line(l->items, l->n, o->phase);
                return -1;
        }
        clear_progress(o);
        for (size_t i = 0; i < l->n; i++) {
                const Target *t = &l->items[i];

                if (t->missing)
                        log_error("%s: no ebs-hydrated run was seen for its disk %s", t->arg,
                                  t->missing);
                else if (!t->known)
                        log_error("%s: no volume by this name was seen", t->arg);
                else if (t->verdict != WAIT_REACHED)
                        log_error("%s: %s: %s not reached in time", t->arg, t->volumes,
                                  wait_phase_to_string(o->phase));
        }
        return known < l->n ? EBS_HYDRATE_EXIT_WAIT_UNKNOWN : EBS_HYDRATE_EXIT_WAIT_TIMEOUT;
}

/* How long poll() may sleep: until the deadline, or for ever; at most a second when something
 * cannot be watched (not even the runtime directory's parent, or a writer without a pidfd):
 * the only cases that poll. */
static int poll_timeout_ms(bool blind, uint64_t deadline, uint64_t now) {
        uint64_t ms = deadline == UINT64_MAX
                              ? UINT64_MAX
                              : DIV_ROUND_UP(deadline - MIN(now, deadline), USEC_PER_MSEC);

        if (blind)
                ms = MIN(ms, UINT64_C(1000));
        return ms == UINT64_MAX ? -1 : (int)MIN(ms, (uint64_t)INT_MAX);
}

/* Everything a wait holds, released in one place. */
typedef struct Waiting {
        Watch watch;
        Targets targets;
        Snapshot snapshot;
        StateCache states;
        Writers writers;
        WaitChanges changes;
        struct pollfd *fds;
        size_t fds_allocated;
        int state_fd;
} Waiting;

static void waiting_done(Waiting *w) {
        watch_done(&w->watch);
        targets_done(&w->targets);
        snapshot_clear(&w->snapshot);
        state_cache_done(&w->states);
        writers_done(&w->writers);
        wait_changes_done(&w->changes);
        free(w->fds);
        if (w->state_fd >= 0)
                (void)close(w->state_fd);
}

/* Which targets the names of @r match: a bit each, the 64th for all from there on. */
static uint64_t match_targets(const VolumeRecord *r, void *userdata) {
        const Targets *l = userdata;
        uint64_t bits = 0;

        for (size_t i = 0; i < l->n; i++) {
                const Target *t = &l->items[i];
                bool m = t->name && wait_name_matches(r, t->name);

                for (size_t j = 0; !m && j < t->disks.n; j++)
                        m = streq_ptr(r->kernel_name, t->disks.names[j]);
                if (m)
                        bits |= t->bit;
        }
        return bits;
}

/* The records as inotify says they changed: those names only, or all of them again. */
static int apply_changes(Waiting *w, bool first) {
        WaitChanges *c = &w->changes;
        int r;

        state_cache_forget(&w->states, c);
        if (first || c->records_all)
                r = snapshot_read(&w->snapshot, w->watch.dir);
        else
                r = snapshot_update(&w->snapshot, w->watch.dir, c->records, c->n_records);
        wait_changes_clear(c);
        return r;
}

int ctl_wait(const WaitOptions *o, char *const *targets, size_t n_targets) {
        _cleanup_(waiting_done) Waiting w = {
                .watch = {.fd = -1},
                .targets = {.items = calloc(n_targets, sizeof(Target)), .n = n_targets},
                .state_fd = -1,
        };
        WaitContext x = {.snapshot = &w.snapshot, .states = &w.states, .writers = &w.writers};

        w.snapshot.match = match_targets;
        w.snapshot.match_data = &w.targets;
        uint64_t deadline = UINT64_MAX;
        bool look = true, first = true;

        if (!w.targets.items) {
                log_error_errno(-ENOMEM, "Out of memory");
                return EXIT_FAILURE;
        }
        for (size_t i = 0; i < n_targets; i++) {
                w.targets.items[i].arg = targets[i];
                w.targets.items[i].bit = UINT64_C(1) << MIN(i, (size_t)63);
                if (!targets[i][0]) {
                        log_error("An empty TARGET names nothing (see --help)");
                        return EBS_HYDRATE_EXIT_USAGE;
                }
                switch (resolve_target(&w.targets.items[i])) {
                case 0:
                        break;
                case -ENOENT:
                case -ENOTDIR:
                case -ENODEV:
                        return EBS_HYDRATE_EXIT_WAIT_UNKNOWN;
                default: /* not known to name nothing: a failure (EACCES, ENOMEM, ELOOP) */
                        return EXIT_FAILURE;
                }
        }
        if (o->timeout_usec != UINT64_MAX)
                deadline = now_usec(CLOCK_MONOTONIC) + MIN(o->timeout_usec, UINT64_MAX / 2);
        if (watch_init(&w.watch, o->runtime_dir) < 0)
                return EXIT_FAILURE;
        /* Root reads the state files too (saves rename into the directory): a volume hydrated
         * before this boot whose daemon has not run since, or whose run's record was lost. */
        x.state_fd = w.state_fd = watch_state_dir(&w.watch, o->state_dir);
        /* The watches are set before each look, so that nothing written meanwhile is missed. */
        for (;;) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                size_t n_fds = 1;
                int r, code;

                if (look && apply_changes(&w, first) < 0)
                        return EXIT_FAILURE;
                first = false;
                code = judge_all(o, &w.targets, &x, now >= deadline);
                if (code >= 0)
                        return code;
                /* The writers of the records believed: one that ends wakes us. */
                if (writers_sync(&w.writers)) {
                        look = false; /* nothing to read again: judge it gone */
                        continue;
                }
                if (ARRAY_GROW(w.fds, w.fds_allocated, 1 + w.writers.n) < 0) {
                        log_error_errno(-ENOMEM, "Out of memory");
                        return EXIT_FAILURE;
                }
                w.fds[0] = (struct pollfd){.fd = w.watch.fd, .events = POLLIN};
                for (size_t i = 0; i < w.writers.n; i++)
                        w.fds[n_fds++] =
                                (struct pollfd){.fd = w.writers.items[i].fd, .events = POLLIN};
                r = poll(w.fds, n_fds,
                         poll_timeout_ms(watch_blind(&w.watch) || w.writers.blind, deadline, now));
                if (r < 0 && errno != EINTR) {
                        log_error_errno(-errno, "poll() failed: %m");
                        return EXIT_FAILURE;
                }
                if (r > 0 && writers_note_ended(&w.writers, w.fds + 1) < 0)
                        return EXIT_FAILURE;
                /* the once-a-second look, when even the parent is not watched */
                look = r == 0 && watch_blind(&w.watch);
                if (look)
                        w.changes.records_all = true;
                if (look || (r > 0 && (w.fds[0].revents & POLLIN))) {
                        r = watch_drain(&w.watch, &w.changes); /* and the watches set again */
                        if (r < 0)
                                return EXIT_FAILURE;
                        look = look || r > 0;
                }
        }
}
