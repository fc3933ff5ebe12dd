/* SPDX-License-Identifier: MIT */
/*
 * sysfs attributes (sysfs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
