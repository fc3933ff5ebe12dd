/* SPDX-License-Identifier: MIT */
/* ebs-hydratectl metrics: Prometheus text for node_exporter, printed or into --output=FILE. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl-verbs.h"
#include "fileio.h"
#include "log.h"
#include "util.h"
#include "volinfo-format.h"

#define OUTPUT_STALL_USEC (10 * USEC_PER_SEC) /* a FIFO or device that takes nothing longer */

/* May a symbolic link at @path be followed? Only one that nobody but the caller and root could
 * have made or could swap: owned by one of them, in a directory owned by one of them that
 * others may not write to (or whose sticky bit keeps them from replacing it). */
static bool link_trusted(const char *path, const struct stat *link, const char **ret_why) {
        _cleanup_free_ char *copy = strdup(path);
        struct stat dir;

        if (link->st_uid != geteuid() && link->st_uid != 0) {
                *ret_why = "it belongs to another user";
                return false;
        }
        if (!copy || stat(dirname(copy), &dir) < 0) {
                *ret_why = "its directory cannot be looked at";
                return false;
        }
        if ((dir.st_uid != geteuid() && dir.st_uid != 0) ||
            ((dir.st_mode & 0022) && !(dir.st_mode & S_ISVTX))) {
                *ret_why = "others may replace it in its directory";
                return false;
        }
        return true;
}

/*
 * @text into what @path is: a regular file is replaced whole; a character device or a FIFO
 * (/dev/null, /dev/stdout) is written to, never replaced by a file; a symbolic link is followed
 * only if nobody else could have planted it (link_trusted()): to a regular file, that file is
 * replaced and the link stays; anything else is refused, named.
 */
static int write_metrics_to(const char *path, const char *text, size_t size) {
        _cleanup_free_ char *real = NULL;
        _cleanup_close_ int fd = -1;
        const char *why = NULL;
        struct stat st, lst;
        int r;

        if (lstat(path, &lst) < 0) { /* not there yet (or not reachable: the write says why) */
                r = write_file_atomic(path, text, size, 0644);
                return r < 0 ? log_error_errno(r, "Failed to write %s: %m", path) : 0;
        }
        if (S_ISLNK(lst.st_mode)) {
                if (!link_trusted(path, &lst, &why))
                        return log_error_errno(-EPERM,
                                               "Failed to write %s: a symbolic link, not followed "
                                               "(%s); not replacing it with a file either",
                                               path, why);
                if (stat(path, &st) < 0)
                        return log_error_errno(-errno,
                                               "Failed to write %s: a symbolic link to nothing "
                                               "(%m); not replacing the link with a file",
                                               path);
        } else
                st = lst;
        if (S_ISREG(st.st_mode)) {
                if (S_ISLNK(lst.st_mode)) {
                        real = realpath(path, NULL); /* the file the link names is replaced */
                        if (!real)
                                return log_error_errno(-errno, "Failed to write %s: %m", path);
                }
                r = write_file_atomic(real ?: path, text, size, 0644);
                return r < 0 ? log_error_errno(r, "Failed to write %s: %m", path) : 0;
        }
        if (S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
                return log_error_errno(-EINVAL,
                                       "Failed to write %s: a %s, not a file: not writing metrics "
                                       "over it",
                                       path, S_ISBLK(st.st_mode) ? "block device" : "socket");
        if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) { /* a directory: the rename says so */
                r = write_file_atomic(path, text, size, 0644);
                return r < 0 ? log_error_errno(r, "Failed to write %s: %m", path) : 0;
        }
        /* O_NONBLOCK: a FIFO nobody reads fails (ENXIO) instead of waiting for ever. Followed
         * only if it was a trusted link above; then what is open must be what was judged. */
        fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC |
                                (S_ISLNK(lst.st_mode) ? 0 : O_NOFOLLOW));
        if (fd < 0 && errno == ENXIO && S_ISFIFO(st.st_mode))
                return log_error_errno(-ENXIO, "Failed to write %s: a FIFO nobody reads", path);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to write %s: %m", path);
        if (fstat(fd, &lst) < 0)
                return log_error_errno(-errno, "Failed to write %s: %m", path);
        if (lst.st_dev != st.st_dev || lst.st_ino != st.st_ino)
                return log_error_errno(-ESTALE, "Failed to write %s: it changed while opened",
                                       path);
        r = write_full_fd_stall(fd, text, size, OUTPUT_STALL_USEC);
        if (r == -ETIMEDOUT)
                return log_error_errno(
                        r, "Failed to write %s: its reader took nothing for %" PRIu64 " s", path,
                        OUTPUT_STALL_USEC / USEC_PER_SEC);
        if (r < 0)
                return log_error_errno(r, "Failed to write %s: %m", path);
        return 0;
}

/* The metrics into @path, replaced whole: node_exporter's textfile collector may read it at any
 * moment, and must never see half of it. */
static int write_metrics_file(const VolumeList *l, const char *path) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        int r;

        if (!f)
                return log_error_errno(-ENOMEM, "Out of memory");
        r = volume_list_print_metrics(f, l);
        if (fclose(f) != 0 || r < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        return write_metrics_to(path, text, size);
}

int verb_metrics(const CtlArgs *a, char **args) {
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        int r;

        r = ctl_collect_volumes(a, &l);
        if (r < 0)
                return r;
        if (a->output)
                return write_metrics_file(l, a->output);
        (void)volume_list_print_metrics(stdout, l); /* write errors: see ctl_flush_stdout() */
        return ctl_flush_stdout();
}
