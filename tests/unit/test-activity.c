/* SPDX-License-Identifier: MIT */
/*
 * Telling other I/O on the device from ours: the disk's counters against our completed reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "activity.h"

#define MiB (UINT64_C(1) << 20)
#define MSEC UINT64_C(1000)

static void test_activity_parse(void **state) {
        DiskStat st;

        /* Linux 5.5+: 17 fields. */
        assert_int_equal(disk_stat_parse("   25251        0 27848219  3299453    14107     2170 "
                                         " 3162831    15456        3   110092  3318594        4 "
                                         "       0  4712348        0    12399     3684\n",
                                         &st),
                         0);
        assert_int_equal(st.read_ios, 25251);
        assert_int_equal(st.read_sectors, 27848219);
        assert_int_equal(st.write_ios, 14107);
        assert_int_equal(st.write_sectors, 3162831);
        assert_int_equal(st.in_flight, 3);
        assert_int_equal(st.discard_ios, 4);
        assert_int_equal(st.flush_ios, 12399);
        /* Before 4.18: 11 fields, no discards or flushes. */
        assert_int_equal(disk_stat_parse("1 2 3 4 5 6 7 8 9 10 11", &st), 0);
        assert_int_equal(st.read_sectors, 3);
        assert_int_equal(st.discard_ios, 0);
        assert_int_equal(st.flush_ios, 0);
        assert_int_equal(disk_stat_parse("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", &st), 0);
        assert_int_equal(st.flush_ios, 0);
        assert_int_equal(disk_stat_parse("", &st), -EBADMSG);
        assert_int_equal(disk_stat_parse("1 2 3", &st), -EBADMSG);
        assert_int_equal(disk_stat_parse("1 2 3 4 5 6 7 8 9 10 x", &st), -EBADMSG);
        assert_int_equal(disk_stat_parse("1 2 3 4 5 6 7 8 9 10 11 12", &st), -EBADMSG);
}

typedef struct Disk {
        DiskStat st;
        uint64_t ours;
        uint64_t in_flight; /* bytes of ours */
        uint64_t now;
        Activity a;
} Disk;

/* One 100 ms sample: @ours_read and @theirs_read bytes read, @their_writes writes. */
static bool step(Disk *d, uint64_t ours_read, uint64_t theirs_read, uint64_t their_writes,
                 double *rate) {
        d->st.read_sectors += (ours_read + theirs_read) / 512;
        d->st.write_ios += their_writes;
        d->st.write_sectors += their_writes * 8;
        d->ours += ours_read;
        d->now += ACTIVITY_SAMPLE_USEC;
        return activity_sample(&d->a, &d->st, d->ours, d->in_flight, d->now, rate);
}

static void test_activity_ours_alone_is_quiet(void **state) {
        Disk d = {0};
        double rate;

        assert_false(step(&d, 0, 0, 0, &rate)); /* the first sample only primes */
        for (int i = 0; i < 100; i++) {
                assert_false(step(&d, 12 * MiB, 0, 0, &rate));
                assert_true(rate == 0);
        }
}

static void test_activity_sees_their_reads(void **state) {
        Disk d = {.in_flight = 4 * MiB};
        double rate;

        (void)step(&d, 0, 0, 0, &rate);
        for (int i = 0; i < 20; i++)
                (void)step(&d, 12 * MiB, 0, 0, &rate);
        /* 2000 reads of 16 KiB a second: 3.2 MB in each 100 ms. With 4 MiB of ours in
         * flight, the second sample proves it. */
        assert_false(step(&d, 12 * MiB, 200 * 16384, 0, &rate));
        assert_true(step(&d, 12 * MiB, 200 * 16384, 0, &rate));
        for (int i = 0; i < 20; i++)
                assert_true(step(&d, 6 * MiB, 200 * 16384, 0, &rate));
        assert_true(rate > 0.99 * 2000 * 16384 && rate < 1.01 * 2000 * 16384);
        /* They stop: the rate falls at once, the activity ages out of the window. */
        for (int i = 0; i < ACTIVITY_RATE_SAMPLES; i++)
                (void)step(&d, 6 * MiB, 0, 0, &rate);
        assert_true(rate == 0);
        for (int i = 0; i < ACTIVITY_HISTORY; i++)
                (void)step(&d, 6 * MiB, 0, 0, &rate);
        assert_false(step(&d, 6 * MiB, 0, 0, &rate));
}

static void test_activity_split_reads_are_noise(void **state) {
        /* The disk counts parts of our reads before we can: up to what we have in flight
         * ahead, for as long as they take. Not someone else's. */
        Disk d = {.in_flight = 8 * MiB};
        double rate;

        (void)step(&d, 0, 0, 0, &rate);
        for (int i = 0; i < 200; i++) {
                uint64_t ahead = (uint64_t)(i * 7 % 9) * MiB; /* 0 to 8 MiB, any pattern */

                d.st.read_sectors += ahead / 512;
                assert_false(step(&d, 12 * MiB, 0, 0, &rate));
                d.st.read_sectors -= ahead / 512;
        }
}

static void test_activity_much_in_flight_only_delays(void **state) {
        /* 64 MiB of ours in flight: the workload shows once it read more than that. */
        Disk d = {.in_flight = 64 * MiB};
        double rate;
        int i;

        (void)step(&d, 0, 0, 0, &rate);
        for (i = 0; i < 50 && !step(&d, 12 * MiB, 200 * 16384, 0, &rate); i++)
                ;
        assert_in_range(i, 19, 21); /* 64 MiB / 3.2 MB per sample */
}

static void test_activity_sees_any_write(void **state) {
        Disk d = {0};
        double rate;

        (void)step(&d, 0, 0, 0, &rate);
        (void)step(&d, MiB, 0, 0, &rate);
        assert_true(step(&d, MiB, 0, 1, &rate)); /* one journal commit */
        assert_true(rate > 0);
        d.st.flush_ios++;
        assert_true(step(&d, MiB, 0, 0, &rate));
        d.st.discard_ios++;
        assert_true(step(&d, MiB, 0, 0, &rate));
        assert_false(step(&d, MiB, 0, 0, &rate));
}

static void test_activity_counters_going_back(void **state) {
        /* The counters reset (a device replaced under the same name): no false alarm, no
         * wrap-around. */
        Disk d = {0};
        double rate;

        d.st.read_sectors = 1000000;
        d.st.write_ios = 50;
        (void)step(&d, 0, 0, 0, &rate);
        d.st = (DiskStat){0};
        assert_false(step(&d, MiB, 0, 0, &rate));
        assert_true(rate == 0);
}

static void test_activity_read(void **state) {
        char dir[] = "/tmp/test-activity-XXXXXX", path[64], fifo[64];
        DiskStat st;
        FILE *f;
        int fd;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/stat", dir);
        snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("1 2 3 4 5 6 7 8 9 10 11\n", f);
        fclose(f);
        fd = open(path, O_RDONLY);
        assert_int_equal(disk_stat_read(fd, &st), 0); /* and again: pread from 0 */
        assert_int_equal(disk_stat_read(fd, &st), 0);
        assert_int_equal(st.read_sectors, 3);
        close(fd);
        f = fopen(path, "w"); /* longer than any stat line: not one */
        for (int i = 0; i < 100; i++)
                fputs("1234567890", f);
        fclose(f);
        fd = open(path, O_RDONLY);
        assert_int_equal(disk_stat_read(fd, &st), -EBADMSG);
        close(fd);
        assert_int_equal(mkfifo(fifo, 0600), 0); /* a FIFO in its place: an error, no hang */
        fd = open(fifo, O_RDONLY | O_NONBLOCK);
        assert_true(fd >= 0);
        assert_int_equal(disk_stat_read(fd, &st), -ESPIPE);
        close(fd);
        unlink(fifo);
        unlink(path);
        rmdir(dir);
}

static void test_activity_family(void **state) {
        char f[16];

        disk_family("nvme1n1", f, sizeof(f));
        assert_string_equal(f, "nvme");
        disk_family("nvme12n3", f, sizeof(f));
        assert_string_equal(f, "nvme");
        disk_family("loop7", f, sizeof(f));
        assert_string_equal(f, "loop");
        disk_family("xvdf", f, sizeof(f));
        assert_string_equal(f, "xvd");
        disk_family("xvdaa", f, sizeof(f));
        assert_string_equal(f, "xvd");
        disk_family("sdb", f, sizeof(f));
        assert_string_equal(f, "sd");
        disk_family("vda", f, sizeof(f));
        assert_string_equal(f, "vd");
        disk_family("dm-0", f, sizeof(f));
        assert_string_equal(f, "dm");
        disk_family("", f, sizeof(f));
        assert_string_equal(f, "");
        disk_family("nvme1n1", f, 3); /* truncated, terminated */
        assert_string_equal(f, "nv");
}

static void test_activity_neighbour(void **state) {
        DiskStat a = {.read_sectors = 1000, .write_ios = 5}, b = a;
        double rate;

        assert_false(activity_neighbour(&a, &b, ACTIVITY_SAMPLE_USEC, &rate)); /* idle */
        assert_true(rate == 0);
        b.read_sectors += 256 * 1024 / 512; /* 256 KiB: at the slack, not over */
        assert_false(activity_neighbour(&a, &b, ACTIVITY_SAMPLE_USEC, &rate));
        b.read_sectors += 1;
        assert_true(activity_neighbour(&a, &b, ACTIVITY_SAMPLE_USEC, &rate));
        assert_true(rate > 2.5e6 && rate < 2.7e6);
        b = a;
        b.write_ios++; /* one write, however small */
        assert_true(activity_neighbour(&a, &b, ACTIVITY_SAMPLE_USEC, &rate));
        b = a;
        b.read_sectors = 0; /* counters that went back: nothing */
        b.write_ios = 0;
        assert_false(activity_neighbour(&a, &b, ACTIVITY_SAMPLE_USEC, &rate));
        assert_true(rate == 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_activity_parse),
                cmocka_unit_test(test_activity_ours_alone_is_quiet),
                cmocka_unit_test(test_activity_sees_their_reads),
                cmocka_unit_test(test_activity_split_reads_are_noise),
                cmocka_unit_test(test_activity_sees_any_write),
                cmocka_unit_test(test_activity_much_in_flight_only_delays),
                cmocka_unit_test(test_activity_counters_going_back),
                cmocka_unit_test(test_activity_read),
                cmocka_unit_test(test_activity_family),
                cmocka_unit_test(test_activity_neighbour),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
