/* SPDX-License-Identifier: MIT */
/*
 * Other processes, by PID (process-util.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fileio.h"
#include "process-util.h"
#include "util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif

/* @pid's state letter (field 3) and start time (field 22) from /proc. */
static int process_stat(pid_t pid, char *ret_state, uint64_t *ret_start) {
        _cleanup_free_ char *text = NULL;
        char path[PROC_PID_PATH_MAX];
        const char *p;
        size_t size;
        int r;

        if (pid < 0)
                return -EINVAL;
        if (pid == 0)
                snprintf(path, sizeof(path), "/proc/self/stat");
        else
                snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
        r = read_full_file_at(AT_FDCWD, path, 4096, &text, &size);
        if (r < 0)
                return r == -ENOENT || r == -ESRCH ? -ENOENT : r;
        /* "PID (COMM) STATE ...": COMM may hold anything, ") " too; the last ')' ends it. Then
         * field 3 (the state) onwards: the start time is field 22, the 20th after COMM. */
        p = memrchr(text, ')', size);
        if (!p)
                return -EBADMSG;
        p++;
        for (unsigned field = 3; field <= 22; field++) {
                while (*p == ' ')
                        p++;
                if (*p == '\0')
                        return -EBADMSG;
                if (field == 3)
                        *ret_state = *p;
                if (field == 22)
                        return sscanf(p, "%" SCNu64, ret_start) == 1 ? 0 : -EBADMSG;
                p += strcspn(p, " ");
        }
        return -EBADMSG;
}

int process_start_time(pid_t pid, uint64_t *ret) {
        char state;

        return process_stat(pid, &state, ret);
}

bool process_gone(pid_t pid, uint64_t start_time) {
        uint64_t now;
        char state;

        if (pid <= 0)
                return false;
        if (kill(pid, 0) < 0 && errno == ESRCH)
                return true;
        if (process_stat(pid, &state, &now) < 0) /* hidden by /proc: there, as kill() says */
                return false;
        /* a zombie has ended (its parent has not reaped it yet); another start, another one */
        return state == 'Z' || state == 'X' || (start_time != 0 && now != start_time);
}

int process_pidfd(pid_t pid) {
        long fd = syscall(SYS_pidfd_open, pid, 0);

        if (fd < 0)
                return -errno;
        /* pidfds are close-on-exec from the start */
        return (int)fd;
}
