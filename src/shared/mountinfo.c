/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "mountinfo.h"
#include "util.h"

void mountinfo_unescape(char *s) {
        char *w = s;

        for (char *r = s; *r; w++)
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
                        r += 4;
                } else
                        *w = *r++;
        *w = '\0';
}

/* One line: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER-OPTIONS
 * (the optional fields end at " - ", which no escaped field holds). 1 if @cb is to be called,
 * 0 to skip the line, -ENOMEM. */
static int parse_line(const char *line, MountEntry *m, char **mnt, char **fstype, char **source,
                      char **options) {
        const char *sep = strstr(line, " - ");
        unsigned maj, min;
        int n = 0;

        if (!sep || sscanf(line, "%*u %*u %u:%u %*s %ms", &maj, &min, mnt) != 3)
                return 0;
        if (sscanf(sep, " - %ms %ms %n", fstype, source, &n) != 2)
                return 0;
        *options = strndup(sep + n, strcspn(sep + n, "\n"));
        if (!*options)
                return -ENOMEM;
        mountinfo_unescape(*mnt);
        mountinfo_unescape(*source);
        *m = (MountEntry){.dev = makedev(maj, min),
                          .mount_point = *mnt,
                          .fstype = *fstype,
                          .source = *source,
                          .super_options = *options};
        return 1;
}

int mountinfo_foreach(mountinfo_cb_t cb, void *userdata) {
        _cleanup_(fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_free_ char *line = NULL;
        size_t size = 0;

        if (!f)
                return -errno;
        while (getline(&line, &size, f) > 0) {
                char *mnt = NULL, *fstype = NULL, *source = NULL, *options = NULL;
                MountEntry m;
                int r = parse_line(line, &m, &mnt, &fstype, &source, &options);

                if (r > 0)
                        r = cb(&m, userdata);
                free(mnt);
                free(fstype);
                free(source);
                free(options);
                if (r != 0)
                        return r;
        }
        return ferror(f) ? -EIO : 0;
}
