/* SPDX-License-Identifier: MIT */
/*
 * Fixtures that several unit tests share: scratch directories and their removal, files and
 * links under a root, and a fake sysfs tree with an EBS volume (fixtures.h).
 */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixtures.h"
#include "util.h"

char *fixture_tmpdir(const char *prefix) {
        const char *tmp = getenv("TMPDIR");
        char *dir;

        if (asprintf(&dir, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix) < 0)
                return NULL;
        if (!mkdtemp(dir)) {
                free(dir);
                return NULL;
        }
        return dir;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        if (type == FTW_DP || type == FTW_DNR || type == FTW_F)
                (void)chmod(path, 0700); /* undo permission tests; links are left alone */
        return remove(path) < 0 ? -errno : 0;
}

int rm_rf(const char *path) {
        int r = nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);

        return r < 0 ? -errno : r;
}

static char *path_under(const char *root, const char *rel) {
        char *path;

        assert_true(asprintf(&path, "%s/%s", root, rel) >= 0);
        return path;
}

void fixture_mkdirs(const char *root, const char *rel) {
        _cleanup_free_ char *path = path_under(root, rel);

        for (char *p = path + strlen(root) + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
                *p = '/';
        }
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

void fixture_write_bytes(const char *root, const char *rel, const void *content, size_t size) {
        _cleanup_free_ char *path = path_under(root, rel);
        const char *slash = strrchr(rel, '/');
        FILE *f;

        if (slash) {
                _cleanup_free_ char *parent = strndup(rel, (size_t)(slash - rel));

                assert_non_null(parent);
                fixture_mkdirs(root, parent);
        }
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(content, 1, size, f), size);
        assert_int_equal(fclose(f), 0);
}

void fixture_write(const char *root, const char *rel, const char *content) {
        fixture_write_bytes(root, rel, content, strlen(content));
}

void fixture_symlink(const char *root, const char *target, const char *rel) {
        _cleanup_free_ char *path = path_under(root, rel);

        assert_int_equal(symlink(target, path), 0);
}

/* An NVMe controller nvme<N> with namespace nvme<N>n1, as sysfs links them. */
static void fake_nvme(const char *root, int n, const char *model, const char *serial,
                      const char *wwid) {
        char ctrl[32], ns[64], rel[128], link[128];

        (void)snprintf(ctrl, sizeof(ctrl), "devices/nvme%d", n);
        (void)snprintf(ns, sizeof(ns), "%s/nvme%dn1", ctrl, n);
        fixture_mkdirs(root, ns);
        (void)snprintf(rel, sizeof(rel), "%s/model", ctrl);
        fixture_write(root, rel, model);
        (void)snprintf(rel, sizeof(rel), "%s/serial", ctrl);
        fixture_write(root, rel, serial);
        (void)snprintf(rel, sizeof(rel), "%s/wwid", ns);
        fixture_write(root, rel, wwid);
        (void)snprintf(rel, sizeof(rel), "%s/device", ns);
        fixture_symlink(root, "..", rel);
        (void)snprintf(link, sizeof(link), "../../%s", ns);
        (void)snprintf(rel, sizeof(rel), "class/block/nvme%dn1", n);
        fixture_symlink(root, link, rel);
}

void fake_sysfs_tree(const char *root) {
        fixture_mkdirs(root, "class/block");
        fake_nvme(root, 91, FAKE_EBS_MODEL "\n", "vol0123456789ABCDEF0\n",
                  "nvme.1d0f-766f6c-00000001\n");
        fake_nvme(root, 92, "QEMU NVMe Ctrl                          \n", "deadbeef            \n",
                  "nvme.1b36-6465616462656566-00000001\n");
        fixture_mkdirs(root, "class/block/sdzz/device");
        fixture_write(root, "class/block/sdzz/device/model", "QEMU HARDDISK   \n");
        fixture_write(root, "class/block/sdzz/device/wwid", "t10.ATA     QEMU HARDDISK  QM00001\n");
        fixture_mkdirs(root, "class/block/loop991");
}
