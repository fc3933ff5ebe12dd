/* SPDX-License-Identifier: MIT */
/*
 * sysfs attributes (sysfs.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fileio.h"
#include "parse.h"
#include "sysfs.h"
#include "util.h"

const char *sysfs_root(void) {
        return getenv("EBS_HYDRATE_SYSFS_ROOT") ?: "/sys";
}

int sysfs_read_attr_at(int dir_fd, const char *path, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r;

        r = read_full_file_at(dir_fd, path, SYSFS_ATTR_MAX, &buf, &n);
        if (r < 0)
                return r;
        if (memchr(buf, '\0', n))
                return -EBADMSG;
        while (n > 0 && buf[n - 1] == '\n')
                n--;
        buf[n] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

int sysfs_read_u64_at(int dir_fd, const char *path, uint64_t *ret) {
        _cleanup_free_ char *value = NULL;
        int r;

        r = sysfs_read_attr_at(dir_fd, path, &value);
        if (r < 0)
                return r;
        return parse_unsigned(value, 0, UINT64_MAX, ret) < 0 ? -EBADMSG : 0;
}

int sysfs_read_devnum_at(int dir_fd, const char *path, dev_t *ret) {
        _cleanup_free_ char *value = NULL;
        uint64_t maj, mnr;
        char *colon;
        int r;

        r = sysfs_read_attr_at(dir_fd, path, &value);
        if (r < 0)
                return r;
        colon = strchr(value, ':');
        if (!colon)
                return -EBADMSG;
        *colon = '\0';
        if (parse_unsigned(value, 0, UINT32_MAX, &maj) < 0 ||
            parse_unsigned(colon + 1, 0, UINT32_MAX, &mnr) < 0)
                return -EBADMSG;
        *ret = makedev((unsigned)maj, (unsigned)mnr);
        return 0;
}

int sysfs_disk_seq(const char *kernel_name, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;

        if (!kernel_name[0] || strchr(kernel_name, '/') || kernel_name[0] == '.')
                return -EINVAL;
        if (asprintf(&path, "%s/block/%s/diskseq", sysfs_root(), kernel_name) < 0)
                return -ENOMEM;
        return sysfs_read_u64_at(AT_FDCWD, path, ret);
}

static int disks_under(const char *dir, unsigned depth, int (*add)(const char *, void *),
                       void *userdata) {
        _cleanup_free_ char *path = NULL, *resolved = NULL, *slaves = NULL;
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        struct stat st;
        bool any = false;
        int r;

        if (depth > 8)
                return -ELOOP;
        resolved = realpath(dir, NULL);
        if (!resolved)
                return -errno;
        if (asprintf(&path, "%s/partition", resolved) < 0)
                return -ENOMEM;
        if (stat(path, &st) == 0) {
                *strrchr(resolved, '/') = '\0'; /* the disk holds its partitions */
                return add(strrchr(resolved, '/') + 1, userdata);
        }
        if (asprintf(&slaves, "%s/slaves", resolved) < 0)
                return -ENOMEM;
        d = opendir(slaves);
        while (d && (de = readdir(d))) {
                _cleanup_free_ char *sub = NULL;

                if (de->d_name[0] == '.')
                        continue;
                if (asprintf(&sub, "%s/%s", slaves, de->d_name) < 0)
                        return -ENOMEM;
                r = disks_under(sub, depth + 1, add, userdata);
                if (r < 0)
                        return r;
                any = true;
        }
        return any ? 0 : add(strrchr(resolved, '/') + 1, userdata);
}

int sysfs_disks_under(const char *dir, int (*add)(const char *name, void *userdata),
                      void *userdata) {
        return disks_under(dir, 0, add, userdata);
}

char *sysfs_dev_block(const char *root, dev_t dev, const char *rel) {
        char *path;

        if (asprintf(&path, "%s/dev/block/%u:%u%s%s", root ?: sysfs_root(), major(dev), minor(dev),
                     rel ? "/" : "", strempty(rel)) < 0)
                return NULL;
        return path;
}
