/* SPDX-License-Identifier: MIT */
/*
 * HotPaths=: walks the named files and directories, asks the file system where each regular
 * file's blocks are (FIEMAP), and turns that into byte ranges of the disk being hydrated. Reads
 * no file data and writes nothing; what cannot be mapped is skipped with a warning. This file
 * takes the entries and says what came of each; hotpaths-walk.c walks below them, in threads,
 * and hotpaths-extents.c asks the kernel.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc-util.h"
#include "hotpaths-internal.h"
#include "log.h"
#include "util.h"

/* The entry named by HotPaths= itself, when it is not a file or directory. */
static void warn_top(Top *top, const struct stat *st) {
        top->warned = true;
        if (!st)
                log_warning("HotPaths=: %s is a symbolic link to nothing, skipping it",
                            SHOWN(top->path));
        else
                log_warning("HotPaths=: %s is %s, not a file or directory, skipping it",
                            SHOWN(top->path), file_type_name(st->st_mode));
}

/* Its first job: itself, a file to map or a directory to list (its symbolic link followed). */
static int start_top(Walk *w, Top *top) {
        struct stat st;

        if (stat(top->path, &st) < 0) {
                if (errno == ENOENT || errno == ELOOP) { /* lstat() found it: a dangling link */
                        warn_top(top, NULL);
                        return 0;
                }
                top->warned = true;
                log_warning_errno(-errno, "HotPaths=: cannot read %s (%m), skipping",
                                  SHOWN(top->path));
                return 0;
        }
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
                warn_top(top, &st);
                return 0;
        }
        top->dev = st.st_dev;
        top->is_dir = S_ISDIR(st.st_mode);
        top->files = !top->is_dir;
        return hotpaths_walk_add_top(w, top);
}

/* What is said of an entry once all is walked: files elsewhere, or nothing to read. */
static void conclude(const Walk *w, const Top *top) {
        if (top->elsewhere && !top->is_dir)
                log_warning("HotPaths=: %s is not on the device being hydrated, skipping it",
                            SHOWN(top->path));
        else if (top->elsewhere)
                log_warning("HotPaths=: %s has files that are not on the device being hydrated, "
                            "skipping those",
                            SHOWN(top->path));
        if (top->warned || top->elsewhere || top->bytes > 0 || w->full)
                return;
        /* An entry that adds nothing to read must say so: HotPaths=/dev is a mistake, not a
         * no-op. */
        if (top->is_dir && top->files == 0)
                log_warning("HotPaths=: %s contains no regular files, nothing to read there",
                            SHOWN(top->path));
        else
                log_warning("HotPaths=: %s has no data on the disk, nothing to read there",
                            SHOWN(top->path));
}

/* The entries of @paths that lstat() finds, in *@ret (NULL-terminated by @ret_n). */
static int collect_tops(const char *paths, Top **ret, size_t *ret_n) {
        Top *tops = NULL;
        size_t n = 0, allocated = 0;

        for (const char *p = paths + strspn(paths, " \t"); *p; p += strspn(p, " \t")) {
                size_t len = strcspn(p, " \t");
                _cleanup_free_ char *path = strndup(p, len);
                struct stat st;

                p += len;
                if (!path)
                        goto oom;
                if (lstat(path, &st) < 0) {
                        log_warning_errno(-errno, "HotPaths=: cannot reach %s (%m), skipping",
                                          SHOWN(path));
                        continue;
                }
                if (ARRAY_GROW(tops, allocated, n + 1) < 0)
                        goto oom;
                tops[n++] = (Top){.path = TAKE_PTR(path)};
        }
        *ret = tops;
        *ret_n = n;
        return 0;
oom:
        for (size_t i = 0; i < n; i++)
                free(tops[i].path);
        free(tops);
        return -ENOMEM;
}

int hotpaths_resolve(const char *paths, dev_t disk, const char *sysfs_root, ByteRange **ret,
                     size_t *ret_n) {
        Walk w = {.lock = PTHREAD_MUTEX_INITIALIZER,
                  .changed = PTHREAD_COND_INITIALIZER,
                  .disk = disk,
                  .sysfs_root = sysfs_root};
        Top *tops = NULL;
        size_t n_tops = 0;
        int r;

        r = collect_tops(paths, &tops, &n_tops);
        for (size_t i = 0; r >= 0 && i < n_tops; i++)
                r = start_top(&w, &tops[i]);
        if (r >= 0)
                hotpaths_walk_run(&w);
        r = r < 0 ? r : w.error;
        hotpaths_walk_done(&w);
        for (size_t i = 0; i < n_tops; i++) {
                if (r >= 0)
                        conclude(&w, &tops[i]);
                free(tops[i].seen.v);
                free(tops[i].path);
        }
        free(tops);
        pthread_cond_destroy(&w.changed);
        pthread_mutex_destroy(&w.lock);
        if (r < 0) {
                free(w.ranges);
                return r;
        }
        *ret = w.ranges;
        *ret_n = w.n;
        return 0;
}
