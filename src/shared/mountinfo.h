/* SPDX-License-Identifier: MIT */
/*
 * The mount table, read one way everywhere: /proc/self/mountinfo, line by line, each line's
 * fields split and the paths' octal escapes undone (proc(5): a space is written \040).
 */
#pragma once

#include <sys/types.h>

typedef struct MountEntry {
        dev_t dev;                 /* MAJ:MIN: the file system's device (anonymous for some) */
        const char *mount_point;   /* unescaped */
        const char *fstype;        /* "ext4", "overlay" */
        const char *source;        /* unescaped: "/dev/nvme1n1", "overlay", "none" */
        const char *super_options; /* as the table writes them: still escaped */
} MountEntry;

/* Called for every mount, in the table's order (a later mount on one point hides an earlier
 * one); a nonzero return stops the walk and is returned. The strings live until it returns. */
typedef int (*mountinfo_cb_t)(const MountEntry *m, void *userdata);

/* mountinfo_foreach() - @cb for every line of /proc/self/mountinfo; lines that do not parse are
 * skipped. 0 at the end, @cb's nonzero return, -ENOMEM, or -errno if the table cannot be read. */
int mountinfo_foreach(mountinfo_cb_t cb, void *userdata);

/* mountinfo_unescape() - undoes the table's octal escapes (\ooo) in @s, in place. */
void mountinfo_unescape(char *s);
