/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl wait (see ctl-wait.h): what the targets name, and the watching; the verdict on
 * one record is ctl-wait-verdict.c's. The records are re-read whenever inotify says the
 * runtime directory (or, for root, the state directory) changed: there is no polling, and a
 * daemon that stops, restarts or starts after us is seen by the records it writes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "alloc-util.h"
#include "ctl-wait.h"
#include "log.h"
#include "parse.h"
#include "progress.h"
#include "state.h"
#include "sysfs.h"
#include "time-util.h"

/* --- targets --- */

typedef struct Target {
        const char *arg;
        const char *name; /* matched by name (volume id, kernel name, mapping name), or NULL */
        char **disks;     /* the disks under a path: kernel names */
        size_t n_disks, n_disks_allocated;
        WaitVerdict verdict;
        const char *why;
        bool known;          /* a record or state file names it (every disk of a path) */
        const char *missing; /* a disk of a path that no record names */
        char volumes[256];   /* "vol-1 (nvme1n1)": what it was found to be, for messages */
        uint64_t done_bytes, size_bytes;
} Target;

static int add_disk(Target *t, const char *name) {
        for (size_t i = 0; i < t->n_disks; i++)
                if (strcmp(t->disks[i], name) == 0)
                        return 0;
        if (ARRAY_GROW(t->disks, t->n_disks_allocated, t->n_disks + 1) < 0)
                return -ENOMEM;
        t->disks[t->n_disks] = strdup(name);
        if (!t->disks[t->n_disks])
                return -ENOMEM;
        t->n_disks++;
        return 0;
}

static int add_disk_cb(const char *name, void *userdata) {
        return add_disk(userdata, name);
}

/* The disks under the block device whose sysfs directory is @dir (sysfs_disks_under()). */
static int add_disks_of(Target *t, const char *dir) {
        return sysfs_disks_under(dir, add_disk_cb, t);
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_octal(char *s) {
        char *w = s;

        for (char *r = s; *r; w++)
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
                        r += 4;
                } else
                        *w = *r++;
        *w = '\0';
}

/* Does the mount point @mnt hold @path (both absolute, without "..")? */
static size_t mount_holds(const char *mnt, const char *path) {
        size_t n = strlen(mnt);

        if (strcmp(mnt, "/") == 0)
                return 1;
        return strncmp(path, mnt, n) == 0 && (path[n] == '/' || path[n] == '\0') ? n : 0;
}

/*
 * The block device that the file system holding @path was mounted from, by the mount table:
 * for file systems whose files have an anonymous st_dev (btrfs gives each subvolume one). The
 * innermost mount that holds the path, if its source is a block device; -ENODEV otherwise.
 */
static int mount_source(const char *path, dev_t *ret) {
        _cleanup_(fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_free_ char *line = NULL, *real = realpath(path, NULL);
        char best[PATH_MAX] = "";
        size_t size = 0, best_len = 0;
        struct stat st;

        if (!f || !real)
                return -errno;
        while (getline(&line, &size, f) > 0) {
                char mnt[PATH_MAX], source[PATH_MAX], *sep = strstr(line, " - ");
                size_t n;

                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE ... */
                if (!sep || sscanf(line, "%*u %*u %*s %*s %4095s", mnt) != 1 ||
                    sscanf(sep, " - %*s %4095s", source) != 1)
                        continue;
                unescape_octal(mnt);
                unescape_octal(source);
                n = mount_holds(mnt, real);
                if (n > 0 && n >= best_len) { /* the later of two mounts on one point wins */
                        best_len = n;
                        memcpy(best, source, sizeof(best));
                }
        }
        if (best[0] != '/' || stat(best, &st) < 0 || !S_ISBLK(st.st_mode))
                return -ENODEV;
        *ret = st.st_rdev;
        return 0;
}

/*
 * A TARGET with a '/' is a path: a block device, or a file on a mounted file system, whose disks
 * are waited for. One under /dev/ that does not exist is a mapping name (/dev/sdf) or the
 * kernel name of a disk not attached yet (/dev/nvme1n1). Returns 0; -ENOENT, -ENOTDIR or
 * -ENODEV (logged) for a path that can never name a volume; another -errno (logged) for one
 * that could not be looked at (EACCES: not the caller's to search).
 */
static int resolve_target(Target *t) {
        _cleanup_free_ char *dir = NULL;
        struct stat st;
        dev_t devnum;
        int r;

        if (!strchr(t->arg, '/')) {
                /* A kernel name (a disk, a partition, a device-mapper device): its disks. */
                if (asprintf(&dir, "%s/class/block/%s", sysfs_root(), t->arg) < 0)
                        return log_error_errno(-ENOMEM, "Out of memory");
                r = t->arg[0] != '.' ? add_disks_of(t, dir) : -ENOENT;
                if (r == -ENOMEM)
                        return log_error_errno(r, "Out of memory");
                if (r < 0) /* a volume id, a mapping name, or a disk not attached yet */
                        t->name = t->arg;
                return 0;
        }
        if (stat(t->arg, &st) < 0) {
                if (errno == ENOENT && strncmp(t->arg, "/dev/", 5) == 0 &&
                    !strchr(t->arg + 5, '/')) {
                        t->name = t->arg; /* /dev/sdf: a mapping name without its link */
                        return 0;
                }
                return log_error_errno(-errno, "%s: %m", t->arg);
        }
        devnum = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
        if (asprintf(&dir, "%s/dev/block/%u:%u", sysfs_root(), major(devnum), minor(devnum)) < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        r = add_disks_of(t, dir);
        if (r == -ENOENT && !S_ISBLK(st.st_mode) && mount_source(t->arg, &devnum) >= 0) {
                free(dir);
                if (asprintf(&dir, "%s/dev/block/%u:%u", sysfs_root(), major(devnum),
                             minor(devnum)) < 0)
                        return log_error_errno(-ENOMEM, "Out of memory");
                r = add_disks_of(t, dir);
        }
        if (r == -ENOMEM)
                return log_error_errno(r, "Out of memory");
        if (r < 0)
                return log_error_errno(-ENODEV,
                                       "%s is not on a block device (device %u:%u): no volume "
                                       "can hold it",
                                       t->arg, major(devnum), minor(devnum));
        return 0;
}

/* --- what the records and state files say --- */

typedef struct Snapshot {
        VolumeRecord *records;
        struct timespec *mtimes;
        size_t n, allocated, mtimes_allocated;
} Snapshot;

static void snapshot_clear(Snapshot *s) {
        free(s->records);
        free(s->mtimes);
        *s = (Snapshot){};
}

/*
 * Reads every record in @dir. A directory that group or others may write to (without the sticky
 * bit) is refused with -EPERM: anyone could plant "completed" there; so is, in any directory, a
 * record owned by another user than the directory's owner or root. A missing directory is empty.
 */
static int snapshot_read(Snapshot *s, const char *dir) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct stat dst;
        struct dirent *de;

        s->n = 0;
        d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : log_error_errno(-errno, "Cannot read %s: %m", dir);
        if (fstat(dirfd(d), &dst) < 0)
                return log_error_errno(-errno, "Cannot stat %s: %m", dir);
        if ((dst.st_mode & 0022) && !(dst.st_mode & S_ISVTX))
                return log_error_errno(-EPERM,
                                       "%s is writable by group or others (mode %04o): its "
                                       "records cannot be trusted",
                                       dir, (unsigned)(dst.st_mode & 07777));
        while ((de = readdir(d))) {
                VolumeRecord r;
                struct stat st;

                if (de->d_name[0] == '.' ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    (st.st_uid != dst.st_uid && st.st_uid != 0) ||
                    record_load_at(dirfd(d), de->d_name, &r) < 0)
                        continue; /* not a record, half gone, or not one to trust */
                if (ARRAY_GROW(s->records, s->allocated, s->n + 1) < 0 ||
                    ARRAY_GROW(s->mtimes, s->mtimes_allocated, s->n + 1) < 0)
                        return log_error_errno(-ENOMEM, "Out of memory");
                s->records[s->n] = r;
                s->mtimes[s->n] = st.st_mtim;
                s->n++;
        }
        return 0;
}

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
static const VolumeRecord *find_by_name(const Snapshot *s, const char *name, bool kernel_only) {
        const VolumeRecord *best = NULL;
        size_t best_i = 0;

        for (size_t i = 0; i < s->n; i++) {
                const VolumeRecord *r = &s->records[i];
                bool m = kernel_only ? streq_ptr(r->kernel_name, name) : wait_name_matches(r, name);

                if (m && !streq_ptr(r->volume_id, name) && !record_attached(r))
                        continue;
                if (m && (!best || newer(&s->mtimes[i], &s->mtimes[best_i]))) {
                        best = &s->records[i];
                        best_i = i;
                }
        }
        return best;
}

/* For root: what a state file says of a volume that has no record (its daemon has not run
 * since boot). A complete one is complete; a Mode=used one reached "used". */
static bool state_file_record(int state_fd, const char *key, VolumeRecord *ret) {
        _cleanup_(state_freep) HydrateState *s = NULL;

        if (state_fd < 0 || !state_key_valid(key, strlen(key)) ||
            state_load(state_fd, key, &s) < 0 || !streq_ptr(s->key, key) ||
            (!s->complete && !s->used_complete))
                return false;
        *ret = (VolumeRecord){.state = RECORD_COMPLETED,
                              .phase = RECORD_PHASE_DONE,
                              .free_space_cold = !s->complete,
                              .fs_aware = true};
        (void)snprintf(ret->volume_id, sizeof(ret->volume_id), "%s", key);
        return true;
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

static void judge(Target *t, const Snapshot *s, int state_fd, RecordPhase phase) {
        const char *why = NULL;
        VolumeRecord from_state;
        const VolumeRecord *r;
        size_t reached = 0;

        t->verdict = WAIT_PENDING;
        t->why = NULL;
        t->known = false;
        t->volumes[0] = '\0';
        t->done_bytes = t->size_bytes = 0;
        if (t->name) {
                r = find_by_name(s, t->name, false);
                if (!r && state_file_record(state_fd, t->name, &from_state))
                        r = &from_state;
                if (!r)
                        return;
                t->known = true;
                note_volume(t, r);
                t->verdict = wait_verdict(r, phase, &t->why);
                return;
        }
        t->missing = NULL;
        for (size_t i = 0; i < t->n_disks; i++) {
                r = find_by_name(s, t->disks[i], true);
                if (!r) {
                        t->missing = t->missing ?: t->disks[i];
                        continue;
                }
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
        if (reached == t->n_disks)
                t->verdict = WAIT_REACHED;
}

/* --- watching --- */

typedef struct Watch {
        int fd;          /* inotify */
        int parent_wd;   /* the runtime directory's parent, for it to appear, go, or be replaced */
        int dir_wd;      /* the runtime directory, while it is there */
        const char *dir; /* the runtime directory */
        char *parent;
} Watch;

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)

/*
 * (Re)adds the watches: the parent's until it is set, the directory's each time, since it may be
 * another directory under the same name now (inotify watches an inode, not a path). Nothing is
 * held open: a directory removed or replaced is seen through its parent, or, where the parent may
 * not be read (a caller without the right), by its own removal, after which it is looked for each
 * second. A missing directory is no error.
 */
static int watch_dirs(Watch *w) {
        if (w->parent_wd < 0) {
                w->parent_wd = inotify_add_watch(
                        w->fd, w->parent, WATCH_MASK | IN_ONLYDIR | IN_DELETE_SELF | IN_MOVE_SELF);
                if (w->parent_wd < 0 && errno != ENOENT && errno != EACCES)
                        return log_error_errno(-errno, "Cannot watch %s: %m", w->parent);
        }
        w->dir_wd = inotify_add_watch(w->fd, w->dir,
                                      WATCH_MASK | IN_ONLYDIR | IN_DELETE_SELF | IN_MOVE_SELF);
        if (w->dir_wd < 0 && errno != ENOENT && errno != ENOTDIR)
                return log_error_errno(-errno, "Cannot watch %s: %m", w->dir);
        return 0;
}

/* Reads what inotify has: 1 if something other than a dot file (a temporary file being
 * written, a daemon's or a metrics run's) changed, else 0; or -errno. */
static int drain(Watch *w) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool relevant = false;
        int r;

        for (;;) {
                ssize_t n = read(w->fd, buf, sizeof(buf));

                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return log_error_errno(-errno, "Cannot read inotify events: %m");
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *e = (const struct inotify_event *)p;

                        if (e->wd == w->parent_wd &&
                            (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)))
                                w->parent_wd = -1; /* looked for again below, else each second */
                        if (e->wd == w->dir_wd &&
                            (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)))
                                w->dir_wd = -1;
                        if (e->len == 0 || e->name[0] != '.' || (e->mask & IN_Q_OVERFLOW))
                                relevant = true;
                        p += sizeof(*e) + e->len;
                }
        }
        r = watch_dirs(w);
        return r < 0 ? r : relevant;
}

static void progress_line(const Target *t, size_t n, RecordPhase phase) {
        char line[512];
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
                                line + len, sizeof(line) - len, " %s %u.%u%%;", x->volumes,
                                progress_permille(x->done_bytes, x->size_bytes) / 10,
                                progress_permille(x->done_bytes, x->size_bytes) % 10);
        }
        if (len > 0 && len <= sizeof(line) && line[len - 1] == ';')
                line[len - 1] = '\0';
        (void)output_printf(STDERR_FILENO, "\r\033[K%s", line);
}

static void watch_done(Watch *w) {
        if (w->fd >= 0)
                (void)close(w->fd);
        free(w->parent);
}

typedef struct Targets {
        Target *items;
        size_t n;
} Targets;

static void targets_done(Targets *l) {
        for (size_t i = 0; l->items && i < l->n; i++) {
                for (size_t j = 0; j < l->items[i].n_disks; j++)
                        free(l->items[i].disks[j]);
                free(l->items[i].disks);
        }
        free(l->items);
}

static void clear_progress(const WaitOptions *o) {
        if (o->progress)
                (void)output_write(STDERR_FILENO, "\r\033[K", 4);
}

/* The exit status once every target is judged, or -1 to wait on. */
static int judge_all(const WaitOptions *o, Targets *l, const Snapshot *s, int state_fd,
                     bool timed_out) {
        size_t reached = 0, known = 0;

        for (size_t i = 0; i < l->n; i++) {
                Target *t = &l->items[i];

                judge(t, s, state_fd, o->phase);
                if (t->verdict == WAIT_SHORT) {
                        clear_progress(o);
                        log_error("%s: %s: %s, %s will not be reached", t->arg, t->volumes, t->why,
                                  wait_phase_to_string(o->phase));
                        return WAIT_EXIT_SHORT;
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
        return known < l->n ? WAIT_EXIT_UNKNOWN : WAIT_EXIT_TIMEOUT;
}

/* Root reads the state files too (saves rename into the directory): a volume hydrated before
 * this boot whose daemon has not run since. -1 for others, who may not. */
static int open_state_dir(const WaitOptions *o, int inotify_fd) {
        _cleanup_close_ int fd = open(o->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0 || inotify_add_watch(inotify_fd, o->state_dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0)
                return -1;
        return TAKE_FD(fd);
}

/* How long poll() may sleep: until the deadline, or for ever. Without even the runtime
 * directory's parent to watch, a look each second: the only case that polls. */
static int poll_timeout_ms(const Watch *w, uint64_t deadline, uint64_t now) {
        if (w->parent_wd < 0 && w->dir_wd < 0)
                return 1000;
        if (deadline == UINT64_MAX)
                return -1;
        return (int)MIN(DIV_ROUND_UP(deadline - now, USEC_PER_MSEC), (uint64_t)INT_MAX);
}

int ctl_wait(const WaitOptions *o, char *const *targets, size_t n_targets) {
        _cleanup_(watch_done)
                Watch w = {.fd = -1, .parent_wd = -1, .dir_wd = -1, .dir = o->runtime_dir};
        _cleanup_(targets_done)
                Targets l = {.items = calloc(n_targets, sizeof(Target)), .n = n_targets};
        _cleanup_(snapshot_clear) Snapshot s = {};
        _cleanup_close_ int state_fd = -1;
        uint64_t deadline = UINT64_MAX;
        bool look = true;
        char *slash;

        if (!l.items) {
                log_error_errno(-ENOMEM, "Out of memory");
                return EXIT_FAILURE;
        }
        for (size_t i = 0; i < n_targets; i++) {
                l.items[i].arg = targets[i];
                if (!targets[i][0]) {
                        log_error("An empty TARGET names nothing (see --help)");
                        return EXIT_USAGE_ERROR;
                }
                switch (resolve_target(&l.items[i])) {
                case 0:
                        break;
                case -ENOENT:
                case -ENOTDIR:
                case -ENODEV:
                        return WAIT_EXIT_UNKNOWN;
                default: /* not known to name nothing: a failure (EACCES, ENOMEM, ELOOP) */
                        return EXIT_FAILURE;
                }
        }
        if (o->timeout_usec != UINT64_MAX)
                deadline = now_usec(CLOCK_MONOTONIC) + MIN(o->timeout_usec, UINT64_MAX / 2);
        w.parent = strdup(o->runtime_dir);
        if (!w.parent) {
                log_error_errno(-ENOMEM, "Out of memory");
                return EXIT_FAILURE;
        }
        slash = strrchr(w.parent, '/');
        if (!slash)
                strcpy(w.parent, ".");
        else
                slash[slash == w.parent] = '\0'; /* "/run/x" -> "/run", "/x" -> "/" */
        w.fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (w.fd < 0) {
                log_error_errno(-errno, "Cannot set up inotify: %m");
                return EXIT_FAILURE;
        }
        if (watch_dirs(&w) < 0)
                return EXIT_FAILURE;
        state_fd = open_state_dir(o, w.fd);
        /* The watches are set before each look, so that nothing written meanwhile is missed. */
        for (;;) {
                struct pollfd p = {.fd = w.fd, .events = POLLIN};
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int r, code;

                if (look && snapshot_read(&s, w.dir) < 0)
                        return EXIT_FAILURE;
                code = judge_all(o, &l, &s, state_fd, now >= deadline);
                if (code >= 0)
                        return code;
                r = poll(&p, 1, poll_timeout_ms(&w, deadline, now));
                if (r < 0 && errno != EINTR) {
                        log_error_errno(-errno, "poll() failed: %m");
                        return EXIT_FAILURE;
                }
                look = r == 0 && w.parent_wd < 0 && w.dir_wd < 0; /* the once-a-second look */
                if (look && watch_dirs(&w) < 0)
                        return EXIT_FAILURE;
                if (r > 0) {
                        r = drain(&w);
                        if (r < 0)
                                return EXIT_FAILURE;
                        look = r > 0;
                }
        }
}
