/* SPDX-License-Identifier: MIT */
/*
 * Giving way to other I/O (Yield=): the hydrator watches the disk's counters (activity.h) and
 * those of the neighbour disks behind the same instance cap (neighbours.h), and tells the tuner
 * whether anyone else used them.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "hydrator-internal.h"
#include "log.h"
#include "thread-reads.h"

static void stop_watching(Hydrator *h, int error) {
        log_warning_errno(error, "Cannot read %s (%m): no longer yielding to other I/O on %s",
                          h->stat_path, h->dev->path);
        (void)sd_event_source_set_enabled(h->activity_timer, SD_EVENT_OFF);
        h->reading = true;
}

/*
 * Every ACTIVITY_SAMPLE_USEC: our completions first (so that the disk's counters and ours
 * cover the same reads), then the counters; the tuner hears whether anyone else used the
 * device. The first reads wait for two looks, so that a busy volume is yielded to before
 * the first read, not after.
 */
int hydrator_on_activity(sd_event_source *s, uint64_t usec, void *userdata) {
        Hydrator *h = userdata;
        uint64_t now = hydrator_now_usec();
        DiskStat st;
        bool active;
        double rate;
        int r;

        if (h->reader)
                reader_poll(h->reader);
        if (h->phase != HYDRATOR_HYDRATING)
                return 0;
        r = disk_stat_read(h->stat_fd, &st);
        if (r < 0) {
                stop_watching(h, r);
                hydrator_fill(h);
                return 0;
        }
        /* Ours: our completed reads, and what the file-system discovery reads beside them. */
        active = activity_sample(
                &h->activity, &st, h->bytes_completed + thread_reads_others(),
                h->reader ? (uint64_t)reader_in_flight(h->reader) * hydrator_request_bytes(h) : 0,
                now, &rate);
        if (active && !h->tuner.yielding)
                log_info("%s: other I/O on the device (%.1f MiB/s): yielding to it", h->dev->path,
                         rate / (1 << 20));
        if (h->neighbours) {
                char name[KERNEL_NAME_MAX];
                double theirs;
                bool busy = neighbours_sample(h->neighbours, now, &theirs, name);

                if (busy && !active && !h->tuner.yielding)
                        log_info("%s: I/O on /dev/%s (%.1f MiB/s), which shares the instance's "
                                 "bandwidth: yielding to it",
                                 h->dev->path, name, theirs / (1 << 20));
                if (active || busy)
                        h->yield_neighbours = !active;
                active = active || busy;
                rate += theirs;
        }
        if (tuner_foreign(&h->tuner, active, rate, now))
                hydrator_log_depth(h);
        if (!h->reading && ++h->activity_samples >= 2)
                h->reading = true;
        (void)hydrator_arm_timer(s, usec + ACTIVITY_SAMPLE_USEC);
        hydrator_fill(h);
        return 0;
}

int hydrator_watch_neighbours(Hydrator *h, const char *sysfs_root) {
        if (h->phase != HYDRATOR_LOADED || h->stat_fd < 0)
                return -EBUSY;
        return neighbours_new(&h->neighbours, sysfs_root, h->dev->kernel_name, hydrator_now_usec());
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
