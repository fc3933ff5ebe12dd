/* SPDX-License-Identifier: MIT */
/*
 * The disks that share the instance's cap with ours, and their counters (neighbours.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activity.h"
#include "neighbours.h"
#include "util.h"

typedef struct Neighbour {
        char name[KERNEL_NAME_MAX];
        int fd;
        DiskStat last;
        uint64_t last_usec;
} Neighbour;

struct Neighbours {
        char *block_dir;
        char self[KERNEL_NAME_MAX];
        char family[16];
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
        n->items[i] = n->items[--n->n];
}

/* Adds @name if it is of our family, not us, readable, and there is room. */
static void add(Neighbours *n, const char *name, uint64_t now) {
        char family[16], *path = NULL;
        Neighbour *x;
        int fd;

        disk_family(name, family, sizeof(family));
        if (!streq_ptr(family, n->family) || streq_ptr(name, n->self) || known(n, name) ||
            n->n == NEIGHBOURS_MAX || strlen(name) >= sizeof(x->name))
                return;
        if (asprintf(&path, "%s/%s/stat", n->block_dir, name) < 0)
                return;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        free(path);
        if (fd < 0)
                return;
        x = &n->items[n->n];
        *x = (Neighbour){.fd = fd, .last_usec = now};
        if (disk_stat_read(fd, &x->last) < 0) {
                (void)close(fd);
                return;
        }
        snprintf(x->name, sizeof(x->name), "%.*s", (int)sizeof(x->name) - 1, name);
        n->n++;
}

static void scan(Neighbours *n, uint64_t now) {
        DIR *d = opendir(n->block_dir);
        struct dirent *de;

        n->scanned_usec = now;
        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        add(n, de->d_name, now);
        (void)closedir(d);
}

int neighbours_new(Neighbours **ret, const char *sysfs_root, const char *self, uint64_t now_usec) {
        Neighbours *n = calloc(1, sizeof(*n));

        if (!n)
                return -ENOMEM;
        if (asprintf(&n->block_dir, "%s/block", sysfs_root) < 0) {
                free(n);
                return -ENOMEM;
        }
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

bool neighbours_sample(Neighbours *n, uint64_t now_usec, double *ret_rate, char *ret_name) {
        double busiest = 0;
        bool active = false;

        *ret_rate = 0;
        ret_name[0] = '\0';
        for (unsigned i = 0; i < n->n;) {
                Neighbour *x = &n->items[i];
                DiskStat st;
                double rate;

                if (disk_stat_read(x->fd, &st) < 0) { /* detached: its sysfs node is gone */
                        drop(n, i);
                        continue;
                }
                if (activity_neighbour(&x->last, &st, now_usec - x->last_usec, &rate)) {
                        active = true;
                        *ret_rate += rate;
                        if (rate >= busiest) {
                                busiest = rate;
                                snprintf(ret_name, KERNEL_NAME_MAX, "%s", x->name);
                        }
                }
                x->last = st;
                x->last_usec = now_usec;
                i++;
        }
        if (now_usec - n->scanned_usec >= NEIGHBOURS_RESCAN_USEC)
                scan(n, now_usec);
        return active;
}

unsigned neighbours_count(const Neighbours *n) {
        return n ? n->n : 0;
}
