/* SPDX-License-Identifier: MIT */
/*
 * hydrate.conf and its drop-ins, loaded the way systemd loads .network files: every file is read,
 * then parsed and validated in full (config-parse.c), then applied only if its [Match] section
 * matches the device. Here: the search path, reading files safely, masking and hiding, the order.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "config-internal.h"
#include "alloc-util.h"
#include "config.h"
#include "fileio.h"
#include "parse.h"
#include "util.h"

#define CONFIG_FILE_SIZE_MAX ((size_t)1 << 20) /* files of this size or more are refused */

typedef struct DropIn {
        char *name;
        char *path;
        size_t priority; /* index in the search path: higher wins */
} DropIn;

typedef struct DropInList {
        DropIn *items;
        size_t n;
        size_t allocated;
} DropInList;

static char *path_join(const char *dir, const char *name) {
        char *r;

        return asprintf(&r, "%s/%s", dir, name) < 0 ? NULL : r;
}

/* Stores "PATH: cannot read: <reason>" in *ret_error; "%m" in @format is @error. Returns @error. */
static int fail_read(char **ret_error, int error, const char *path, const char *format, ...)
        _printf_(4, 5);
static int fail_read(char **ret_error, int error, const char *path, const char *format, ...) {
        _cleanup_free_ char *name = NULL, *why = NULL;
        va_list ap;
        int r;

        if (!ret_error)
                return error;
        errno = -error;
        va_start(ap, format);
        r = vasprintf(&why, format, ap);
        va_end(ap);
        if (r < 0)
                why = NULL;
        name = escape_path(path);
        if (r < 0 || !name || asprintf(ret_error, "%s: cannot read: %s", name, why) < 0)
                *ret_error = NULL;
        return error;
}

/*
 * After a lookup of @path failed with ENOENT: 0 if nothing is there, or -ENOLINK (with
 * *ret_error set) if @path is a symbolic link to something that does not exist. A dangling link
 * is a mistake, not an absent file: it must not silently hide or replace another file.
 */
static int check_dangling(const char *path, char **ret_error) {
        _cleanup_free_ char *target = NULL;
        char buf[PATH_MAX];
        ssize_t n;

        n = readlink(path, buf, sizeof(buf) - 1);
        if (n < 0)
                return 0; /* nothing there (or gone since, or replaced by a file: also fine) */
        buf[n] = '\0';
        target = escape_path(buf);
        if (!target)
                return -ENOMEM;
        return fail_read(ret_error, -ENOLINK, path, "symbolic link to '%s', which does not exist",
                         target);
}

/* /dev/null, or a symbolic link to it: a file that is masked, as systemd has it. */
static bool is_dev_null(const struct stat *st) {
        return S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3);
}

/* Refuses anything but a regular file (or /dev/null): a FIFO would block, a device is no file. */
static int check_regular(const struct stat *st, const char *path, char **ret_error) {
        if (S_ISREG(st->st_mode) || is_dev_null(st))
                return 0;
        return fail_read(ret_error, S_ISDIR(st->st_mode) ? -EISDIR : -EBADFD, path,
                         "not a regular file but %s", file_type_name(st->st_mode));
}

/*
 * Reads the configuration file @path whole, NUL-terminated; /dev/null, or a symbolic link to it,
 * reads as empty. Only a regular file is ever opened, and without blocking: a FIFO is refused,
 * not waited on. Returns 1, 0 if @path does not exist, or a negative errno with *ret_error set.
 */
static int read_config_file(const char *path, char **ret, size_t *ret_size, char **ret_error) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (stat(path, &st) < 0)
                return errno == ENOENT ? check_dangling(path, ret_error)
                                       : fail_read(ret_error, -errno, path, "%m");
        r = check_regular(&st, path, ret_error);
        if (r < 0)
                return r;
        if (is_dev_null(&st)) {
                *ret = NULL;
                *ret_size = 0;
                return 1;
        }
        /* O_NONBLOCK: if a FIFO has taken the file's place since stat(), fstat() says so. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return fail_read(ret_error, -errno, path, "%m");
        if (fstat(fd, &st) < 0)
                return fail_read(ret_error, -errno, path, "%m");
        if (!S_ISREG(st.st_mode))
                return fail_read(ret_error, -EBADFD, path, "not a regular file but %s",
                                 file_type_name(st.st_mode));
        r = st.st_size >= (off_t)CONFIG_FILE_SIZE_MAX
                    ? -EFBIG
                    : read_full_fd(fd, CONFIG_FILE_SIZE_MAX - 1, ret, ret_size);
        if (r < 0)
                return fail_read(ret_error, r, path, "%m");
        return 1;
}

/* config_apply_file(), but a missing file is fine: returns 1 if applied or skipped, 0 if
 * missing. */
static int apply_if_exists(const char *path, const MatchTarget *target, HydrateSettings *settings,
                           char **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        int r;

        r = read_config_file(path, &buf, &size, ret_error);
        if (r <= 0)
                return r;
        r = config_parse_buffer(path, buf, size, target, settings, ret_error);
        return r < 0 ? r : 1;
}

/**
 * config_apply_file() - parse one file and, if its [Match] matches, apply it to @settings.
 * @path: the file.
 * @target: what [Match] tests; NULL is a device about which nothing is known.
 * @settings: in: current settings; out: with the file's [Hydrate] applied if it matches.
 * @ret_error: NULL on success; on failure a malloc'ed message (NULL if out of memory).
 *
 * The file is validated in full even when it does not match. @settings is left untouched on
 * failure.
 *
 * Return: 0; -EINVAL for a bad file; -ENOENT if it does not exist; -ENOLINK for a dangling
 * symbolic link; -EISDIR or -EBADFD for something that is not a regular file; another negative
 * errno.
 */
int config_apply_file(const char *path, const MatchTarget *target, HydrateSettings *settings,
                      char **ret_error) {
        int r;

        if (ret_error)
                *ret_error = NULL;
        r = apply_if_exists(path, target, settings, ret_error);
        if (r == 0)
                return fail_read(ret_error, -ENOENT, path, "%m");
        return r < 0 ? r : 0;
}

static int apply_main_file(const char *const *dirs, size_t n_dirs, const MatchTarget *target,
                           HydrateSettings *settings, char **ret_error) {
        for (size_t i = n_dirs; i > 0; i--) {
                _cleanup_free_ char *path = NULL;
                int r;

                path = path_join(dirs[i - 1], CONFIG_FILE_NAME);
                if (!path)
                        return -ENOMEM;
                r = apply_if_exists(path, target, settings, ret_error);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return 0;
}

static void dropin_list_done(DropInList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].path);
        }
        free(l->items);
        *l = (DropInList){};
}

static int dropin_list_add(DropInList *l, const char *dir, const char *name, size_t priority) {
        DropIn *d;

        if (ARRAY_GROW(l->items, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        d = &l->items[l->n];
        *d = (DropIn){.name = strdup(name), .path = path_join(dir, name), .priority = priority};
        if (!d->name || !d->path) {
                free(d->name);
                free(d->path);
                return -ENOMEM;
        }
        l->n++;
        return 0;
}

static int dropin_filter(const struct dirent *de) {
        size_t len = strlen(de->d_name);

        return de->d_name[0] != '.' && len > strlen(".conf") &&
               streq(de->d_name + len - strlen(".conf"), ".conf");
}

/* By name; for the same name, the highest priority first. */
static int dropin_compare(const void *a, const void *b) {
        const DropIn *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        if (c != 0)
                return c;
        return x->priority < y->priority ? 1 : x->priority > y->priority ? -1 : 0;
}

static int collect_dropins_in(const char *dir, size_t priority, DropInList *l, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        struct dirent **entries = NULL;
        int n, r = 0;

        path = path_join(dir, CONFIG_DROPIN_DIR_NAME);
        if (!path)
                return -ENOMEM;
        n = scandir(path, &entries, dropin_filter, NULL);
        if (n < 0)
                return errno == ENOENT ? check_dangling(path, ret_error)
                                       : fail_read(ret_error, -errno, path, "%m");
        for (int i = 0; i < n; i++) {
                if (r >= 0)
                        r = dropin_list_add(l, path, entries[i]->d_name, priority);
                free(entries[i]);
        }
        free(entries);
        return r;
}

static int apply_dropins(const char *const *dirs, size_t n_dirs, const MatchTarget *target,
                         HydrateSettings *settings, char **ret_error) {
        _cleanup_(dropin_list_done) DropInList l = {};
        int r;

        for (size_t i = 0; i < n_dirs; i++) {
                r = collect_dropins_in(dirs[i], i, &l, ret_error);
                if (r < 0)
                        return r;
        }
        if (l.n > 0)
                qsort(l.items, l.n, sizeof(DropIn), dropin_compare);
        for (size_t i = 0; i < l.n; i++) {
                if (i > 0 && streq(l.items[i].name, l.items[i - 1].name))
                        continue; /* hidden by the same name in a higher-priority directory */
                r = apply_if_exists(l.items[i].path, target, settings, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A directory of the search path may be missing, but not be a dangling symbolic link. */
static int check_dirs(const char *const *dirs, size_t n_dirs, char **ret_error) {
        for (size_t i = 0; i < n_dirs; i++) {
                struct stat st;
                int r;

                if (stat(dirs[i], &st) == 0 || errno != ENOENT)
                        continue; /* what is wrong with it is found when it is read */
                r = check_dangling(dirs[i], ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/**
 * config_load() - merge the configuration that applies to @target.
 * @dirs: NULL-terminated search path, lowest priority first; NULL is an empty path.
 * @target: what [Match] tests; NULL is a device about which nothing is known.
 * @settings: in: defaults; out: merged result, left untouched on failure.
 * @ret_error: NULL on success; on failure a malloc'ed message (NULL if out of memory).
 *
 * See config.h for the order in which files apply.
 *
 * Return: 0, -EINVAL for a bad file, or another negative errno (see config_apply_file()).
 */
int config_load(const char *const *dirs, const MatchTarget *target, HydrateSettings *settings,
                char **ret_error) {
        HydrateSettings merged = *settings;
        size_t n_dirs = 0;
        int r;

        if (ret_error)
                *ret_error = NULL;
        while (dirs && dirs[n_dirs])
                n_dirs++;
        r = check_dirs(dirs, n_dirs, ret_error);
        if (r < 0)
                return r;
        r = apply_main_file(dirs, n_dirs, target, &merged, ret_error);
        if (r < 0)
                return r;
        r = apply_dropins(dirs, n_dirs, target, &merged, ret_error);
        if (r < 0)
                return r;
        *settings = merged;
        return 0;
}
