/* SPDX-License-Identifier: MIT */
/*
 * File-system discovery in a thread; see discovery.h. The thread owns a copy of everything it
 * uses (strings, a dup() of the device), so that the main thread can let go of a discovery that
 * is stuck in the device at any time: whichever of the two is last frees the job, decided by
 * one atomic exchange of its state. What it learns on the way goes into a queue of messages
 * under a lock, and an eventfd wakes the event loop for them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "activity.h"
#include "discovery.h"
#include "hotpaths.h"
#include "hydrator.h"
#include "log.h"
#include "time-util.h"
#include "util.h"

#define DISCOVERY_WATCH_USEC USEC_PER_SEC /* a look at the disk's counters */

enum { JOB_RUNNING, JOB_DONE, JOB_ABANDONED };

/* What the thread tells on the way: reads to come, or the layout is known. */
typedef struct Message {
        struct Message *next;
        ByteRange *ahead; /* NULL: the layout is known */
        size_t n;
} Message;

/* What the thread owns while it runs. */
typedef struct Job {
        _Atomic int state;
        int fd;      /* dup() of the device */
        int done_fd; /* eventfd: a message, or the thread's "finished" */
        uint64_t size;
        uint32_t chunk_size;
        dev_t rdev;
        char *hot_paths, *sysfs_root;
        DiscoveryResult result; /* the layout before the "mapped" message, the rest before DONE */
        pthread_mutex_t lock;   /* of the messages */
        Message *first, **last;
} Job;

struct Discovery {
        Job *job;
        pthread_t thread;
        bool joined;
        bool finished; /* @done was called */
        sd_event_source *done_source;
        sd_event_source *watch_timer;
        int stat_fd;
        char *key, *devnode;
        DiskStat last;
        bool have_last;
        uint64_t last_progress_usec;
        uint64_t stalled_usec;
        bool stall_said;
        bool mapped_seen; /* the layout is known */
        discovery_done_t done;
        discovery_done_t mapped;
        discovery_ahead_t ahead;
        void (*stalled)(void *userdata);
        void *userdata;
};

static void job_free(Job *j) {
        if (!j)
                return;
        for (Message *m = j->first, *next; m; m = next) {
                next = m->next;
                free(m->ahead);
                free(m);
        }
        pthread_mutex_destroy(&j->lock);
        if (j->fd >= 0)
                (void)close(j->fd);
        if (j->done_fd >= 0)
                (void)close(j->done_fd);
        fslayout_free(&j->result.layout);
        free(j->result.error);
        free(j->result.hot);
        free(j->hot_paths);
        free(j->sysfs_root);
        free(j);
}

/* Queues a message (taking @ahead) and wakes the event loop. Out of memory, a hint is dropped;
 * the "mapped" message is not: the event loop then learns the layout with "done". */
static void job_post(Job *j, ByteRange *ahead, size_t n) {
        Message *m = calloc(1, sizeof(*m));

        if (!m) {
                free(ahead);
                return;
        }
        *m = (Message){.ahead = ahead, .n = n};
        pthread_mutex_lock(&j->lock);
        *j->last = m;
        j->last = &m->next;
        pthread_mutex_unlock(&j->lock);
        (void)eventfd_write(j->done_fd, 1);
}

static void job_hint_ahead(const ByteRange *ranges, size_t n, void *userdata) {
        ByteRange *copy = malloc(n * sizeof(ByteRange));

        if (!copy)
                return;
        memcpy(copy, ranges, n * sizeof(ByteRange));
        job_post(userdata, copy, n);
}

static void *job_run(void *userdata) {
        Job *j = userdata;
        DiscoveryResult *res = &j->result;
        FsLayoutHints hints = {.ahead = job_hint_ahead, .userdata = j};

        res->mapped = fslayout_discover_chunks(j->fd, j->size, j->chunk_size, &hints, &res->layout,
                                               &res->error);
        job_post(j, NULL, 0);
        if (j->hot_paths[strspn(j->hot_paths, " \t")] != '\0')
                res->hot_error = hotpaths_resolve(j->hot_paths, j->rdev, j->sysfs_root, &res->hot,
                                                  &res->n_hot);
        if (atomic_exchange(&j->state, JOB_DONE) == JOB_ABANDONED) {
                job_free(j); /* nobody waits for it any more */
                return NULL;
        }
        (void)eventfd_write(j->done_fd, 1);
        return NULL;
}

static void join(Discovery *d) {
        if (!d->joined)
                (void)pthread_join(d->thread, NULL);
        d->joined = true;
}

/* Hands the messages queued so far to the callbacks, in order. */
static void deliver(Discovery *d) {
        Job *j = d->job;

        for (;;) {
                Message *m;

                pthread_mutex_lock(&j->lock);
                m = j->first;
                if (m) {
                        j->first = m->next;
                        if (!j->first)
                                j->last = &j->first;
                }
                pthread_mutex_unlock(&j->lock);
                if (!m)
                        return;
                if (!m->ahead) {
                        d->mapped_seen = true;
                        if (d->mapped)
                                d->mapped(d, d->userdata);
                } else if (d->ahead)
                        d->ahead(d, m->ahead, m->n, d->userdata);
                free(m->ahead);
                free(m);
        }
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Discovery *d = userdata;
        eventfd_t v;

        (void)eventfd_read(fd, &v);
        /* The state first: every message posted before DONE is in the queue when it is read. */
        if (atomic_load(&d->job->state) != JOB_DONE) {
                deliver(d);
                return 0;
        }
        deliver(d);
        (void)sd_event_source_set_enabled(s, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(d->watch_timer, SD_EVENT_OFF);
        join(d);
        if (d->stall_said)
                log_info("%s: the device answers again; its file systems are mapped", d->devnode);
        d->stalled_usec = 0;
        d->finished = true;
        d->mapped_seen = true;
        d->done(d, d->userdata);
        return 0;
}

/*
 * Reads held by the disk and none completed since the last look: the clock of a stall runs.
 * Reads completing, or none held (libext2fs computing between reads), is progress.
 */
static int on_watch(sd_event_source *s, uint64_t usec, void *userdata) {
        Discovery *d = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        DiskStat st;

        (void)sd_event_source_set_time(s, usec + DISCOVERY_WATCH_USEC);
        if (disk_stat_read(d->stat_fd, &st) < 0)
                return 0;
        if (!d->have_last || st.in_flight == 0 || st.read_ios != d->last.read_ios ||
            st.write_ios != d->last.write_ios) {
                d->last = st;
                d->have_last = true;
                d->last_progress_usec = now;
                if (d->stall_said && d->stalled_usec > 0)
                        log_info("%s: reads complete again after %" PRIu64 " s", d->devnode,
                                 d->stalled_usec / USEC_PER_SEC);
                d->stalled_usec = 0;
                d->stall_said = false;
                return 0;
        }
        if (now - d->last_progress_usec < HYDRATOR_STALL_USEC)
                return 0;
        d->stalled_usec = now - d->last_progress_usec;
        if (d->stall_said)
                return 0;
        d->stall_said = true;
        log_volume(LOG_WARNING, LOG_MESSAGE_HYDRATION_STALLED, d->key, d->devnode,
                   "%s: no read has completed for %" PRIu64 " s (%" PRIu64 " in flight) "
                   "while mapping its file systems: the device looks stalled",
                   d->devnode, d->stalled_usec / USEC_PER_SEC, st.in_flight);
        if (d->stalled)
                d->stalled(d->userdata);
        return 0;
}

int discovery_start(Discovery **ret, sd_event *event, const DiscoveryRequest *req,
                    discovery_done_t done, void *userdata) {
        _cleanup_(discovery_freep) Discovery *d = NULL;
        Job *j;
        int r;

        d = calloc(1, sizeof(*d));
        j = calloc(1, sizeof(*j));
        if (!d || !j) {
                free(j);
                return -ENOMEM;
        }
        d->job = j;
        d->joined = true; /* until the thread exists */
        d->stat_fd = -1;
        d->done = done;
        d->mapped = req->mapped;
        d->ahead = req->ahead;
        d->stalled = req->stalled;
        d->userdata = userdata;
        j->fd = j->done_fd = -1;
        j->last = &j->first;
        pthread_mutex_init(&j->lock, NULL);
        j->size = req->size;
        j->chunk_size = req->chunk_size;
        j->rdev = req->rdev;
        j->hot_paths = strdup(req->hot_paths ?: "");
        j->sysfs_root = strdup(req->sysfs_root);
        d->key = strdup(req->key);
        d->devnode = strdup(req->devnode);
        if (!j->hot_paths || !j->sysfs_root || !d->key || !d->devnode)
                return -ENOMEM;
        j->fd = fcntl(req->fd, F_DUPFD_CLOEXEC, 3);
        if (j->fd < 0)
                return -errno;
        j->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (j->done_fd < 0)
                return -errno;
        r = sd_event_add_io(event, &d->done_source, j->done_fd, EPOLLIN, on_done, d);
        if (r < 0)
                return r;
        if (req->stat_path) {
                d->stat_fd = open(req->stat_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (d->stat_fd < 0)
                        log_debug_errno(-errno,
                                        "Cannot open %s (%m): a stall during discovery "
                                        "goes unnoticed",
                                        req->stat_path);
        }
        if (d->stat_fd >= 0) {
                r = sd_event_add_time_relative(event, &d->watch_timer, CLOCK_MONOTONIC, 0, 0,
                                               on_watch, d);
                if (r >= 0)
                        r = sd_event_source_set_enabled(d->watch_timer, SD_EVENT_ON);
                if (r < 0)
                        return r;
        }
        atomic_store(&j->state, JOB_RUNNING);
        r = -pthread_create(&d->thread, NULL, job_run, j);
        if (r < 0)
                return r;
        (void)pthread_setname_np(d->thread, "discovery");
        d->joined = false;
        *ret = TAKE_PTR(d);
        return 0;
}

DiscoveryResult *discovery_result(Discovery *d) {
        return d && d->mapped_seen ? &d->job->result : NULL;
}

uint64_t discovery_stalled_usec(const Discovery *d) {
        return d && !d->finished ? d->stalled_usec : 0;
}

Discovery *discovery_free(Discovery *d);

Discovery *discovery_free(Discovery *d) {
        if (!d)
                return NULL;
        sd_event_source_disable_unref(d->done_source);
        sd_event_source_disable_unref(d->watch_timer);
        if (d->job) {
                if (d->joined) {
                        job_free(d->job);
                } else if (atomic_exchange(&d->job->state, JOB_ABANDONED) == JOB_DONE) {
                        join(d); /* finished, or about to: it no longer blocks */
                        job_free(d->job);
                } else {
                        (void)pthread_detach(d->thread); /* it frees the job when it returns */
                }
        }
        if (d->stat_fd >= 0)
                (void)close(d->stat_fd);
        free(d->key);
        free(d->devnode);
        free(d);
        return NULL;
}
