/* SPDX-License-Identifier: MIT */
/*
 * Other I/O on the device, told from the disk's counters and ours (activity.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "activity.h"
#include "util.h"

/* /sys/block/<disk>/stat: 17 numbers of at most 20 digits, and their spaces. */
#define DISK_STAT_TEXT_MAX 512

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
                .read_ticks = f[3],
                .write_ios = f[4],
                .write_sectors = f[6],
                .write_ticks = f[7],
                .in_flight = f[8],
                .discard_ios = f[11],
                .flush_ios = f[15],
        };
        return 0;
}

int disk_stat_read(int fd, DiskStat *ret) {
        char buf[DISK_STAT_TEXT_MAX];
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

/* Keeps @step, the last ACTIVITY_RATE_SAMPLES of them; the excess where the oldest kept began
 * is the start of the window. */
static void remember(Activity *a, const ActivityStep *step) {
        if (a->n_steps == ACTIVITY_RATE_SAMPLES) {
                a->window_theirs = a->steps[0].theirs;
                for (unsigned i = 1; i < ACTIVITY_RATE_SAMPLES; i++)
                        a->steps[i - 1] = a->steps[i];
                a->n_steps--;
        }
        a->steps[a->n_steps++] = *step;
}

/*
 * What they read over the last second, from the steps, less what counting cannot tell apart.
 * What looks read by someone is a level, and the level of one sample can be off by reads of ours
 * counted at the disk and not yet by us (or the other way round) that the next sample sets
 * right: a spike, which at the end of the window (or a dip at its start) would be a second's
 * worth of someone's reads. So the window ends at the lower of its last two levels and starts at
 * the higher of its first two, and the rate is over the time between them: a real reader's reads
 * go on, and show a sample later.
 */
static double their_reads(const Activity *a, uint64_t usec) {
        unsigned first = 0, last = a->n_steps - 1;
        int64_t from = a->window_theirs, to = a->steps[last].theirs, grew;
        uint64_t between = 0;

        if (a->n_steps >= 2 && a->steps[last - 1].theirs < to)
                to = a->steps[--last].theirs;
        if (last >= 1 && a->steps[0].theirs > from) {
                from = a->steps[0].theirs;
                first = 1;
        }
        for (unsigned i = first; i <= last; i++)
                between += a->steps[i].span_usec;
        grew = to - from - (int64_t)ACTIVITY_READ_SLACK;
        if (grew <= 0 || between == 0)
                return 0;
        /* per second of at least a whole second while the window is not: in the first samples
         * a journal's one commit, seen over 100 ms, would be ten commits a second */
        return (double)grew * (double)USEC_PER_SEC /
               (double)(usec >= USEC_PER_SEC ? between : USEC_PER_SEC);
}

/* The last second, from the steps. Theirs per second of at least a whole second (above). */
static void figures(const Activity *a, ActivityFigures *ret) {
        uint64_t ours = 0, written = 0, ops = 0, usec = 0, theirs_usec;

        for (unsigned i = 0; i < a->n_steps; i++) {
                ours += a->steps[i].ours;
                written += a->steps[i].written;
                ops += a->steps[i].ops;
                usec += a->steps[i].span_usec;
        }
        if (usec == 0)
                return;
        theirs_usec = MAX(usec, USEC_PER_SEC);
        *ret = (ActivityFigures){
                .ours = (double)ours * (double)USEC_PER_SEC / (double)usec,
                .reads = their_reads(a, usec),
                .writes = (double)written * (double)USEC_PER_SEC / (double)theirs_usec,
                .write_ops = (double)ops * (double)USEC_PER_SEC / (double)theirs_usec,
        };
}

static unsigned requests_min(const ActivityOurs *ours) {
        return MAX(ours->requests_min, 1u);
}

static unsigned requests_max(const ActivityOurs *ours) {
        return MAX(ours->requests_max, requests_min(ours));
}

/* How the disk splits a read of ours: as it showed, within what the device allows now (a
 * sibling that restarted may read in another size); the fewest until it has shown. */
static unsigned split_of(const Activity *a, const ActivityOurs *ours) {
        if (a->requests_per_read == 0)
                return requests_min(ours);
        return CLAMP(a->requests_per_read, requests_min(ours), requests_max(ours));
}

/* What the disk counted of our reads in flight: the requests of ours it no longer holds. Until
 * it has shown how it splits a read, each is taken as the fewest requests: a part counted
 * early is then missed (its bytes look like someone else's for a sample), but never half of a
 * deep queue. */
static uint64_t counted_early(const Activity *a, const DiskStat *st, const ActivityOurs *ours) {
        unsigned k = split_of(a, ours);
        uint64_t requests = ours->reads * k, held = MIN(st->in_flight, requests);

        return (requests - held) * DIV_ROUND_UP(ours->read_bytes, k);
}

/* Is @x8 eighths within one eighth of @k? */
static bool near(uint64_t x8, unsigned k) {
        uint64_t k8 = (uint64_t)k * 8;

        return (x8 > k8 ? x8 - k8 : k8 - x8) <= 1;
}

/*
 * In a sample where the disk read what we completed (within ACTIVITY_SPLIT_SLACK) and that was
 * two reads or more, its completed requests over our reads are how it splits one, if that is a
 * whole number (within an eighth) the device allows, and the requests it holds over our reads
 * in flight (four or more) say the same: someone's small reads beside ours add requests but
 * hardly any bytes, and make it no whole number, or one out of bounds. The first
 * such sample sets it (the fewest was a guess); then the same other number in
 * ACTIVITY_SPLIT_SAMPLES such samples in a row changes it. True when it changed.
 */
static bool learn_split(Activity *a, const DiskStat *st, const ActivityOurs *ours,
                        uint64_t disk_bytes, uint64_t ours_bytes) {
        uint64_t ios = delta(st->read_ios, a->last.read_ios), diff, x8;
        unsigned k;

        if (ours->read_bytes == 0 || ours->read_bytes > UINT64_C(1) << 40 ||
            ours_bytes / 2 < ours->read_bytes || ios == 0 || ios > UINT64_C(1) << 20 ||
            disk_bytes == 0)
                return false;
        diff = disk_bytes > ours_bytes ? disk_bytes - ours_bytes : ours_bytes - disk_bytes;
        if (diff > ACTIVITY_SPLIT_SLACK)
                return false;
        /* 8 x ios / (disk_bytes / read_bytes): the split in eighths */
        x8 = ios * 8 * ours->read_bytes / disk_bytes;
        k = (unsigned)MIN((x8 + 4) / 8, (uint64_t)UINT_MAX);
        if (k < requests_min(ours) || k > requests_max(ours) || !near(x8, k))
                return false;
        /* and the requests it holds of ours: so many small reads of someone's that their count
         * makes a whole number too are not in flight together as ours are */
        if (ours->reads < 4 || ours->reads > UINT64_C(1) << 20 ||
            !near(MIN(st->in_flight, UINT64_C(1) << 30) * 8 / ours->reads, k))
                return false;
        if (k == split_of(a, ours)) {
                a->requests_per_read = k;
                a->seen_other = 0;
                return false;
        }
        if (a->requests_per_read == 0) { /* the first it shows: the fewest was a guess */
                a->requests_per_read = k;
                return true;
        }
        if (k != a->seen_split) {
                a->seen_split = k;
                a->seen_other = 0;
        }
        if (++a->seen_other < ACTIVITY_SPLIT_SAMPLES)
                return false;
        a->requests_per_read = k;
        a->seen_other = 0;
        return true;
}

/* The disk's counts went back since the last sample: another device under the name. */
static bool replaced(const Activity *a, const DiskStat *st) {
        return st->read_ios < a->last.read_ios || st->write_ios < a->last.write_ios;
}

/*
 * How long a request of the disk has waited at least (ActivityFigures.waited_usec). The
 * requests in flight at a sample after which none completed are all still in flight: the
 * oldest of them is as old as the time since that sample, at least. One in flight now after a
 * sample with none may be new, so the wait counts from now. Any completion starts it again,
 * and so does another device under the name (its requests are new).
 */
static uint64_t waited(Activity *a, const DiskStat *st, uint64_t now) {
        uint64_t done = delta(st->read_ios, a->last.read_ios) +
                        delta(st->write_ios, a->last.write_ios) +
                        delta(st->discard_ios, a->last.discard_ios) +
                        delta(st->flush_ios, a->last.flush_ios);

        if (st->in_flight == 0)
                a->waiting_usec = 0;
        else if (done > 0 || replaced(a, st) || a->waiting_usec == 0)
                a->waiting_usec = now;
        return a->waiting_usec > 0 ? now - a->waiting_usec : 0;
}

/* A tick count's growth: the kernel prints them as 32-bit numbers of ms, which wrap (at 32
 * requests in flight, after about a day and a half). */
static uint64_t delta_ticks(uint64_t now, uint64_t then) {
        if (now >= then)
                return now - then;
        return then <= UINT32_MAX && now <= UINT32_MAX ? now + (UINT64_C(1) << 32) - then : 0;
}

/* The mean time the reads and writes completed since the last sample took (ActivityFigures);
 * none where a count went back (another device under the name). */
static uint64_t latency(const Activity *a, const DiskStat *st) {
        uint64_t ios, ticks;

        if (replaced(a, st))
                return 0;
        ios = st->read_ios - a->last.read_ios + st->write_ios - a->last.write_ios;
        ticks = delta_ticks(st->read_ticks, a->last.read_ticks) +
                delta_ticks(st->write_ticks, a->last.write_ticks);
        /* (a sum that would overflow in usec is no count a disk gives: none) */
        return ios > 0 && ticks < UINT64_MAX / USEC_PER_MSEC ? ticks * USEC_PER_MSEC / ios : 0;
}

bool activity_stall(Activity *a, uint64_t waited_usec, uint64_t latency_usec, uint64_t now) {
        if (waited_usec < ACTIVITY_STALL_USEC && latency_usec < ACTIVITY_STALL_USEC) {
                a->stall_usec = 0;
                return false;
        }
        if (a->stall_usec > 0 && now - a->stall_usec < ACTIVITY_STALL_AGAIN_USEC)
                return false;
        a->stall_usec = now;
        return true;
}

void activity_sample(Activity *a, const DiskStat *st, const ActivityOurs *ours,
                     const ActivityAllowance *allowance, uint64_t now_usec, ActivityFigures *ret) {
        uint64_t disk_bytes, early;
        ActivityStep step;

        *ret = (ActivityFigures){0};
        if (!a->primed) {
                *a = (Activity){.primed = true,
                                .last = *st,
                                .last_ours = ours->bytes,
                                .last_usec = now_usec,
                                .waiting_usec = st->in_flight > 0 ? now_usec : 0};
                a->window_theirs = -(int64_t)counted_early(a, st, ours);
                return;
        }
        step = (ActivityStep){
                .ours = delta(ours->bytes, a->last_ours),
                .span_usec = MAX(delta(now_usec, a->last_usec), UINT64_C(1)),
        };
        step.ops = delta(st->write_ios, a->last.write_ios) +
                   delta(st->discard_ios, a->last.discard_ios) +
                   delta(st->flush_ios, a->last.flush_ios);
        step.written = delta(st->write_sectors, a->last.write_sectors) * 512;
        if (allowance) {
                step.ops = delta(step.ops, allowance->ops);
                step.written = delta(step.written, allowance->bytes);
        }
        disk_bytes = delta(st->read_sectors, a->last.read_sectors) * 512;
        early = counted_early(a, st, ours);
        if (learn_split(a, st, ours, disk_bytes, step.ours)) {
                /* What came before was counted with another split: the change of what looks
                 * counted early is no one's reads, so the window moves with it. */
                int64_t jump = (int64_t)early - (int64_t)counted_early(a, st, ours);

                a->window_theirs += jump;
                for (unsigned i = 0; i < a->n_steps; i++)
                        a->steps[i].theirs += jump;
                early = counted_early(a, st, ours);
        }
        a->excess += (int64_t)disk_bytes - (int64_t)step.ours;
        step.theirs = a->excess - (int64_t)early;
        remember(a, &step);
        figures(a, ret);
        ret->waited_usec = waited(a, st, now_usec);
        ret->latency_usec = latency(a, st);
        ret->stall = activity_stall(a, ret->waited_usec, ret->latency_usec, now_usec);
        a->last = *st;
        a->last_ours = ours->bytes;
        a->last_usec = now_usec;
}

void activity_rebase(Activity *a, const DiskStat *st, uint64_t ours) {
        if (!a->primed)
                return;
        a->last.read_sectors = st->read_sectors;
        a->last_ours = ours;
}

void activity_forget_reads(Activity *a) {
        int64_t level;

        if (!a->primed || a->n_steps == 0)
                return;
        /* every level in the window the last one: no growth in it */
        level = a->steps[a->n_steps - 1].theirs;
        a->window_theirs = level;
        for (unsigned i = 0; i < a->n_steps; i++)
                a->steps[i].theirs = level;
}

double activity_cost(const ActivityFigures *f) {
        return f->reads + f->writes + f->write_ops * (double)ACTIVITY_OP_BYTES;
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
