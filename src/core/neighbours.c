/* SPDX-License-Identifier: MIT */
/*
 * The disks that share the instance's cap with ours, their counters and their hydrators
 * (neighbours.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "activity.h"
#include "neighbours.h"
#include "siblings.h"
#include "sysfs.h"
#include "util.h"

typedef struct Neighbour {
        char name[KERNEL_NAME_MAX];
        int fd; /* its stat */
        dev_t dev;
        Activity activity;
        Sibling *sibling; /* its hydrator's publication, or NULL */
        SiblingView view; /* what it said at the last sample (valid: fresh) */
        bool fresh;
        uint64_t looked_usec; /* when its publication was last looked for */
        uint64_t saves;       /* its save count at the sample before */
        unsigned new_saves;   /* saves it began since then (one under way counts) */
        bool found;           /* its sibling was found (or came back) at this sample */
        uint64_t found_usec;  /* when it was */
} Neighbour;

struct Neighbours {
        char *block_dir;
        char self[KERNEL_NAME_MAX];
        char family[DISK_FAMILY_MAX];
        int runtime_fd;
        Neighbour items[NEIGHBOURS_MAX];
        unsigned n;
        uint64_t scanned_usec;
};

static bool known(const Neighbours *n, const char *name) {
        for (unsigned i = 0; i < n->n; i++)
                if (streq_ptr(n->items[i].name, name))
                        return true;
        return false;
}

static void drop(Neighbours *n, unsigned i) {
        (void)close(n->items[i].fd);
        sibling_free(n->items[i].sibling);
        n->items[i] = n->items[--n->n];
}

/* Opens the publication of @x's hydrator, if there is one to believe; its reads count as ours
 * from the next sample on. */
static void find_sibling(Neighbours *n, Neighbour *x) {
        if (n->runtime_fd < 0)
                return;
        if (x->sibling && !sibling_replaced(x->sibling, n->runtime_fd, x->name))
                return;
        x->sibling = sibling_free(x->sibling);
        if (sibling_open(&x->sibling, n->runtime_fd, x->name, x->dev) < 0)
                x->sibling = NULL;
        x->fresh = false;
}

/* Adds @name if it is of our family, not us, readable, and there is room. */
static void add(Neighbours *n, const char *name, uint64_t now) {
        _cleanup_free_ char *path = NULL, *dev = NULL;
        char family[DISK_FAMILY_MAX];
        Neighbour *x;
        DiskStat st;
        int fd;

        disk_family(name, family, sizeof(family));
        if (!streq_ptr(family, n->family) || streq_ptr(name, n->self) || known(n, name) ||
            n->n == NEIGHBOURS_MAX || strlen(name) >= sizeof(x->name))
                return;
        if (asprintf(&path, "%s/%s/stat", n->block_dir, name) < 0 ||
            asprintf(&dev, "%s/%s/dev", n->block_dir, name) < 0)
                return;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return;
        x = &n->items[n->n];
        *x = (Neighbour){.fd = fd};
        if (disk_stat_read(fd, &st) < 0 || sysfs_read_devnum_at(AT_FDCWD, dev, &x->dev) < 0) {
                (void)close(fd);
                return;
        }
        snprintf(x->name, sizeof(x->name), "%.*s", (int)sizeof(x->name) - 1, name);
        find_sibling(n, x);
        n->n++;
}

static void scan(Neighbours *n, uint64_t now) {
        _cleanup_(closedirp) DIR *d = opendir(n->block_dir);
        struct dirent *de;

        n->scanned_usec = now;
        for (unsigned i = 0; i < n->n; i++)
                find_sibling(n, &n->items[i]);
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.')
                        add(n, de->d_name, now);
}

int neighbours_new(Neighbours **ret, const char *sysfs_root, const char *self, int runtime_fd,
                   uint64_t now_usec) {
        Neighbours *n = calloc(1, sizeof(*n));

        if (!n)
                return -ENOMEM;
        if (asprintf(&n->block_dir, "%s/block", sysfs_root) < 0) {
                free(n);
                return -ENOMEM;
        }
        n->runtime_fd = runtime_fd;
        snprintf(n->self, sizeof(n->self), "%s", self);
        disk_family(self, n->family, sizeof(n->family));
        scan(n, now_usec);
        *ret = n;
        return 0;
}

Neighbours *neighbours_free(Neighbours *n) {
        if (!n)
                return NULL;
        while (n->n > 0)
                drop(n, n->n - 1);
        free(n->block_dir);
        free(n);
        return NULL;
}

void save_allowance(const SaveNews *news, dev_t dev, ActivityAllowance *allowance) {
        bool on = news && news->saves > 0 && news->n == 0;

        for (unsigned i = 0; news && news->saves > 0 && i < news->n; i++)
                on = on || news->disks[i] == dev;
        if (!on)
                return;
        /* The file and a copy in the journal, in whole blocks, and the file system's own. */
        allowance->bytes +=
                news->saves * (2 * DIV_ROUND_UP(news->file_bytes, UINT64_C(4096)) * 4096 +
                               SAVE_ALLOWANCE_FS_BYTES);
        allowance->ops += news->saves * SAVE_ALLOWANCE_OPS;
}

void neighbours_save_allowance(const Neighbours *n, dev_t dev, ActivityAllowance *allowance) {
        for (unsigned i = 0; n && i < n->n; i++) {
                const Neighbour *x = &n->items[i];
                SaveNews news = {.saves = x->fresh ? x->new_saves : 0,
                                 .file_bytes = x->view.save_bytes,
                                 .disks = x->view.state_disks,
                                 .n = x->view.n_state_disks};

                save_allowance(&news, dev, allowance);
        }
}

/* What each sibling says now, and whether it saved since the last sample. */
static void read_siblings(Neighbours *n, uint64_t now) {
        for (unsigned i = 0; i < n->n; i++) {
                Neighbour *x = &n->items[i];
                bool was_fresh = x->fresh;

                x->fresh = x->sibling && sibling_read(x->sibling, now, &x->view);
                x->new_saves = 0;
                if (!x->fresh)
                        continue;
                /* +1 as a save begins, +1 as it ends: those begun since, and one under way. */
                if (was_fresh && x->view.saves >= x->saves)
                        x->new_saves = (unsigned)MIN((x->view.saves - x->saves + 1) / 2, 1000u);
                if (x->view.saves % 2 == 1 && x->new_saves == 0)
                        x->new_saves = 1;
                x->found = !was_fresh; /* its count starts here (neighbours_sample()) */
                x->saves = x->view.saves;
        }
}

/* @x's counters, and what its sibling says of the same moment: if the sibling published while
 * they were read, they may be of before or after, so they are read again (a few times). */
static int read_disk(Neighbour *x, DiskStat *st) {
        for (unsigned i = 0;; i++) {
                int r = disk_stat_read(x->fd, st);

                if (r < 0 || !x->fresh || i == 3 || !sibling_read_reads(x->sibling, &x->view))
                        return r;
        }
}

void neighbours_sample(Neighbours *n, uint64_t now_usec, const SaveNews *own,
                       NeighbourFigures *ret) {
        double busiest = 0;

        *ret = (NeighbourFigures){0};
        read_siblings(n, now_usec);
        for (unsigned i = 0; i < n->n;) {
                Neighbour *x = &n->items[i];
                ActivityAllowance allowance = {0};
                ActivityFigures f;
                ActivityOurs ours;
                DiskStat st;
                double cost;

                if (read_disk(x, &st) < 0) { /* detached: its sysfs node is gone */
                        drop(n, i);
                        continue;
                }
                /* Reads on a disk nobody publishes: a sibling that started after the last
                 * scan, maybe. Look now (once a second), before the reads count as a workload. */
                if (!x->fresh && st.read_sectors > x->activity.last.read_sectors &&
                    (x->looked_usec == 0 || now_usec - x->looked_usec >= USEC_PER_SEC)) {
                        x->looked_usec = now_usec;
                        find_sibling(n, x);
                        x->found = x->fresh =
                                x->sibling && sibling_read(x->sibling, now_usec, &x->view);
                }
                ours = x->fresh ? x->view.reads : (ActivityOurs){0};
                /* A sibling found now: what its disk did since the last sample was its own. */
                if (x->found) {
                        activity_rebase(&x->activity, &st, ours.bytes);
                        x->found_usec = now_usec;
                }
                x->found = false;
                save_allowance(own, x->dev, &allowance);
                neighbours_save_allowance(n, x->dev, &allowance);
                /* What the sibling read since the last sample (nothing, for one found now). */
                if (x->fresh && x->activity.primed && ours.bytes > x->activity.last_ours)
                        ret->sibling_bytes += (double)(ours.bytes - x->activity.last_ours);
                activity_sample(&x->activity, &st, &ours, &allowance, now_usec, &f);
                /* A sibling still mapping: its disk's reads are the mapping's (siblings.h), now
                 * and in the window judged once it is done; writes are someone's. */
                if (x->fresh && x->view.mapping) {
                        activity_forget_reads(&x->activity);
                        f.reads = 0;
                }
                /* What a request waits there: on a sibling's disk its reads are in it. */
                if (!x->fresh) {
                        if (MAX(f.waited_usec, f.latency_usec) >
                            MAX(ret->waited_usec, ret->latency_usec))
                                snprintf(ret->waiting, sizeof(ret->waiting), "%s", x->name);
                        ret->waited_usec = MAX(ret->waited_usec, f.waited_usec);
                        ret->latency_usec = MAX(ret->latency_usec, f.latency_usec);
                        ret->stall |= f.stall;
                }
                cost = activity_cost(&f);
                if (x->fresh && now_usec - x->found_usec < NEIGHBOURS_SIBLING_START_USEC)
                        cost = 0;
                ret->siblings += f.ours;
                ret->readers += x->fresh && f.ours >= NEIGHBOURS_READING;
                ret->queued += x->fresh && f.ours >= NEIGHBOURS_READING && x->view.queueing;
                ret->cost += cost;
                if (cost > busiest) {
                        busiest = cost;
                        snprintf(ret->busiest, sizeof(ret->busiest), "%s", x->name);
                }
                i++;
        }
        if (now_usec - n->scanned_usec >= NEIGHBOURS_RESCAN_USEC)
                scan(n, now_usec);
}

unsigned neighbours_count(const Neighbours *n) {
        return n ? n->n : 0;
}

unsigned neighbours_siblings(const Neighbours *n) {
        unsigned k = 0;

        for (unsigned i = 0; n && i < n->n; i++)
                k += n->items[i].fresh;
        return k;
}

unsigned neighbours_live_siblings(const Neighbours *n, uint64_t now_usec) {
        unsigned k = 0;

        for (unsigned i = 0; n && i < n->n; i++) {
                SiblingView v = {0};

                k += n->items[i].sibling && sibling_read(n->items[i].sibling, now_usec, &v);
        }
        return k;
}
