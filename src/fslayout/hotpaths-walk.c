/* SPDX-License-Identifier: MIT */
/*
 * HotPaths=, the walk: jobs that list a directory or map a batch of files, taken by
 * HOTPATHS_THREADS threads at once. On a cold volume each directory listed and each inode looked
 * up may be a first-touch read of 0.1 s or more, one after another: with many threads, as many
 * of those reads are in flight together (100,000 files at 0.2 s a cold read: minutes in one
 * thread). Symbolic links below an entry are not followed, nor mount points crossed, and a
 * directory is walked once per entry.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "hotpaths-internal.h"
#include "log.h"
#include "util.h"

/* Walkers, the caller's thread included; file names one job maps; file jobs waiting, at most:
 * beyond that a lister maps its batch itself. */
#define HOTPATHS_THREADS 16u
#define HOTPATHS_BATCH 64u
#define HOTPATHS_QUEUED_MAX 256u

/* Adds @ino; 1 if it was new, 0 if it was there, -ENOMEM. */
static int inode_set_add(InodeSet *s, uint64_t ino) {
        size_t mask;

        if ((s->n + 1) * 2 > s->allocated) {
                InodeSet bigger = {.allocated = MAX(s->allocated * 2, (size_t)64)};

                bigger.v = calloc(bigger.allocated, sizeof(uint64_t));
                if (!bigger.v)
                        return -ENOMEM;
                for (size_t i = 0; i < s->allocated; i++)
                        if (s->v[i] != 0)
                                (void)inode_set_add(&bigger, s->v[i] - 1);
                free(s->v);
                *s = bigger;
        }
        mask = s->allocated - 1;
        for (size_t i = (size_t)(ino * UINT64_C(0x9e3779b97f4a7c15) >> 32) & mask;;
             i = (i + 1) & mask) {
                if (s->v[i] == ino + 1)
                        return 0;
                if (s->v[i] == 0) {
                        s->v[i] = ino + 1;
                        s->n++;
                        return 1;
                }
        }
}

typedef enum JobKind {
        JOB_LIST, /* list the directory @dir */
        JOB_MAP,  /* map the files @names of @dir (NULL: each name is a whole path) */
} JobKind;

struct Job {
        Job *next;
        JobKind kind;
        Top *top;
        char *dir;
        char *names; /* @n names, each with its NUL, one after another */
        size_t n, size, allocated;
};

/* One thread's own: where the file system of the last file starts on the disk, and the
 * extents of the file being mapped. */
typedef struct Walker {
        Walk *w;
        dev_t last_dev;
        int last_r; /* 1: nothing asked yet */
        uint64_t last_offset;
        ByteRange *extents;
        size_t n_extents, allocated_extents;
} Walker;

static Job *job_free(Job *j) {
        if (j) {
                free(j->dir);
                free(j->names);
                free(j);
        }
        return NULL;
}

static Job *job_new(JobKind kind, Top *top, const char *dir) {
        Job *j = calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        *j = (Job){.kind = kind, .top = top};
        if (dir) {
                j->dir = strdup(dir);
                if (!j->dir)
                        return job_free(j);
        }
        return j;
}

static int job_add_name(Job *j, const char *name) {
        size_t len = strlen(name) + 1;

        if (ARRAY_GROW(j->names, j->allocated, j->size + len) < 0)
                return -ENOMEM;
        memcpy(j->names + j->size, name, len);
        j->size += len;
        j->n++;
        return 0;
}

static void walk_fail(Walk *w, int error) {
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        w->error = error;
        pthread_cond_broadcast(&w->changed);
        pthread_mutex_unlock(&w->lock);
}

/* Hands @j to the threads; false (and @j kept) when enough file jobs wait already. */
static bool walk_push(Walk *w, Job *j) {
        bool taken = true;

        pthread_mutex_lock(&w->lock);
        if (j->kind == JOB_MAP && w->maps_waiting >= HOTPATHS_QUEUED_MAX)
                taken = false;
        else if (j->kind == JOB_MAP) {
                j->next = w->maps;
                w->maps = j;
                w->maps_waiting++;
        } else {
                j->next = w->lists;
                w->lists = j;
        }
        if (taken)
                pthread_cond_signal(&w->changed);
        pthread_mutex_unlock(&w->lock);
        return taken;
}

static void warn(Walk *w, Top *top) {
        pthread_mutex_lock(&w->lock);
        top->warned = true;
        pthread_mutex_unlock(&w->lock);
}

/* Where the file system on @dev starts on the disk; the answer for the last one is kept. */
static int offset_for(Walker *k, dev_t dev, uint64_t *ret) {
        if (k->last_dev != dev || k->last_r == 1) {
                k->last_dev = dev;
                k->last_r = hotpaths_partition_offset(k->w->sysfs_root, dev, k->w->disk,
                                                      &k->last_offset);
        }
        *ret = k->last_offset;
        return k->last_r;
}

/* The file's extents join the walk's ranges; HOTPATHS_RANGES_MAX of them stop the walk. */
static void take_extents(Walker *k, Top *top) {
        Walk *w = k->w;
        uint64_t bytes = 0;

        pthread_mutex_lock(&w->lock);
        if (!w->full && w->n + k->n_extents > HOTPATHS_RANGES_MAX) {
                w->full = w->stop = true;
                top->warned = true;
                log_warning("HotPaths=: more than %" PRIu64 " extents; the rest of %s and what "
                            "follows it are not hot",
                            HOTPATHS_RANGES_MAX, SHOWN(top->path));
                pthread_cond_broadcast(&w->changed);
        }
        for (size_t i = 0; !w->full && i < k->n_extents; i++) {
                if (hotpaths_add_range(&w->ranges, &w->n, &w->allocated, k->extents[i].offset,
                                       k->extents[i].length) < 0) {
                        w->stop = true;
                        w->error = -ENOMEM;
                        pthread_cond_broadcast(&w->changed);
                        break;
                }
                bytes += k->extents[i].length;
        }
        top->bytes += bytes;
        pthread_mutex_unlock(&w->lock);
}

/* @follow: the HotPaths= entry itself, whose symbolic link is followed; nothing below it is. */
static int open_file(const char *path, bool follow) {
        int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW);
        int fd = open(path, flags | O_NOATIME);

        if (fd < 0 && errno == EPERM) /* O_NOATIME: only for the owner or CAP_FOWNER */
                fd = open(path, flags);
        return fd < 0 ? -errno : fd;
}

/* Maps one file: opened (its inode read), placed on the disk, its extents asked of FIEMAP. */
static void map_file(Walker *k, Top *top, const char *path, bool follow) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        uint64_t offset;
        int r;

        fd = open_file(path, follow);
        if (fd < 0) {
                warn(k->w, top);
                log_warning_errno(fd, "HotPaths=: cannot open %s (%m), skipping", SHOWN(path));
                return;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return; /* replaced since it was listed */
        r = offset_for(k, st.st_dev, &offset);
        if (r == -EXDEV) {
                pthread_mutex_lock(&k->w->lock);
                top->elsewhere = true; /* said once per entry, at the end */
                pthread_mutex_unlock(&k->w->lock);
                return;
        }
        if (r < 0) {
                warn(k->w, top);
                log_warning_errno(r, "HotPaths=: cannot place %s on the disk (%m), skipping",
                                  SHOWN(path));
                return;
        }
        k->n_extents = 0;
        r = hotpaths_file_extents(fd, offset, &k->extents, &k->n_extents, &k->allocated_extents);
        if (r == -ENOMEM) {
                walk_fail(k->w, r);
                return;
        }
        if (r < 0 && r != -E2BIG) {
                warn(k->w, top);
                log_warning_errno(r, "HotPaths=: cannot map the blocks of %s (%m), skipping",
                                  SHOWN(path));
                return;
        }
        take_extents(k, top);
}

static void run_map(Walker *k, const Job *j) {
        const char *name = j->names;

        for (size_t i = 0; i < j->n; i++, name += strlen(name) + 1) {
                _cleanup_free_ char *path = NULL;

                if (!j->dir) {
                        map_file(k, j->top, name, true);
                        continue;
                }
                if (asprintf(&path, "%s/%s", j->dir, name) < 0) {
                        walk_fail(k->w, -ENOMEM);
                        return;
                }
                map_file(k, j->top, path, false);
        }
}

/* A full batch of names goes to the threads, or is mapped here when enough wait already. */
static int hand_over(Walker *k, Job **batch) {
        Job *j = *batch;

        *batch = NULL;
        if (!j || j->n == 0) {
                job_free(j);
                return 0;
        }
        if (walk_push(k->w, j))
                return 0;
        run_map(k, j);
        job_free(j);
        return 0;
}

/* What kind of file the entry @e of the directory @dir_fd is: its d_type, or lstat's. */
static int entry_type(int dir_fd, const struct dirent *e, unsigned char *ret) {
        struct stat st;

        *ret = e->d_type;
        if (e->d_type != DT_UNKNOWN)
                return 0;
        if (fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        *ret = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        return 0;
}

/* One entry of a directory being listed: a directory to list later, a file to map. */
static int take_entry(Walker *k, const Job *j, int dir_fd, const struct dirent *e, Job **batch,
                      size_t *files) {
        _cleanup_free_ char *path = NULL;
        unsigned char type;
        int r;

        if (asprintf(&path, "%s/%s", j->dir, e->d_name) < 0)
                return -ENOMEM;
        r = entry_type(dir_fd, e, &type);
        if (r < 0) {
                warn(k->w, j->top);
                log_warning_errno(r, "HotPaths=: cannot read %s (%m), skipping", SHOWN(path));
                return 0;
        }
        if (type == DT_DIR) {
                Job *sub = job_new(JOB_LIST, j->top, path);

                if (!sub)
                        return -ENOMEM;
                (void)walk_push(k->w, sub); /* lists are always taken */
                return 0;
        }
        if (type != DT_REG)
                return 0; /* symbolic links are not followed; devices and the like hold nothing */
        (*files)++;
        if (!*batch) {
                *batch = job_new(JOB_MAP, j->top, j->dir);
                if (!*batch)
                        return -ENOMEM;
        }
        r = job_add_name(*batch, e->d_name);
        if (r >= 0 && (*batch)->n >= HOTPATHS_BATCH)
                r = hand_over(k, batch);
        return r;
}

/* The directory's own file system, and not walked before under this entry? */
static bool dir_is_new(Walker *k, Top *top, int fd, int *error) {
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0) {
                *error = -errno;
                return false;
        }
        if (st.st_dev != top->dev)
                return false; /* a mount point: the walk stays on the entry's file system */
        pthread_mutex_lock(&k->w->lock);
        r = inode_set_add(&top->seen, st.st_ino);
        pthread_mutex_unlock(&k->w->lock);
        if (r < 0)
                *error = r;
        return r > 0;
}

static int run_list(Walker *k, const Job *j) {
        _cleanup_(closedirp) DIR *dir = NULL;
        Job *batch = NULL;
        struct dirent *e;
        size_t files = 0;
        int fd, r = 0;

        /* The entry itself may be a symbolic link to a directory; below it nothing is followed. */
        fd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY |
                                  (streq_ptr(j->dir, j->top->path) ? 0 : O_NOFOLLOW));
        if (fd >= 0 && !dir_is_new(k, j->top, fd, &r)) {
                (void)close(fd);
                return r == -ENOMEM ? r : 0;
        }
        dir = fd >= 0 ? fdopendir(fd) : NULL;
        if (!dir) {
                r = -errno;
                if (fd >= 0)
                        (void)close(fd);
                warn(k->w, j->top);
                log_warning_errno(r, "HotPaths=: cannot read %s (%m), skipping", SHOWN(j->dir));
                return 0;
        }
        for (errno = 0; r >= 0 && (e = readdir(dir)); errno = 0)
                if (!streq_ptr(e->d_name, ".") && !streq_ptr(e->d_name, ".."))
                        r = take_entry(k, j, dirfd(dir), e, &batch, &files);
        if (r >= 0 && errno != 0) {
                warn(k->w, j->top);
                log_warning_errno(-errno, "HotPaths=: cannot read %s (%m), skipping",
                                  SHOWN(j->dir));
        }
        pthread_mutex_lock(&k->w->lock);
        j->top->files += files;
        pthread_mutex_unlock(&k->w->lock);
        if (r >= 0)
                r = hand_over(k, &batch);
        job_free(batch);
        return r;
}

/* Takes jobs until there are none and no thread is busy (and so can make more), or the walk
 * stops. */
static void *walker_run(void *userdata) {
        Walker *k = userdata;
        Walk *w = k->w;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                Job *j;
                int r = 0;

                while (!w->stop && !w->maps && !w->lists && w->busy > 0)
                        pthread_cond_wait(&w->changed, &w->lock);
                if (w->stop || (!w->maps && !w->lists))
                        break;
                if (w->maps) {
                        j = w->maps;
                        w->maps = j->next;
                        w->maps_waiting--;
                } else {
                        j = w->lists;
                        w->lists = j->next;
                }
                w->busy++;
                pthread_mutex_unlock(&w->lock);
                if (j->kind == JOB_LIST)
                        r = run_list(k, j);
                else
                        run_map(k, j);
                job_free(j);
                if (r < 0)
                        walk_fail(w, r);
                pthread_mutex_lock(&w->lock);
                w->busy--;
                if (w->busy == 0 && !w->maps && !w->lists)
                        pthread_cond_broadcast(&w->changed);
        }
        pthread_cond_broadcast(&w->changed);
        pthread_mutex_unlock(&w->lock);
        free(k->extents);
        return NULL;
}

int hotpaths_walk_add_top(Walk *w, Top *top) {
        Job *j = job_new(top->is_dir ? JOB_LIST : JOB_MAP, top, top->is_dir ? top->path : NULL);

        if (!j || (!top->is_dir && job_add_name(j, top->path) < 0)) {
                job_free(j);
                return -ENOMEM;
        }
        (void)walk_push(w, j);
        return 0;
}

void hotpaths_walk_run(Walk *w) {
        Walker walkers[HOTPATHS_THREADS] = {};
        pthread_t threads[HOTPATHS_THREADS];
        pthread_attr_t attr;
        unsigned started = 0;

        for (unsigned i = 0; i < HOTPATHS_THREADS; i++)
                walkers[i] = (Walker){.w = w, .last_r = 1};
        if (pthread_attr_init(&attr) == 0) {
                (void)pthread_attr_setstacksize(&attr, 256 * 1024);
                for (; started + 1 < HOTPATHS_THREADS; started++) {
                        if (pthread_create(&threads[started], &attr, walker_run,
                                           &walkers[started + 1]) != 0)
                                break; /* fewer threads: slower, as good */
                        (void)pthread_setname_np(threads[started], "hotpaths");
                }
                (void)pthread_attr_destroy(&attr);
        }
        (void)walker_run(&walkers[0]);
        for (unsigned i = 0; i < started; i++)
                (void)pthread_join(threads[i], NULL);
}

void hotpaths_walk_done(Walk *w) {
        for (Job *j = w->maps, *next; j; j = next) {
                next = j->next;
                job_free(j);
        }
        for (Job *j = w->lists, *next; j; j = next) {
                next = j->next;
                job_free(j);
        }
}
