/* SPDX-License-Identifier: MIT */
/*
 * mountinfo: the escapes undone, and a walk of this process's own mount table.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "mountinfo.h"

static void test_mountinfo_unescape(void **state) {
        char s[] = "/mnt/a\\040b\\011c\\134d\\012e", bad[] = "\\48x\\9\\0";

        mountinfo_unescape(s);
        assert_string_equal(s, "/mnt/a b\tc\\d\ne");
        mountinfo_unescape(bad); /* not three octal digits: left as it is */
        assert_string_equal(bad, "\\48x\\9\\0");
}

typedef struct Seen {
        dev_t root_dev;
        bool root;
        unsigned n;
} Seen;

static int note(const MountEntry *m, void *userdata) {
        Seen *s = userdata;

        assert_non_null(m->mount_point);
        assert_non_null(m->fstype);
        assert_non_null(m->source);
        assert_non_null(m->super_options);
        assert_true(m->mount_point[0] == '/');
        if (strcmp(m->mount_point, "/") == 0 && m->dev == s->root_dev)
                s->root = true;
        s->n++;
        return 0;
}

/* The root directory's file system is in the table, by its device number. */
static void test_mountinfo_walk(void **state) {
        struct stat st;
        Seen s = {};

        assert_int_equal(stat("/", &st), 0);
        s.root_dev = st.st_dev;
        assert_int_equal(mountinfo_foreach(note, &s), 0);
        assert_true(s.n > 0);
        assert_true(s.root);
}

static int stop_at_second(const MountEntry *m, void *userdata) {
        unsigned *n = userdata;

        return ++*n == 2 ? 42 : 0;
}

/* A callback's nonzero return ends the walk and is what it returns. */
static void test_mountinfo_stop(void **state) {
        unsigned n = 0;

        assert_int_equal(mountinfo_foreach(stop_at_second, &n), 42);
        assert_int_equal(n, 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mountinfo_unescape),
                cmocka_unit_test(test_mountinfo_walk),
                cmocka_unit_test(test_mountinfo_stop),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
