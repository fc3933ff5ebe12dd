/* SPDX-License-Identifier: MIT */
/*
 * HotPaths=: walks the named files and directories, asks the file system where each regular
 * file's blocks are (FIEMAP), and turns that into byte ranges of the disk being hydrated. Reads
 * no file data and writes nothing; what cannot be mapped is skipped with a warning.
 */
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "alloc-util.h"
#include "hotpaths.h"
#include "log.h"
#include "parse.h"
#include "sysfs.h"
#include "util.h"

#define FIEMAP_BATCH 128
/* A path as a warning shows it: file names can hold any byte (parse.h). A log line is no longer. */
#define SHOWN(path) CESCAPE((path), SIZE_MAX, 1024)
#define SKIPPED_EXTENT_FLAGS \
        (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_DATA_INLINE)

typedef struct Collector {
        dev_t disk;
        const char *sysfs_root;
        ByteRange *ranges;
        size_t n, allocated;
        dev_t last_dev; /* the file system device of the last file, and its offset */
        int last_r;
        uint64_t last_offset;
        bool full;
        bool warned; /* about the HotPaths= entry being walked */
} Collector;

static int read_sysfs_u64(const char *sysfs_root, dev_t dev, const char *rel, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/dev/block/%u:%u/%s", sysfs_root, major(dev), minor(dev), rel) < 0)
                return -ENOMEM;
        return sysfs_read_u64_at(AT_FDCWD, path, ret);
}

/* The "MAJ:MIN" in <sysfs>/dev/block/MAJ:MIN/../dev: the disk a partition belongs to. */
static int parent_disk(const char *sysfs_root, dev_t part, dev_t *ret) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/dev/block/%u:%u/../dev", sysfs_root, major(part), minor(part)) < 0)
                return -ENOMEM;
        return sysfs_read_devnum_at(AT_FDCWD, path, ret);
}

int hotpaths_partition_offset(const char *sysfs_root, dev_t part, dev_t disk, uint64_t *ret) {
        uint64_t start;
        dev_t parent = 0;
        int r;

        if (part == disk) {
                *ret = 0;
                return 0;
        }
        r = parent_disk(sysfs_root, part, &parent);
        if (r == -ENOENT)
                return -EXDEV; /* not a block device, or a disk of its own */
        if (r < 0)
                return r;
        if (parent != disk)
                return -EXDEV;
        r = read_sysfs_u64(sysfs_root, part, "start", &start);
        if (r == -ENOENT)
                return -EXDEV; /* the parent is a whole disk only for partitions */
        if (r < 0)
                return r;
        if (start > UINT64_MAX / 512)
                return -EBADMSG;
        *ret = start * 512;
        return 0;
}

static int add_range(ByteRange **ranges, size_t *n, size_t *allocated, uint64_t offset,
                     uint64_t length) {
        if (*n >= HOTPATHS_RANGES_MAX)
                return -E2BIG;
        if (*n > 0 && (*ranges)[*n - 1].offset + (*ranges)[*n - 1].length == offset) {
                (*ranges)[*n - 1].length += length; /* physically contiguous: one range */
                return 0;
        }
        if (ARRAY_GROW(*ranges, *allocated, *n + 1) < 0)
                return -ENOMEM;
        (*ranges)[(*n)++] = (ByteRange){offset, length};
        return 0;
}

int hotpaths_file_extents(int fd, uint64_t offset, ByteRange **ranges, size_t *n,
                          size_t *allocated) {
        _cleanup_free_ struct fiemap *fm = NULL;
        uint64_t start = 0;

        fm = calloc(1, sizeof(*fm) + FIEMAP_BATCH * sizeof(struct fiemap_extent));
        if (!fm)
                return -ENOMEM;
        for (;;) {
                bool last = false;

                *fm = (struct fiemap){.fm_start = start,
                                      .fm_length = FIEMAP_MAX_OFFSET - start,
                                      .fm_extent_count = FIEMAP_BATCH};
                if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
                        return -errno;
                if (fm->fm_mapped_extents == 0)
                        return 0;
                for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
                        const struct fiemap_extent *e = &fm->fm_extents[i];
                        int r;

                        last = last || (e->fe_flags & FIEMAP_EXTENT_LAST);
                        start = e->fe_logical + e->fe_length;
                        if ((e->fe_flags & SKIPPED_EXTENT_FLAGS) || e->fe_length == 0)
                                continue;
                        r = add_range(ranges, n, allocated, offset + e->fe_physical, e->fe_length);
                        if (r < 0)
                                return r;
                }
                if (last || start >= FIEMAP_MAX_OFFSET)
                        return 0;
        }
}

/* Where the file system on @dev starts on the disk; the answer for the last one is kept. */
static int offset_for(Collector *c, dev_t dev, uint64_t *ret) {
        if (c->last_dev != dev || c->last_r == 1) {
                c->last_dev = dev;
                c->last_r = hotpaths_partition_offset(c->sysfs_root, dev, c->disk, &c->last_offset);
        }
        *ret = c->last_offset;
        return c->last_r;
}

static int open_file(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_NOATIME);

        if (fd < 0 && errno == EPERM) /* O_NOATIME: only for the owner or CAP_FOWNER */
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        return fd < 0 ? -errno : fd;
}

/* Maps one regular file. @top: the HotPaths= entry it was found under, for warnings. */
static int map_file(Collector *c, const char *path, const struct stat *st, const char *top) {
        _cleanup_close_ int fd = -1;
        uint64_t offset;
        int r;

        r = offset_for(c, st->st_dev, &offset);
        if (r == -EXDEV)
                return 1; /* said once per entry, by the caller */
        if (r < 0) {
                c->warned = true;
                log_warning_errno(r, "HotPaths=: cannot place %s on the disk (%m), skipping",
                                  SHOWN(path));
                return 0;
        }
        fd = open_file(path);
        if (fd < 0) {
                c->warned = true;
                log_warning_errno(fd, "HotPaths=: cannot open %s (%m), skipping", SHOWN(path));
                return 0;
        }
        r = hotpaths_file_extents(fd, offset, &c->ranges, &c->n, &c->allocated);
        if (r == -ENOMEM)
                return r;
        if (r == -E2BIG) {
                log_warning("HotPaths=: more than %" PRIu64 " extents; the rest of %s and what "
                            "follows it are not hot",
                            HOTPATHS_RANGES_MAX, SHOWN(top));
                c->full = c->warned = true;
                return 0;
        }
        if (r < 0) {
                c->warned = true;
                log_warning_errno(r, "HotPaths=: cannot map the blocks of %s (%m), skipping",
                                  SHOWN(path));
        }
        return 0;
}

/* Whether the ranges grew since there were @n, the last @last_length long: a file adds to the
 * last range when it follows it on the disk. */
static bool ranges_grew(const Collector *c, size_t n, uint64_t last_length) {
        return c->n != n || (n > 0 && c->ranges[n - 1].length != last_length);
}

/* An entry that adds nothing to read must say so: HotPaths=/dev is a mistake, not a no-op. */
static void warn_if_nothing(const Collector *c, const char *top, bool is_dir, size_t files) {
        if (c->warned)
                return;
        if (is_dir && files == 0)
                log_warning("HotPaths=: %s contains no regular files, nothing to read there",
                            SHOWN(top));
        else
                log_warning("HotPaths=: %s has no data on the disk, nothing to read there",
                            SHOWN(top));
}

/* The entry named by HotPaths= itself, when it is not a file or directory. */
static void warn_top(Collector *c, const FTSENT *e) {
        c->warned = true;
        if (e->fts_info == FTS_SLNONE)
                log_warning("HotPaths=: %s is a symbolic link to nothing, skipping it",
                            SHOWN(e->fts_path));
        else
                log_warning("HotPaths=: %s is %s, not a file or directory, skipping it",
                            SHOWN(e->fts_path), file_type_name(e->fts_statp->st_mode));
}

static int walk(Collector *c, const char *top) {
        char *argv[] = {(char *)top, NULL};
        bool elsewhere = false, single = false, is_dir = false;
        size_t n = c->n, files = 0;
        uint64_t last_length = n > 0 ? c->ranges[n - 1].length : 0;
        FTS *fts;
        FTSENT *e;
        int r = 0;

        fts = fts_open(argv, FTS_PHYSICAL | FTS_COMFOLLOW | FTS_XDEV | FTS_NOCHDIR, NULL);
        if (!fts)
                return errno == ENOMEM ? -ENOMEM : 0;
        c->warned = false;
        while (r >= 0 && !c->full && (e = fts_read(fts))) {
                if (e->fts_info == FTS_NS || e->fts_info == FTS_DNR || e->fts_info == FTS_ERR) {
                        c->warned = true;
                        log_warning_errno(-e->fts_errno, "HotPaths=: cannot read %s (%m), skipping",
                                          SHOWN(e->fts_path));
                } else if (e->fts_level == 0 &&
                           (e->fts_info == FTS_SLNONE || e->fts_info == FTS_DEFAULT)) {
                        warn_top(c, e);
                } else if (e->fts_level == 0 && e->fts_info == FTS_D) {
                        is_dir = true;
                } else if (e->fts_info == FTS_F && S_ISREG(e->fts_statp->st_mode)) {
                        files++;
                        r = map_file(c, e->fts_path, e->fts_statp, top);
                        if (r == 1) {
                                elsewhere = true;
                                single = e->fts_level == 0;
                                if (single)
                                        break;
                                r = 0;
                        }
                }
        }
        (void)fts_close(fts);
        if (elsewhere && single)
                log_warning("HotPaths=: %s is not on the device being hydrated, skipping it",
                            SHOWN(top));
        else if (elsewhere)
                log_warning("HotPaths=: %s has files that are not on the device being hydrated, "
                            "skipping those",
                            SHOWN(top));
        c->warned = c->warned || elsewhere;
        if (r >= 0 && !ranges_grew(c, n, last_length))
                warn_if_nothing(c, top, is_dir, files);
        return r < 0 ? r : 0;
}

int hotpaths_resolve(const char *paths, dev_t disk, const char *sysfs_root, ByteRange **ret,
                     size_t *ret_n) {
        Collector c = {.disk = disk, .sysfs_root = sysfs_root, .last_r = 1};
        int r = 0;

        for (const char *w = paths + strspn(paths, " \t"); *w && r >= 0; w += strspn(w, " \t")) {
                size_t len = strcspn(w, " \t");
                _cleanup_free_ char *path = strndup(w, len);
                struct stat st;

                w += len;
                if (!path) {
                        r = -ENOMEM;
                        break;
                }
                if (lstat(path, &st) < 0) {
                        log_warning_errno(-errno, "HotPaths=: cannot reach %s (%m), skipping",
                                          SHOWN(path));
                        continue;
                }
                r = walk(&c, path);
        }
        if (r < 0) {
                free(c.ranges);
                return r;
        }
        *ret = c.ranges;
        *ret_n = c.n;
        return 0;
}
