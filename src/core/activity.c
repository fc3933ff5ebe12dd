/* SPDX-License-Identifier: MIT */
/*
 * Other I/O on the device, told from the disk's counters and ours (activity.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "activity.h"
#include "util.h"

int disk_stat_parse(const char *text, DiskStat *ret) {
        uint64_t f[17] = {0};
        int n;

        n = sscanf(text,
                   "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
                   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10],
                   &f[11], &f[12], &f[13], &f[14], &f[15], &f[16]);
        if (n != 11 && n != 15 && n != 17)
                return -EBADMSG;
        *ret = (DiskStat){
                .read_ios = f[0],
                .read_sectors = f[2],
                .write_ios = f[4],
                .write_sectors = f[6],
                .in_flight = f[8],
                .discard_ios = f[11],
                .flush_ios = f[15],
        };
        return 0;
}

int disk_stat_read(int fd, DiskStat *ret) {
        char buf[512];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        if (n < 0)
                return -errno;
        if ((size_t)n >= sizeof(buf) - 1) /* a stat line is under 200 bytes */
                return -EBADMSG;
        buf[n] = '\0';
        return disk_stat_parse(buf, ret);
}

/* Counters only grow; one that went back (a device replaced under the same name) is a restart. */
static uint64_t delta(uint64_t now, uint64_t then) {
        return now >= then ? now - then : 0;
}

static void remember(Activity *a) {
        if (a->n_history == ACTIVITY_HISTORY) {
                for (unsigned i = 1; i < ACTIVITY_HISTORY; i++)
                        a->history[i - 1] = a->history[i];
                a->n_history--;
        }
        a->history[a->n_history++] = a->excess;
}

static int64_t window_min(const Activity *a) {
        int64_t m = a->excess;

        for (unsigned i = 0; i < a->n_history; i++)
                m = MIN(m, a->history[i]);
        return m;
}

bool activity_sample(Activity *a, const DiskStat *st, uint64_t ours, uint64_t ours_in_flight,
                     uint64_t now_usec, double *ret_rate) {
        uint64_t writes, written, read_bytes, our_bytes, dt;
        int64_t theirs, back;
        unsigned span;
        bool active;

        *ret_rate = 0;
        if (!a->primed) {
                *a = (Activity){
                        .primed = true, .last = *st, .last_ours = ours, .last_usec = now_usec};
                remember(a);
                return false;
        }
        writes = delta(st->write_ios, a->last.write_ios) +
                 delta(st->discard_ios, a->last.discard_ios) +
                 delta(st->flush_ios, a->last.flush_ios);
        written = delta(st->write_sectors, a->last.write_sectors) * 512;
        read_bytes = delta(st->read_sectors, a->last.read_sectors) * 512;
        our_bytes = delta(ours, a->last_ours);
        dt = MAX(delta(now_usec, a->last_usec), UINT64_C(1));

        /* The excess is their reads plus the parts of ours the disk counted before we could:
         * at most what we have in flight. So this much is theirs for sure. */
        a->excess += (int64_t)read_bytes - (int64_t)our_bytes;
        theirs = a->excess - (int64_t)ours_in_flight - window_min(a);
        active = writes > 0 || theirs > (int64_t)ACTIVITY_READ_SLACK;
        /* Their rate over the last second or so: the parts of ours even out. */
        span = MIN(a->n_history, ACTIVITY_RATE_SAMPLES);
        back = a->history[a->n_history - span];
        *ret_rate = ((double)MAX(a->excess - back, INT64_C(0)) / (double)span + (double)written) *
                    (double)USEC_PER_SEC / (double)dt;
        remember(a);
        a->last = *st;
        a->last_ours = ours;
        a->last_usec = now_usec;
        return active;
}

void disk_family(const char *kernel_name, char *ret, size_t size) {
        static const char *const lettered[] = {"xvd", "sd", "vd", "hd"}; /* sdb, xvdf */
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(lettered); i++)
                if (strncmp(kernel_name, lettered[i], strlen(lettered[i])) == 0) {
                        n = strlen(lettered[i]);
                        break;
                }
        if (n == 0)
                while (kernel_name[n] >= 'a' && kernel_name[n] <= 'z')
                        n++;
        (void)snprintf(ret, size, "%.*s", (int)n, kernel_name);
}

bool activity_neighbour(const DiskStat *before, const DiskStat *now, uint64_t dt_usec,
                        double *ret_rate) {
        uint64_t writes = delta(now->write_ios, before->write_ios) +
                          delta(now->discard_ios, before->discard_ios) +
                          delta(now->flush_ios, before->flush_ios);
        uint64_t bytes = (delta(now->read_sectors, before->read_sectors) +
                          delta(now->write_sectors, before->write_sectors)) *
                         512;

        *ret_rate = (double)bytes * (double)USEC_PER_SEC / (double)MAX(dt_usec, UINT64_C(1));
        return writes > 0 || bytes > ACTIVITY_READ_SLACK;
}
