/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl wait: the records as they change, the state files' proofs, and the writers'
 * pidfds (ctl-wait-internal.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "ctl-wait-internal.h"
#include "log.h"
#include "process-util.h"

/* --- the records --- */

void snapshot_clear(Snapshot *s) {
        free(s->items);
        s->items = NULL;
        s->n = s->allocated = 0;
}

static SnapshotEntry *snapshot_find(Snapshot *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->items[i].name, name) == 0)
                        return &s->items[i];
        return NULL;
}

static void snapshot_drop(Snapshot *s, const char *name) {
        SnapshotEntry *e = snapshot_find(s, name);

        if (e)
                *e = s->items[--s->n];
}

/* The directory, opened and judged; NULL with 0 when it is missing, -errno when refused. */
static int open_dir(const char *dir, DIR **ret, struct stat *ret_st) {
        DIR *d = opendir(dir);

        *ret = NULL;
        if (!d)
                return errno == ENOENT ? 0 : log_error_errno(-errno, "Cannot read %s: %m", dir);
        if (fstat(dirfd(d), ret_st) < 0) {
                closedir(d);
                return log_error_errno(-errno, "Cannot stat %s: %m", dir);
        }
        if ((ret_st->st_mode & 0022) && !(ret_st->st_mode & S_ISVTX)) {
                closedir(d);
                return log_error_errno(-EPERM,
                                       "%s is writable by group or others (mode %04o): its "
                                       "records cannot be trusted",
                                       dir, (unsigned)(ret_st->st_mode & 07777));
        }
        *ret = d;
        return 0;
}

/* The record @name of @d (owned by @dst's owner or root) into @s, or out of it if it is not one
 * (gone, half written, a stranger's). */
static int load_one(Snapshot *s, DIR *d, const struct stat *dst, const char *name) {
        SnapshotEntry *e;
        VolumeRecord r;
        struct stat st;

        if (name[0] == '.' || strlen(name) >= sizeof(WaitName) ||
            fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            (st.st_uid != dst->st_uid && st.st_uid != 0) ||
            record_load_at(dirfd(d), name, &r) < 0) {
                snapshot_drop(s, name);
                return 0;
        }
        e = snapshot_find(s, name);
        if (!e) {
                if (ARRAY_GROW(s->items, s->allocated, s->n + 1) < 0)
                        return log_error_errno(-ENOMEM, "Out of memory");
                e = &s->items[s->n++];
                snprintf(e->name, sizeof(e->name), "%s", name);
        }
        e->record = r;
        e->mtime = st.st_mtim;
        e->targets = s->match ? s->match(&r, s->match_data) : UINT64_MAX;
        return 0;
}

int snapshot_read(Snapshot *s, const char *dir) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        struct stat dst;
        int r;

        s->n = 0;
        r = open_dir(dir, &d, &dst);
        if (r < 0 || !d)
                return r;
        while ((de = readdir(d))) {
                r = load_one(s, d, &dst, de->d_name);
                if (r < 0)
                        return r;
        }
        return 0;
}

int snapshot_update(Snapshot *s, const char *dir, const WaitName *names, size_t n) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct stat dst;
        int r;

        r = open_dir(dir, &d, &dst);
        if (r < 0)
                return r;
        if (!d) {
                s->n = 0;
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                r = load_one(s, d, &dst, names[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* --- what inotify says --- */

void wait_changes_clear(WaitChanges *c) {
        c->records_all = c->states_all = false;
        c->n_records = c->n_states = 0;
}

void wait_changes_done(WaitChanges *c) {
        free(c->records);
        free(c->states);
        *c = (WaitChanges){};
}

/* @name into @list, once; past WAIT_CHANGES_MAX, *@all instead. */
static int add_name(WaitName **list, size_t *n, size_t *allocated, bool *all, const char *name,
                    size_t len) {
        if (*all)
                return 0;
        if (len >= sizeof(WaitName) || *n >= WAIT_CHANGES_MAX) {
                *all = true;
                return 0;
        }
        for (size_t i = 0; i < *n; i++)
                if (strncmp((*list)[i], name, len) == 0 && (*list)[i][len] == '\0')
                        return 0;
        if (ARRAY_GROW(*list, *allocated, *n + 1) < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        memcpy((*list)[*n], name, len);
        (*list)[*n][len] = '\0';
        (*n)++;
        return 0;
}

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)
#define SELF_GONE (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)

/*
 * (Re)adds the watches: the parent's until it is set, the directory's each time, since it may be
 * another directory under the same name now (inotify watches an inode, not a path). Nothing is
 * held open: a directory removed or replaced is seen through its parent, or, where the parent may
 * not be read (a caller without the right), by its own removal, after which it is looked for each
 * second. A missing directory is no error.
 */
static int watch_dirs(Watch *w) {
        if (w->parent_wd < 0) {
                w->parent_wd = inotify_add_watch(w->fd, w->parent,
                                                 WATCH_MASK | IN_ONLYDIR | IN_DELETE_SELF |
                                                         IN_MOVE_SELF | IN_MASK_ADD);
                if (w->parent_wd < 0 && errno != ENOENT && errno != EACCES)
                        return log_error_errno(-errno, "Cannot watch %s: %m", w->parent);
        }
        w->dir_wd = inotify_add_watch(w->fd, w->dir,
                                      WATCH_MASK | IN_ONLYDIR | IN_DELETE_SELF | IN_MOVE_SELF |
                                              IN_MASK_ADD);
        if (w->dir_wd < 0 && errno != ENOENT && errno != ENOTDIR)
                return log_error_errno(-errno, "Cannot watch %s: %m", w->dir);
        return 0;
}

int watch_init(Watch *w, const char *dir) {
        size_t len = strlen(dir);
        char *slash;

        *w = (Watch){.fd = -1, .parent_wd = -1, .dir_wd = -1, .state_wd = -1};
        /* "/run/ebs-hydrate/" is "/run/ebs-hydrate": its parent is /run, its name ebs-hydrate */
        while (len > 1 && dir[len - 1] == '/')
                len--;
        w->dir_buf = strndup(dir, len);
        w->parent = malloc(MAX(len, (size_t)1) + 1); /* room for "." */
        if (!w->dir_buf || !w->parent)
                return log_error_errno(-ENOMEM, "Out of memory");
        memcpy(w->parent, dir, len);
        w->parent[len] = '\0';
        w->dir = dir = w->dir_buf;
        slash = strrchr(w->parent, '/');
        if (!slash) {
                strcpy(w->parent, ".");
                w->base = dir;
        } else {
                w->base = dir + (slash - w->parent) + 1;
                slash[slash == w->parent] = '\0'; /* "/run/x" -> "/run", "/x" -> "/" */
        }
        w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (w->fd < 0)
                return log_error_errno(-errno, "Cannot set up inotify: %m");
        return watch_dirs(w);
}

void watch_done(Watch *w) {
        if (w->fd >= 0)
                (void)close(w->fd);
        free(w->parent);
        free(w->dir_buf);
        w->fd = -1;
        w->parent = w->dir_buf = NULL;
}

int watch_state_dir(Watch *w, const char *state_dir) {
        _cleanup_close_ int fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return -1;
        /* IN_MASK_ADD: the state directory may be the runtime directory's parent, one watch */
        w->state_wd =
                inotify_add_watch(w->fd, state_dir, IN_MOVED_TO | IN_CLOSE_WRITE | IN_MASK_ADD);
        if (w->state_wd < 0)
                return -1;
        return TAKE_FD(fd);
}

bool watch_blind(const Watch *w) {
        return w->parent_wd < 0 && w->dir_wd < 0;
}

/* One event: what it changed, into @c. */
static int note_event(Watch *w, const struct inotify_event *e, WaitChanges *c) {
        size_t len = e->len ? strnlen(e->name, e->len) : 0;
        char key[STATE_KEY_MAX + 1];

        if (e->mask & IN_Q_OVERFLOW) {
                c->records_all = c->states_all = true;
                return 1;
        }
        if (e->wd == w->state_wd && state_key_from_file_name(e->name, len, key))
                return add_name(&c->states, &c->n_states, &c->states_allocated, &c->states_all, key,
                                strlen(key)) < 0
                               ? -ENOMEM
                               : 1;
        /* The directory first: it may be its own parent's inode too ("." as --runtime-dir). */
        if (e->wd == w->dir_wd) {
                if (e->mask & SELF_GONE) {
                        w->dir_wd = -1;
                        if (w->parent_wd == e->wd)
                                w->parent_wd = -1;
                        c->records_all = true;
                        return 1;
                }
                if (len == 0 || e->name[0] == '.') /* a temporary file being written */
                        return 0;
                return add_name(&c->records, &c->n_records, &c->records_allocated, &c->records_all,
                                e->name, len) < 0
                               ? -ENOMEM
                               : 1;
        }
        if (e->wd != w->parent_wd)
                return 0;
        if (e->mask & SELF_GONE) {
                w->parent_wd = -1; /* looked for again below, else each second */
                c->records_all = true;
                return 1;
        }
        /* only the runtime directory's own name matters in its parent (/run is busy) */
        if (len == 0 || strcmp(e->name, w->base) != 0)
                return 0;
        c->records_all = true;
        return 1;
}

int watch_drain(Watch *w, WaitChanges *c) {
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

                        r = note_event(w, e, c);
                        if (r < 0)
                                return r;
                        relevant |= r > 0;
                        p += sizeof(*e) + e->len;
                }
        }
        if (w->dir_wd < 0 || w->parent_wd < 0) {
                r = watch_dirs(w);
                if (r < 0)
                        return r;
        }
        return relevant;
}

/* --- what the state files prove --- */

static bool prove(int state_fd, const char *key, StateProof *p) {
        StateSummary s;

        p->proven = false;
        if (state_fd < 0 || !state_key_valid(key, strlen(key)) ||
            state_load_summary(state_fd, key, &s) < 0 || strcmp(s.key, key) != 0 ||
            (!s.complete && !s.used_complete))
                return false;
        p->record = (VolumeRecord){.state = RECORD_COMPLETED,
                                   .phase = RECORD_PHASE_DONE,
                                   .free_space_cold = !s.complete,
                                   .size_bytes = s.size,
                                   .hydrated_bytes = MIN(s.done_bytes, s.size),
                                   .fs_aware = true};
        (void)snprintf(p->record.volume_id, sizeof(p->record.volume_id), "%s", key);
        p->proven = true;
        return true;
}

bool state_cache_get(StateCache *c, int state_fd, const char *key, VolumeRecord *ret) {
        StateProof *p = NULL;

        if (state_fd < 0 || strlen(key) >= sizeof(p->key))
                return false;
        for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->items[i].key, key) == 0)
                        p = &c->items[i];
        if (!p) {
                if (ARRAY_GROW(c->items, c->allocated, c->n + 1) < 0) {
                        StateProof once;

                        if (!prove(state_fd, key, &once))
                                return false;
                        *ret = once.record;
                        return true;
                }
                p = &c->items[c->n++];
                snprintf(p->key, sizeof(p->key), "%s", key);
                (void)prove(state_fd, key, p);
        }
        if (p->proven)
                *ret = p->record;
        return p->proven;
}

void state_cache_forget(StateCache *c, const WaitChanges *changes) {
        if (changes->states_all) {
                c->n = 0;
                return;
        }
        for (size_t j = 0; j < changes->n_states; j++)
                for (size_t i = 0; i < c->n; i++)
                        if (strcmp(c->items[i].key, changes->states[j]) == 0) {
                                c->items[i] = c->items[--c->n];
                                break;
                        }
}

void state_cache_done(StateCache *c) {
        free(c->items);
        *c = (StateCache){};
}

/* --- the writers --- */

bool writer_gone(const Writers *w, const VolumeRecord *r) {
        if (r->state != RECORD_HYDRATING && r->state != RECORD_PAUSED)
                return false;
        for (size_t i = 0; i < w->n_ended; i++)
                if (w->ended[i].pid == r->pid && w->ended[i].start_time == r->start_time)
                        return true;
        /* one with a pidfd is there until the pidfd says otherwise (writers_note_ended()) */
        for (size_t i = 0; i < w->n; i++)
                if (w->items[i].pid == r->pid && w->items[i].start_time == r->start_time)
                        return false;
        return process_gone(r->pid, r->start_time);
}

int writers_note_ended(Writers *w, const struct pollfd *fds) {
        for (size_t i = 0; i < w->n; i++) {
                if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                if (ARRAY_GROW(w->ended, w->ended_allocated, w->n_ended + 1) < 0)
                        return log_error_errno(-ENOMEM, "Out of memory");
                w->ended[w->n_ended++] = w->items[i];
        }
        return 0;
}

int writers_want(Writers *w, pid_t pid, uint64_t start_time) {
        if (pid <= 0)
                return 0;
        for (size_t i = 0; i < w->n_wanted; i++)
                if (w->wanted[i].pid == pid && w->wanted[i].start_time == start_time)
                        return 0;
        if (ARRAY_GROW(w->wanted, w->wanted_allocated, w->n_wanted + 1) < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        w->wanted[w->n_wanted++] = (Writer){.pid = pid, .start_time = start_time, .fd = -1};
        return 0;
}

bool writers_sync(Writers *w) {
        bool gone = false;

        /* keep the pidfds of those still wanted, close the others */
        for (size_t i = 0; i < w->n;) {
                bool keep = false;

                for (size_t j = 0; j < w->n_wanted && !keep; j++)
                        if (w->wanted[j].pid == w->items[i].pid &&
                            w->wanted[j].start_time == w->items[i].start_time &&
                            w->wanted[j].fd < 0) {
                                w->wanted[j].fd = w->items[i].fd;
                                keep = true;
                        }
                if (!keep)
                        (void)close(w->items[i].fd);
                w->items[i] = w->items[--w->n];
        }
        w->blind = false;
        for (size_t j = 0; j < w->n_wanted; j++) {
                Writer *x = &w->wanted[j];

                if (x->fd < 0) {
                        x->fd = process_pidfd(x->pid);
                        /* The pidfd holds the PID: if the start time is still the record's, it is
                         * the writer's; else it ended before (and the PID went to another). */
                        if (x->fd >= 0 && process_gone(x->pid, x->start_time)) {
                                (void)close(x->fd);
                                x->fd = -ESRCH;
                        }
                        if (x->fd == -ESRCH)
                                gone = true;
                        else if (x->fd < 0)
                                w->blind = true;
                }
                if (x->fd < 0)
                        continue;
                if (ARRAY_GROW(w->items, w->allocated, w->n + 1) < 0) {
                        (void)close(x->fd);
                        w->blind = true;
                        continue;
                }
                w->items[w->n++] = *x;
        }
        w->n_wanted = 0;
        return gone;
}

void writers_done(Writers *w) {
        for (size_t i = 0; i < w->n; i++)
                (void)close(w->items[i].fd);
        free(w->items);
        free(w->wanted);
        free(w->ended);
        *w = (Writers){};
}
