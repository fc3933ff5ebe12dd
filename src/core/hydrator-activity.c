/* SPDX-License-Identifier: MIT */
/*
 * Giving way to other I/O (Yield=), in proportion: every ACTIVITY_SAMPLE_USEC the hydrator reads
 * the disk's counters (activity.h), those of the neighbour disks behind the same instance cap
 * and what their hydrators publish (neighbours.h, siblings.h), and tells the tuner what the
 * others' I/O costs; the tuner decides the pace (tuner.h). It also publishes our own reads and
 * saves, so that our siblings do the same for us.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hydrator-internal.h"
#include "log.h"
#include "sysfs.h"
#include "thread-reads.h"

static void stop_watching(Hydrator *h, int error) {
        log_warning_errno(error, "Cannot read %s (%m): no longer yielding to other I/O on %s",
                          h->stat_path, h->dev->path);
        (void)sd_event_source_set_enabled(h->activity_timer, SD_EVENT_OFF);
        h->reading = true;
}

/* Our saves since the last sample, and the disks they land on. */
static SaveNews own_saves(Hydrator *h) {
        SaveNews news = {.saves = (unsigned)MIN(h->saves - h->saves_sampled, UINT64_C(1000)),
                         .file_bytes = h->save_bytes,
                         .disks = h->state_disks,
                         .n = h->n_state_disks};

        h->saves_sampled = h->saves;
        if (h->state_diskless)
                news.saves = 0;
        return news;
}

static void log_yield(const Hydrator *h, bool was) {
        const DepthTuner *t = &h->tuner;

        if (t->yielding == was)
                return;
        if (!t->yielding)
                log_info("%s: other I/O has calmed down: no longer yielding", h->dev->path);
        else if (t->yield_own)
                log_info("%s: other I/O on the device (%.1f MiB/s): yielding to it, %.0f%% of "
                         "what we would read",
                         h->dev->path, t->own_cost / (1 << 20), t->cut * 100);
        else
                log_info("%s: I/O on /dev/%s (%.1f MiB/s in all on the volumes beside it), which "
                         "shares the instance's bandwidth: yielding to it, %.0f%% of what we "
                         "would read",
                         h->dev->path, h->busiest[0] ? h->busiest : "?", t->other_cost / (1 << 20),
                         t->cut * 100);
}

/* A test of stalls beside us began or found them not ours (tuner.h, rule 3). */
static void log_stalls(const Hydrator *h, TunerQueueTest was, const NeighbourFigures *nb) {
        const DepthTuner *t = &h->tuner;

        if (t->stall_test == was)
                return;
        if (t->stall_test == TUNER_QUEUE_TESTING)
                log_info("%s: requests on /dev/%s wait %.0f ms, and did lately: "
                         "reading less until they wait no more",
                         h->dev->path, nb->waiting[0] ? nb->waiting : "?",
                         (double)h->tuner.their_wait_usec / USEC_PER_MSEC);
        else if (t->stall_test == TUNER_QUEUE_IGNORED && t->stall_gone)
                log_info("%s: the requests beside it wait no more: reading at %.1f MiB/s",
                         h->dev->path, t->pace / (1 << 20));
        else if (t->stall_test == TUNER_QUEUE_IGNORED && t->stall_ours)
                log_info("%s: requests beside it wait less since it reads less, but still wait "
                         "after %.0f s: keeping the cut (%.1f MiB/s), no more for a while",
                         h->dev->path, (double)(2 * TUNER_STALL_TEST_USEC) / USEC_PER_SEC,
                         t->pace / (1 << 20));
        else if (t->stall_test == TUNER_QUEUE_IGNORED)
                log_info("%s: requests beside it still wait %.0f s after reading less: not for "
                         "us, reading as before",
                         h->dev->path, (double)TUNER_STALL_TEST_USEC / USEC_PER_SEC);
}

/* Our reads, as the disk's counters see them (activity.h). */
static ActivityOurs ours(const Hydrator *h) {
        uint64_t request = hydrator_request_bytes(h);

        return (ActivityOurs){
                .bytes = hydrator_bytes_read(h),
                .reads = h->reader ? reader_in_flight(h->reader) : 0,
                .read_bytes = request,
                .requests_min = block_device_requests_per_read_min(h->dev, request),
                .requests_max = block_device_requests_per_read(h->dev, request),
        };
}

/*
 * Every ACTIVITY_SAMPLE_USEC: our completions first (so that the disk's counters and ours
 * cover the same reads), then the neighbours and the siblings (whose saves we allow for on our
 * disk too), then our disk; the tuner hears what the others cost.
 */
int hydrator_on_activity(sd_event_source *s, uint64_t usec, void *userdata) {
        Hydrator *h = userdata;
        uint64_t now = hydrator_now_usec();
        NeighbourFigures nb = {0};
        ActivityAllowance allowance = {0};
        ActivityFigures f;
        ActivityOurs o;
        SaveNews own;
        DiskStat st;
        TunerQueueTest stall_test;
        bool was;
        unsigned probes;
        int r;

        if (h->reader)
                reader_poll(h->reader);
        /* What the file-system discovery read is ours too (thread-reads.h). */
        h->threads_read = MAX(h->threads_read, thread_reads_others());
        hydrator_publish_reads(h);
        if (h->phase != HYDRATOR_HYDRATING)
                return 0;
        r = disk_stat_read(h->stat_fd, &st);
        if (r < 0) {
                stop_watching(h, r);
                hydrator_fill(h);
                return 0;
        }
        own = own_saves(h);
        if (h->neighbours)
                neighbours_sample(h->neighbours, now, &own, &nb);
        save_allowance(&own, h->disk, &allowance);
        neighbours_save_allowance(h->neighbours, h->disk, &allowance);
        o = ours(h);
        activity_sample(&h->activity, &st, &o, &allowance, now, &f);
        /* While the file systems are mapped, what the disk read is the mapping's (or the probe
         * that started us): it does not reach the window the yield judges from afterwards. What
         * others write meanwhile does. */
        if (now < h->mapping_until_usec)
                activity_forget_reads(&h->activity);
        if (++h->activity_samples % (USEC_PER_SEC / ACTIVITY_SAMPLE_USEC) == 0)
                log_debug("%s: the last second: ours %.1f MiB/s; others on the disk %.2f MiB/s "
                          "read, %.2f written in %.0f operations; beside it %.2f MiB/s of cost "
                          "(most on %s), siblings %.1f MiB/s",
                          h->state->key, f.ours / (1 << 20), f.reads / (1 << 20),
                          f.writes / (1 << 20), f.write_ops, nb.cost / (1 << 20),
                          nb.busiest[0] ? nb.busiest : "none", nb.siblings / (1 << 20));
        /* The mapping reads the device beside us, and not all of it is counted as ours:
         * until it is done, only writes on our disk are someone else's. */
        if (now < h->mapping_until_usec)
                f.reads = 0;
        if (nb.busiest[0]) /* who cost most lately, for the log */
                memcpy(h->busiest, nb.busiest, sizeof(h->busiest));
        was = h->tuner.yielding;
        stall_test = h->tuner.stall_test;
        probes = h->tuner.hidden_probes;
        tuner_siblings(&h->tuner, nb.readers, nb.queued, nb.sibling_bytes, now);
        tuner_stalls(&h->tuner, MAX(nb.waited_usec, nb.latency_usec), nb.stall);
        if (tuner_sample(&h->tuner, nb.siblings, activity_cost(&f), nb.cost, now))
                hydrator_log_depth(h);
        log_yield(h, was);
        log_stalls(h, stall_test, &nb);
        if (h->tuner.hidden_probes != probes)
                log_info("%s: requests on /dev/%s took %.0f ms, and did in most of the last "
                         "second: reading at %u instead of %u for %.0f s, to see what they want",
                         h->dev->path, nb.waiting[0] ? nb.waiting : "?",
                         (double)h->tuner.their_wait_usec / USEC_PER_MSEC, h->tuner.depth,
                         h->tuner.hidden_depth, (double)TUNER_HIDDEN_USEC / USEC_PER_SEC);
        /* Late (the loop was busy): the next look a whole period from now, not at once. */
        (void)hydrator_arm_timer(s,
                                 MAX(usec + ACTIVITY_SAMPLE_USEC, now + ACTIVITY_SAMPLE_USEC / 2));
        hydrator_fill(h);
        return 0;
}

int hydrator_watch_neighbours(Hydrator *h, const char *sysfs_root, int runtime_fd) {
        if (h->phase != HYDRATOR_LOADED || h->stat_fd < 0)
                return -EBUSY;
        return neighbours_new(&h->neighbours, sysfs_root, h->dev->kernel_name, runtime_fd,
                              hydrator_now_usec());
}

int hydrator_watch_activity(Hydrator *h, const char *stat_path) {
        DiskStat st;
        int r;

        if (h->phase != HYDRATOR_LOADED)
                return -EBUSY;
        h->stat_path = strdup(stat_path);
        if (!h->stat_path)
                return -ENOMEM;
        h->stat_fd = open(stat_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (h->stat_fd < 0)
                return -errno;
        r = disk_stat_read(h->stat_fd, &st);
        if (r < 0) {
                (void)close(h->stat_fd);
                h->stat_fd = -1;
        }
        return r;
}

static int add_state_disk(const char *name, void *userdata) {
        Hydrator *h = userdata;
        _cleanup_free_ char *path = NULL;
        dev_t dev;

        if (h->n_state_disks == SIBLING_STATE_DISKS)
                return 0;
        if (asprintf(&path, "%s/block/%s/dev", h->sysfs_root, name) < 0)
                return -ENOMEM;
        if (sysfs_read_devnum_at(AT_FDCWD, path, &dev) < 0)
                return 0;
        for (unsigned i = 0; i < h->n_state_disks; i++)
                if (h->state_disks[i] == dev)
                        return 0;
        h->state_disks[h->n_state_disks++] = dev;
        return 0;
}

/*
 * The disks the state directory is on: those under the device its file system says it is on.
 * A file system with no device of its own (tmpfs, ramfs) is on none; one whose device is not
 * a block device (btrfs' anonymous one, overlayfs) could be on any: none known means all.
 */
static void find_state_disks(Hydrator *h) {
        _cleanup_free_ char *dir = NULL;
        struct statfs sfs;
        struct stat st;

        h->n_state_disks = 0;
        if (fstatfs(h->state_dir_fd, &sfs) == 0 &&
            (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)) {
                h->state_diskless = true;
                return;
        }
        if (fstat(h->state_dir_fd, &st) < 0 ||
            !(dir = sysfs_dev_block(h->sysfs_root, st.st_dev, NULL)) ||
            sysfs_disks_under(dir, add_state_disk, h) < 0)
                h->n_state_disks = 0; /* not known: every disk */
}

int hydrator_share(Hydrator *h, const char *sysfs_root, int runtime_fd) {
        struct stat st;
        int r;

        if (h->phase != HYDRATOR_LOADED)
                return -EBUSY;
        if (fstat(h->dev->fd, &st) < 0)
                return -errno;
        h->disk = st.st_rdev;
        h->sysfs_root = sysfs_root;
        find_state_disks(h);
        if (runtime_fd < 0)
                return 0;
        r = sibling_pub_new(&h->publication, runtime_fd, h->dev->kernel_name, h->disk,
                            h->state_disks, h->n_state_disks, hydrator_now_usec());
        h->sysfs_root = NULL;
        return r;
}

uint64_t hydrator_bytes_read(const Hydrator *h) {
        return h->bytes_completed + (h->reader ? reader_partial_bytes(h->reader) : 0) +
               h->threads_read;
}

void hydrator_publish_reads(Hydrator *h) {
        ActivityOurs o;
        uint64_t now;

        if (!h->publication) /* no siblings' directory: nothing to tell, at every flush */
                return;
        o = ours(h);

        now = hydrator_now_usec();
        sibling_pub_reads(h->publication, &o, now);
        sibling_pub_queueing(h->publication, tuner_queueing(&h->tuner));
        sibling_pub_mapping(h->publication, now < h->mapping_until_usec);
}

void hydrator_on_flushed(Reader *r, void *userdata) {
        hydrator_publish_reads(userdata);
}
