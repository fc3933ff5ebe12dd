/* SPDX-License-Identifier: MIT */
/*
 * Which whole disks hold a target (disks.h): by sysfs for kernel names and device numbers, by
 * the mount table for file systems whose files have an anonymous st_dev. Quiet: each failure is
 * told to the caller, who phrases it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc-util.h"
#include "disks.h"
#include "mountinfo.h"
#include "sysfs.h"
#include "util.h"

void disk_set_done(DiskSet *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->names[i]);
        free(s->names);
        *s = (DiskSet){};
}

static int disk_set_add(DiskSet *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->names[i], name) == 0)
                        return 0;
        if (ARRAY_GROW(s->names, s->allocated, s->n + 1) < 0)
                return -ENOMEM;
        s->names[s->n] = strdup(name);
        if (!s->names[s->n])
                return -ENOMEM;
        s->n++;
        return 0;
}

static int disk_set_add_cb(const char *name, void *userdata) {
        return disk_set_add(userdata, name);
}

/* One lookup: where the disks go, and who is told of failures. */
typedef struct Lookup {
        DiskSet *set;
        disks_explain_t explain;
        void *userdata;
} Lookup;

/* Tells the caller of @e, and returns its error. */
static int explain(const Lookup *l, DisksError e) {
        if (l->explain)
                l->explain(&e, l->userdata);
        return e.error;
}

static int no_memory(const Lookup *l) {
        return explain(l, (DisksError){.failure = DISKS_NO_MEMORY, .error = -ENOMEM});
}

/* The disks under the block device whose sysfs directory is @dir (sysfs_disks_under()). */
static int add_disks_of(const Lookup *l, const char *dir) {
        return sysfs_disks_under(dir, disk_set_add_cb, l->set);
}

/* Does the mount point @mnt hold @path (both absolute, without "..")? */
static size_t mount_holds(const char *mnt, const char *path) {
        size_t n = strlen(mnt);

        if (strcmp(mnt, "/") == 0)
                return 1;
        return strncmp(path, mnt, n) == 0 && (path[n] == '/' || path[n] == '\0') ? n : 0;
}

/* The innermost mount that holds a path, as /proc/self/mountinfo says. */
typedef struct MountInfo {
        char *fstype;
        char *source;  /* unescaped */
        char *options; /* the super block's, unescaped only per option */
} MountInfo;

static void mount_info_done(MountInfo *m) {
        free(m->fstype);
        free(m->source);
        free(m->options);
        *m = (MountInfo){};
}

typedef struct MountSearch {
        const char *path; /* real */
        size_t best_len;
        MountInfo *ret;
} MountSearch;

static int mount_of_cb(const MountEntry *m, void *userdata) {
        MountSearch *q = userdata;
        size_t n = mount_holds(m->mount_point, q->path);

        if (n == 0 || n < q->best_len) /* the later of two mounts on one point wins */
                return 0;
        q->best_len = n;
        mount_info_done(q->ret);
        q->ret->fstype = strdup(m->fstype);
        q->ret->source = strdup(m->source);
        q->ret->options = strdup(m->super_options);
        return q->ret->fstype && q->ret->source && q->ret->options ? 0 : -ENOMEM;
}

/*
 * The innermost mount that holds @path, by the mount table: for file systems whose files have
 * an anonymous st_dev (btrfs gives each subvolume one, overlayfs its own). 0, or -errno.
 */
static int mount_of(const char *path, MountInfo *ret) {
        _cleanup_free_ char *real = realpath(path, NULL);
        MountSearch q = {.ret = ret};
        int r;

        *ret = (MountInfo){};
        if (!real)
                return -errno;
        q.path = real;
        r = mountinfo_foreach(mount_of_cb, &q);
        if (r < 0 || q.best_len == 0) {
                mount_info_done(ret);
                return r < 0 ? r : -ENODEV;
        }
        return 0;
}

static int add_path(const Lookup *l, const char *path, unsigned depth);

/* One layer's path from the mount table's text of it, in place: octal escapes undone, and
 * "\:" (how overlayfs writes a ':' in a lower layer's name) made ':'. */
static void layer_unescape(char *s) {
        char *w = s;

        mountinfo_unescape(s);
        for (char *r = s; *r; r++)
                *w++ = r[0] == '\\' && r[1] == ':' ? *++r : *r;
        *w = '\0';
}

static int add_layer(const Lookup *l, const char *path, char *layer, unsigned depth, unsigned *n) {
        int r;

        layer_unescape(layer);
        if (!layer[0])
                return 0;
        r = add_path(l, layer, depth + 1);
        if (r < 0)
                return explain(l, (DisksError){.failure = DISKS_OVERLAY_LAYER,
                                               .error = r,
                                               .path = path,
                                               .layer = layer});
        (*n)++;
        return 0;
}

/*
 * The layers of an overlay mount, each as a path whose disks are added: upperdir=, lowerdir+=
 * and datadir+= name one each; lowerdir= several, split at ':' as the mount table writes it
 * (still escaped: a ':' in a name is "\134:" from older kernels, "\072" from newer ones, never
 * a bare ':'). @options is the super block's options, cut up in place.
 */
static int add_overlay_layers(const Lookup *l, const char *path, char *options, unsigned depth) {
        static const char *const keys[] = {"upperdir=", "lowerdir=", "lowerdir+=", "datadir+="};
        char *save = NULL;
        unsigned n = 0;
        int r;

        for (char *opt = strtok_r(options, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
                char *v = NULL;
                size_t key = 0;

                for (size_t i = 0; i < ELEMENTSOF(keys) && !v; i++)
                        if (strncmp(opt, keys[i], strlen(keys[i])) == 0) {
                                v = opt + strlen(keys[i]);
                                key = i;
                        }
                if (!v)
                        continue;
                if (key != 1) {
                        r = add_layer(l, path, v, depth, &n);
                        if (r < 0)
                                return r;
                        continue;
                }
                for (char *layer = v, *c = v;; c++) {
                        bool named = *c == ':' && c - layer >= 4 && strncmp(c - 4, "\\134", 4) == 0;

                        if (*c != '\0' && (*c != ':' || named))
                                continue;
                        bool last = *c == '\0';

                        *c = '\0';
                        r = add_layer(l, path, layer, depth, &n);
                        if (r < 0)
                                return r;
                        if (last)
                                break;
                        layer = c + 1;
                }
        }
        if (n == 0)
                return explain(l, (DisksError){.failure = DISKS_OVERLAY_UNNAMED,
                                               .error = -ENODEV,
                                               .path = path});
        return 0;
}

/* The disks that hold @path (a block device, or a file): the device's, the disk of the file
 * system's st_dev, or by the mount table the block device it was mounted from, or an overlay's
 * layers'. 0, or -errno (told). */
static int add_path(const Lookup *l, const char *path, unsigned depth) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_(mount_info_done) MountInfo m = {};
        struct stat st;
        dev_t devnum;
        int r;

        if (stat(path, &st) < 0)
                return explain(l,
                               (DisksError){.failure = DISKS_STAT, .error = -errno, .path = path});
        devnum = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
        dir = sysfs_dev_block(NULL, devnum, NULL);
        if (!dir)
                return no_memory(l);
        r = add_disks_of(l, dir);
        if (r == -ENOENT && !S_ISBLK(st.st_mode) && mount_of(path, &m) >= 0) {
                struct stat src;

                if (m.source[0] == '/' && stat(m.source, &src) >= 0 && S_ISBLK(src.st_mode)) {
                        free(dir);
                        dir = sysfs_dev_block(NULL, src.st_rdev, NULL);
                        r = dir ? add_disks_of(l, dir) : -ENOMEM;
                } else if (strcmp(m.fstype, "overlay") == 0) {
                        return depth < 4 ? add_overlay_layers(l, path, m.options, depth)
                                         : explain(l, (DisksError){.failure = DISKS_OVERLAY_DEEP,
                                                                   .error = -ELOOP,
                                                                   .path = path});
                }
        }
        if (r == -ENOMEM)
                return no_memory(l);
        if (r < 0)
                return explain(l, (DisksError){.failure = DISKS_NOT_BLOCK,
                                               .error = -ENODEV,
                                               .path = path,
                                               .dev = devnum});
        return 0;
}

/* A kernel name (a disk, a partition, a device-mapper device): its disks. 1 if sysfs knows no
 * block device by that name. */
static int add_kernel_name(const Lookup *l, const char *name) {
        _cleanup_free_ char *dir = NULL;
        int r;

        if (asprintf(&dir, "%s/class/block/%s", sysfs_root(), name) < 0)
                return no_memory(l);
        r = name[0] != '.' ? add_disks_of(l, dir) : -ENOENT;
        if (r == -ENOMEM)
                return no_memory(l);
        return r < 0 ? 1 : 0;
}

int disks_of_target(const char *target, DiskSet *s, disks_explain_t explain_cb, void *userdata) {
        const Lookup l = {.set = s, .explain = explain_cb, .userdata = userdata};
        struct stat st;

        if (!strchr(target, '/'))
                return add_kernel_name(&l, target);
        if (stat(target, &st) < 0 && errno == ENOENT && strncmp(target, "/dev/", 5) == 0 &&
            !strchr(target + 5, '/'))
                return 1; /* /dev/sdf: a mapping name without its link */
        return add_path(&l, target, 0);
}
