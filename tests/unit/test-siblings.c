/* SPDX-License-Identifier: MIT */
/*
 * The hydrators of one host and what they tell each other (siblings.h), and the neighbour disks
 * read with it (neighbours.h): a fake sysfs with three loop disks and a runtime directory with
 * publications, planted files among them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixtures.h"
#include "neighbours.h"
#include "siblings.h"
#include "util.h"

#define MiB (UINT64_C(1) << 20)
#define SEC USEC_PER_SEC

typedef struct Fixture {
        char *root; /* the fake sysfs */
        char *run;  /* the runtime directory */
        int run_fd;
} Fixture;

/* A disk's stat line: @read_mib MiB read, @writes writes of 4 KiB, @in_flight requests. */
static void write_stat(Fixture *f, const char *name, uint64_t read_mib, uint64_t writes,
                       uint64_t in_flight) {
        char rel[64], line[256];

        snprintf(rel, sizeof(rel), "block/%s/stat", name);
        snprintf(line, sizeof(line),
                 "1 0 %" PRIu64 " 1 %" PRIu64 " 0 %" PRIu64 " 1 %" PRIu64 " 1 1 0 0 0 0 0 0\n",
                 read_mib * 2048, writes, writes * 8, in_flight);
        fixture_write(f->root, rel, line);
}

/* The same with @done requests completed in all (reads; the other writer counts them as 1). */
/* ... with the ms its reads took in all */
static void write_stat_ticks(Fixture *f, const char *name, uint64_t read_mib, uint64_t done,
                             uint64_t ticks, uint64_t in_flight) {
        char rel[64], line[256];

        snprintf(rel, sizeof(rel), "block/%s/stat", name);
        snprintf(line, sizeof(line),
                 "%" PRIu64 " 0 %" PRIu64 " %" PRIu64 " 0 0 0 1 %" PRIu64 " 1 1 0 0 0 0 0 0\n",
                 done, read_mib * 2048, ticks, in_flight);
        fixture_write(f->root, rel, line);
}

static void write_stat_done(Fixture *f, const char *name, uint64_t read_mib, uint64_t done,
                            uint64_t in_flight) {
        write_stat_ticks(f, name, read_mib, done, 1, in_flight);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        static const char *const disks[] = {"loop990", "loop991", "loop992"};

        assert_non_null(f);
        f->root = fixture_tmpdir("test-siblings-sys");
        f->run = fixture_tmpdir("test-siblings-run");
        assert_non_null(f->root);
        assert_non_null(f->run);
        assert_int_equal(chmod(f->run, 0755), 0);
        for (unsigned i = 0; i < ELEMENTSOF(disks); i++) {
                char rel[64], dev[32];

                snprintf(rel, sizeof(rel), "block/%s/dev", disks[i]);
                snprintf(dev, sizeof(dev), "7:%u\n", 990 + i);
                fixture_write(f->root, rel, dev);
                write_stat(f, disks[i], 0, 0, 0);
        }
        f->run_fd = open(f->run, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(f->run_fd >= 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        close(f->run_fd);
        rm_rf(f->root);
        rm_rf(f->run);
        free(f->root);
        free(f->run);
        free(f);
        return 0;
}

/* A sibling's reads: @bytes completed, @in_flight of 512 KiB in flight, one request each. */
static void publish(SiblingPub *p, uint64_t bytes, uint64_t in_flight, uint64_t now) {
        ActivityOurs o = {.bytes = bytes,
                          .reads = in_flight,
                          .read_bytes = 512 * 1024,
                          .requests_min = 1,
                          .requests_max = 2};

        sibling_pub_reads(p, &o, now);
}

static void test_siblings_publish_and_read(void **state) {
        Fixture *f = *state;
        dev_t state_disk = makedev(7, 992);
        SiblingPub *p = NULL;
        Sibling *s = NULL;
        SiblingView v = {};
        char path[512];
        struct stat st;
        uint64_t seq;
        int fd;

        assert_int_equal(sibling_pub_new(&p, f->run_fd, "loop991", makedev(7, 991), &state_disk, 1,
                                         10 * SEC),
                         0);
        snprintf(path, sizeof(path), "%s/io/loop991.io", f->run);
        assert_int_equal(stat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        publish(p, 100 * MiB, 8, 10 * SEC);
        sibling_pub_save(p, true, 4096);
        assert_int_equal(sibling_open(&s, f->run_fd, "loop991", makedev(7, 991)), 0);
        assert_true(sibling_read(s, 10 * SEC + 100, &v));
        assert_int_equal(v.reads.bytes, 100 * MiB);
        assert_int_equal(v.reads.reads, 8);
        assert_int_equal(v.reads.read_bytes, 512 * 1024);
        assert_int_equal(v.reads.requests_min, 1);
        assert_int_equal(v.reads.requests_max, 2);
        /* Read again: the same publication; another one shows as a change (a disk's counters
         * read in between are read again). */
        assert_false(sibling_read_reads(s, &v));
        publish(p, 101 * MiB, 7, 10 * SEC);
        assert_true(sibling_read_reads(s, &v));
        assert_int_equal(v.reads.bytes, 101 * MiB);
        assert_int_equal(v.reads.reads, 7);
        assert_false(sibling_read_reads(s, &v));
        /* A writer stopped in the middle of publishing (its seqlock odd: the page's layout
         * puts it at byte 72, after the identity and the heartbeat): what was read last
         * stands, not zeros. */
        fd = open(path, O_RDWR);
        assert_true(fd >= 0);
        assert_int_equal(pread(fd, &seq, sizeof(seq), 72), sizeof(seq));
        assert_int_equal(seq, 4); /* two publications: the layout is as this test knows it */
        seq++;
        assert_int_equal(pwrite(fd, &seq, sizeof(seq), 72), sizeof(seq));
        assert_true(sibling_read(s, 10 * SEC + 200, &v));
        assert_int_equal(v.reads.bytes, 101 * MiB);
        assert_int_equal(v.reads.reads, 7);
        seq++;
        assert_int_equal(pwrite(fd, &seq, sizeof(seq), 72), sizeof(seq));
        close(fd);
        assert_int_equal(v.saves % 2, 1); /* a save under way */
        assert_int_equal(v.n_state_disks, 1);
        assert_true(v.state_disks[0] == state_disk);
        sibling_pub_save(p, false, 4096);
        assert_true(sibling_read(s, 11 * SEC, &v));
        assert_int_equal(v.saves, 2);
        assert_int_equal(v.save_bytes, 4096);
        /* It stops beating (killed): stale, so its disk's reads are a workload again. */
        assert_false(sibling_read(s, 10 * SEC + SIBLING_STALE_USEC + 1, &v));
        /* Another disk under the name now: not this one's. */
        s = sibling_free(s);
        assert_int_equal(sibling_open(&s, f->run_fd, "loop991", makedev(7, 5)), -ESTALE);
        /* Unpublished: gone. */
        p = sibling_pub_free(p);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(sibling_open(&s, f->run_fd, "loop991", makedev(7, 991)), -ENOENT);
}

static void test_siblings_refuse_what_is_planted(void **state) {
        Fixture *f = *state;
        char path[512], junk[200] = "EBSHIO1";
        Sibling *s = NULL;
        SiblingPub *p = NULL;

        fixture_mkdirs(f->run, "io");
        assert_int_equal(chmod(f->run, 0755), 0);
        /* A file of the wrong size, or with the wrong magic: not believed. */
        fixture_write_bytes(f->run, "io/loop990.io", junk, sizeof(junk));
        assert_int_equal(sibling_open(&s, f->run_fd, "loop990", makedev(7, 990)), -EBADMSG);
        /* A symbolic link, a FIFO, a directory: refused, never followed, never blocking. */
        snprintf(path, sizeof(path), "%s/io/loop990.io", f->run);
        unlink(path);
        fixture_symlink(f->run, "/dev/zero", "io/loop990.io");
        assert_int_equal(sibling_open(&s, f->run_fd, "loop990", makedev(7, 990)), -ELOOP);
        unlink(path);
        assert_int_equal(mkfifo(path, 0644), 0);
        assert_int_equal(sibling_open(&s, f->run_fd, "loop990", makedev(7, 990)), -EPERM);
        unlink(path);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_true(sibling_open(&s, f->run_fd, "loop990", makedev(7, 990)) < 0);
        rmdir(path);
        /* Names that are not a disk's. */
        assert_int_equal(sibling_open(&s, f->run_fd, "../x", makedev(7, 990)), -EINVAL);
        assert_int_equal(sibling_open(&s, f->run_fd, "", makedev(7, 990)), -EINVAL);
        /* A file another user owns: anyone could have planted it. */
        assert_int_equal(sibling_pub_new(&p, f->run_fd, "loop990", makedev(7, 990), NULL, 0, SEC),
                         0);
        snprintf(path, sizeof(path), "%s/io/loop990.io", f->run);
        if (geteuid() == 0) {
                assert_int_equal(chown(path, 65534, 65534), 0);
                assert_int_equal(sibling_open(&s, f->run_fd, "loop990", makedev(7, 990)), -EPERM);
        }
        p = sibling_pub_free(p);
        /* A directory others may write to: nothing in it is believed, nothing published. */
        snprintf(path, sizeof(path), "%s/io", f->run);
        assert_int_equal(chmod(path, 0777), 0);
        assert_int_equal(sibling_pub_new(&p, f->run_fd, "loop990", makedev(7, 990), NULL, 0, SEC),
                         -EPERM);
        assert_int_equal(sibling_open(&s, f->run_fd, "loop990", makedev(7, 990)), -EPERM);
}

static void test_siblings_replaced_and_left_alone(void **state) {
        Fixture *f = *state;
        SiblingPub *a = NULL, *b = NULL;
        Sibling *s = NULL;
        char path[512];
        struct stat st;

        assert_int_equal(sibling_pub_new(&a, f->run_fd, "loop991", makedev(7, 991), NULL, 0, SEC),
                         0);
        assert_int_equal(sibling_open(&s, f->run_fd, "loop991", makedev(7, 991)), 0);
        assert_false(sibling_replaced(s, f->run_fd, "loop991"));
        /* A second run on the same disk publishes over it; the first, ending, leaves the
         * second's file alone. */
        assert_int_equal(sibling_pub_new(&b, f->run_fd, "loop991", makedev(7, 991), NULL, 0, SEC),
                         0);
        assert_true(sibling_replaced(s, f->run_fd, "loop991"));
        a = sibling_pub_free(a);
        snprintf(path, sizeof(path), "%s/io/loop991.io", f->run);
        assert_int_equal(stat(path, &st), 0);
        b = sibling_pub_free(b);
        assert_int_equal(stat(path, &st), -1);
        s = sibling_free(s);
}

/* A neighbour disk hydrated by a sibling: its reads are the sibling's, not a workload; a disk
 * beside it with a reader that is nobody's is one. */
static void test_siblings_neighbours_subtract_their_reads(void **state) {
        Fixture *f = *state;
        SiblingPub *p = NULL, *self = NULL;
        Neighbours *n = NULL;
        NeighbourFigures nb;
        uint64_t now = SEC, read = 0, theirs = 0;

        assert_int_equal(sibling_pub_new(&p, f->run_fd, "loop991", makedev(7, 991), NULL, 0, now),
                         0);
        assert_int_equal(neighbours_new(&n, f->root, "loop990", f->run_fd, now), 0);
        assert_int_equal(neighbours_count(n), 2);
        /* Before the first sample, for the depth a start shares (tuner_start_share()): the
         * sibling is there; no sample has read it yet; our own publication is not one. */
        assert_int_equal(
                sibling_pub_new(&self, f->run_fd, "loop990", makedev(7, 990), NULL, 0, now), 0);
        assert_int_equal(neighbours_live_siblings(n, now), 1);
        assert_int_equal(neighbours_siblings(n), 0);
        assert_int_equal(neighbours_live_siblings(NULL, now), 0);
        self = sibling_pub_free(self);
        for (unsigned i = 0; i < 30; i++) {
                now += 100 * USEC_PER_MSEC;
                read += 12 * MiB;  /* the sibling on loop991 */
                theirs += 3 * MiB; /* somebody on loop992 */
                write_stat(f, "loop991", read / MiB, 0, 16);
                write_stat(f, "loop992", theirs / MiB, 0, 1);
                publish(p, read, 16, now);
                neighbours_sample(n, now, NULL, &nb);
        }
        assert_int_equal(neighbours_siblings(n), 1);
        assert_true(nb.siblings > 119.0 * MiB && nb.siblings < 121.0 * MiB);
        /* one sibling reading, and what it read since the last sample (tuner_siblings()) */
        assert_int_equal(nb.readers, 1);
        assert_true(nb.sibling_bytes == 12.0 * MiB);
        assert_int_equal(nb.queued, 0);
        /* It says its reads queue: one reader that queues. */
        sibling_pub_queueing(p, true);
        now += 100 * USEC_PER_MSEC;
        read += 12 * MiB;
        theirs += 3 * MiB;
        write_stat(f, "loop991", read / MiB, 0, 16);
        write_stat(f, "loop992", theirs / MiB, 0, 1);
        publish(p, read, 16, now);
        neighbours_sample(n, now, NULL, &nb);
        assert_int_equal(nb.queued, 1);
        sibling_pub_queueing(p, false);
        assert_true(nb.cost > 29.0 * MiB - 3 * 256 * 1024 && nb.cost < 31.0 * MiB);
        assert_string_equal(nb.busiest, "loop992");
        /* The sibling dies: its disk's reads are a workload from then on. */
        for (unsigned i = 0; i < 30; i++) {
                now += 100 * USEC_PER_MSEC;
                read += 12 * MiB;
                write_stat(f, "loop991", read / MiB, 0, 16);
                write_stat(f, "loop992", theirs / MiB, 0, 0);
                neighbours_sample(n, now, NULL, &nb);
        }
        assert_int_equal(neighbours_siblings(n), 0);
        assert_int_equal(neighbours_live_siblings(n, now), 0);
        assert_true(nb.siblings == 0);
        assert_int_equal(nb.readers, 0);
        assert_true(nb.sibling_bytes == 0);
        assert_true(nb.cost > 110.0 * MiB);
        neighbours_free(n);
        sibling_pub_free(p);
}

/* How long a request waits on the disks beside ours (tuner_stalls()): on a disk no sibling
 * reads, theirs; on a sibling's, its own reads wait there too, and it is not told. */
static void test_siblings_stalls_beside_us(void **state) {
        Fixture *f = *state;
        SiblingPub *p = NULL;
        Neighbours *n = NULL;
        NeighbourFigures nb;
        uint64_t now = SEC, read = 0, done = 0, last_done;

        assert_int_equal(sibling_pub_new(&p, f->run_fd, "loop991", makedev(7, 991), NULL, 0, now),
                         0);
        assert_int_equal(neighbours_new(&n, f->root, "loop990", f->run_fd, now), 0);
        /* The sibling's reads wait behind a cap (none done for a while); a workload on loop992
         * reads one request at a time, each done within a sample. */
        for (unsigned i = 0; i < 40; i++) {
                now += 100 * USEC_PER_MSEC;
                if (i % 5 == 0)
                        read += 16 * MiB;
                done += 200;
                write_stat_done(f, "loop991", read, 1, 16);
                write_stat_done(f, "loop992", done * 16 / 1024, done, 1);
                publish(p, read, 16, now);
                neighbours_sample(n, now, NULL, &nb);
                assert_true(nb.waited_usec == 0);
                assert_string_equal(nb.waiting, "");
        }
        /* loop992's request stops coming back: it has waited since the sample that saw it */
        for (unsigned i = 1; i <= 4; i++) {
                now += 100 * USEC_PER_MSEC;
                publish(p, read, 16, now);
                neighbours_sample(n, now, NULL, &nb);
                assert_int_equal(nb.waited_usec, i * 100 * USEC_PER_MSEC);
                assert_string_equal(nb.waiting, "loop992");
        }
        /* it is done */
        now += 100 * USEC_PER_MSEC;
        done++;
        write_stat_done(f, "loop992", done * 16 / 1024, done, 0);
        publish(p, read, 16, now);
        neighbours_sample(n, now, NULL, &nb);
        assert_true(nb.waited_usec == 0);
        /* A workload with eight in flight, three done in each sample, each after 300 ms: no
         * request waits a whole sample, but those done took that long. The sibling's reads,
         * which take longer (its disk's ticks grow by 1 s a sample), are left out. */
        for (unsigned i = 0; i < 3; i++) {
                now += 100 * USEC_PER_MSEC;
                done += 3;
                write_stat_ticks(f, "loop992", done * 16 / 1024, done, 1 + (i + 1) * 900,
                                 i < 2 ? 8 : 0);
                write_stat_ticks(f, "loop991", read, 1 + i + 1, 1 + (i + 1) * 1000, 16);
                publish(p, read, 16, now);
                neighbours_sample(n, now, NULL, &nb);
                assert_true(nb.waited_usec == 0);
                assert_int_equal(nb.latency_usec, 300 * USEC_PER_MSEC);
                assert_string_equal(nb.waiting, "loop992");
        }
        last_done = now;
        /* The sibling stops beating: what waits on its disk is someone's from then on. */
        for (unsigned i = 0; i < 30; i++) {
                now += 100 * USEC_PER_MSEC;
                neighbours_sample(n, now, NULL, &nb);
        }
        /* and its requests, none done since, have waited since the last look that saw one */
        assert_int_equal(nb.waited_usec, now - last_done);
        assert_string_equal(nb.waiting, "loop991");
        neighbours_free(n);
        sibling_pub_free(p);
}

/* A sibling starting with us: its disk reads more than it tells of (the mapping of its file
 * systems), and for its first seconds that is not a workload; what goes on after is. */
static void test_siblings_start_up_is_not_a_workload(void **state) {
        Fixture *f = *state;
        SiblingPub *p = NULL;
        Neighbours *n = NULL;
        NeighbourFigures nb;
        uint64_t now = SEC, told = 0, read = 0;

        assert_int_equal(sibling_pub_new(&p, f->run_fd, "loop991", makedev(7, 991), NULL, 0, now),
                         0);
        assert_int_equal(neighbours_new(&n, f->root, "loop990", f->run_fd, now), 0);
        for (unsigned i = 0; i < 50; i++) {
                now += 100 * USEC_PER_MSEC;
                told += 2 * MiB;
                read += 3 * MiB; /* a third of it not told of */
                write_stat(f, "loop991", read / MiB, 0, 4);
                publish(p, told, 4, now);
                neighbours_sample(n, now, NULL, &nb);
                if (now - SEC < NEIGHBOURS_SIBLING_START_USEC)
                        assert_true(nb.cost == 0);
        }
        assert_int_equal(neighbours_siblings(n), 1);
        assert_true(nb.siblings > 19.0 * MiB && nb.siblings < 21.0 * MiB);
        assert_true(nb.cost > 9.0 * MiB && nb.cost < 11.0 * MiB);
        assert_string_equal(nb.busiest, "loop991");
        neighbours_free(n);
        sibling_pub_free(p);
}

/* One sample of a sibling on loop991 reading @step MiB told and done, and @gap MiB more told
 * (sent: the mapping's reads count then) that its disk completes only @late samples later. */
typedef struct Mapper {
        uint64_t told, done, writes, late[16];
        unsigned t;
} Mapper;

static void mapper_sample(Fixture *f, SiblingPub *p, Neighbours *n, Mapper *m, uint64_t now,
                          uint64_t step, uint64_t gap, unsigned late, NeighbourFigures *nb) {
        m->told += step + gap;
        m->done += step + m->late[m->t % 16];
        m->late[m->t % 16] = 0;
        m->late[(m->t + late) % 16] += gap;
        m->t++;
        write_stat(f, "loop991", m->done, m->writes, 4);
        publish(p, m->told * MiB, 4, now);
        neighbours_sample(n, now, NULL, nb);
}

/* A sibling mapping its file systems: the reads it tells of are counted as sent and its disk
 * completes them 800 ms later (behind a cap, with readahead), which would look like a second
 * of someone's reads; while it says it maps, its disk's reads are not a workload, its writes
 * are; once done, the same would count. */
static void test_siblings_mapping_reads_are_not_a_workload(void **state) {
        Fixture *f = *state;
        SiblingPub *p = NULL;
        Sibling *s = NULL;
        SiblingView v = {0};
        Neighbours *n = NULL;
        NeighbourFigures nb;
        Mapper m = {0};
        uint64_t now = SEC;
        double most = 0;

        assert_int_equal(sibling_pub_new(&p, f->run_fd, "loop991", makedev(7, 991), NULL, 0, now),
                         0);
        sibling_pub_mapping(p, true);
        assert_int_equal(sibling_open(&s, f->run_fd, "loop991", makedev(7, 991)), 0);
        assert_true(sibling_read(s, now, &v));
        assert_true(v.mapping);
        assert_int_equal(neighbours_new(&n, f->root, "loop990", f->run_fd, now), 0);
        /* past its first seconds (NEIGHBOURS_SIBLING_START_USEC), a late 3 MiB every 2 s */
        for (unsigned i = 0; i < 80; i++) {
                now += 100 * USEC_PER_MSEC;
                mapper_sample(f, p, n, &m, now, 1, i % 20 == 0 ? 3 : 0, 8, &nb);
                assert_true(nb.cost == 0);
        }
        /* a workload writing on its disk meanwhile: 50 writes of 4 KiB a sample */
        for (unsigned i = 0; i < 10; i++) {
                now += 100 * USEC_PER_MSEC;
                m.writes += 50;
                mapper_sample(f, p, n, &m, now, 1, 0, 8, &nb);
        }
        assert_true(nb.cost >= 500.0 * (ACTIVITY_OP_BYTES + 4096));
        /* Mapped: the same late reads are someone's now (what tells the mapping's apart). */
        sibling_pub_mapping(p, false);
        assert_true(sibling_read(s, now, &v));
        assert_false(v.mapping);
        for (unsigned i = 0; i < 40; i++) {
                now += 100 * USEC_PER_MSEC;
                mapper_sample(f, p, n, &m, now, 1, i == 15 ? 3 : 0, 8, &nb);
                if (i >= 15)
                        most = MAX(most, nb.cost);
        }
        assert_true(most > 2.0 * MiB);
        neighbours_free(n);
        sibling_free(s);
        sibling_pub_free(p);
}

/* A sibling that starts after us: its reads are its own from the first, not a workload for the
 * seconds until the next scan. */
static void test_siblings_found_when_their_disk_reads(void **state) {
        Fixture *f = *state;
        SiblingPub *p = NULL;
        Neighbours *n = NULL;
        NeighbourFigures nb;
        uint64_t now = SEC, read = 0;

        assert_int_equal(neighbours_new(&n, f->root, "loop990", f->run_fd, now), 0);
        for (unsigned i = 0; i < 5; i++) { /* quiet */
                now += 100 * USEC_PER_MSEC;
                neighbours_sample(n, now, NULL, &nb);
        }
        assert_int_equal(sibling_pub_new(&p, f->run_fd, "loop991", makedev(7, 991), NULL, 0, now),
                         0);
        for (unsigned i = 0; i < 30; i++) {
                now += 100 * USEC_PER_MSEC;
                read += 12 * MiB;
                write_stat(f, "loop991", read / MiB, 0, 16);
                publish(p, read, 16, now);
                neighbours_sample(n, now, NULL, &nb);
                assert_true(nb.cost == 0);
        }
        assert_int_equal(neighbours_siblings(n), 1);
        assert_true(nb.siblings > 100.0 * MiB);
        /* It stops beating for a while (stopped, or starved of CPU) and reads 600 MiB
         * meanwhile, which count as a workload; then it beats again: what it says it read in
         * all does not count twice (nor as 600 MiB read in a second). */
        for (unsigned i = 0; i < 50; i++) {
                now += 100 * USEC_PER_MSEC;
                read += 12 * MiB;
                write_stat(f, "loop991", read / MiB, 0, 16);
                neighbours_sample(n, now, NULL, &nb);
        }
        assert_int_equal(neighbours_siblings(n), 0);
        for (unsigned i = 0; i < 30; i++) {
                now += 100 * USEC_PER_MSEC;
                read += 12 * MiB;
                write_stat(f, "loop991", read / MiB, 0, 16);
                publish(p, read, 16, now);
                neighbours_sample(n, now, NULL, &nb);
                assert_true(nb.siblings <= 121.0 * MiB);
        }
        assert_true(nb.cost == 0);
        neighbours_free(n);
        sibling_pub_free(p);
}

/* A checkpoint save's writes on the disk that holds a state directory are allowed for, ours or
 * a sibling's; a workload writing more shows. */
static void test_siblings_saves_are_nobodys_workload(void **state) {
        Fixture *f = *state;
        dev_t root = makedev(7, 992);
        SiblingPub *p = NULL;
        Neighbours *n = NULL;
        NeighbourFigures nb;
        uint64_t now = SEC, writes = 0;
        SaveNews own = {.file_bytes = 2048, .disks = &root, .n = 1};

        assert_int_equal(sibling_pub_new(&p, f->run_fd, "loop991", makedev(7, 991), &root, 1, now),
                         0);
        assert_int_equal(neighbours_new(&n, f->root, "loop990", f->run_fd, now), 0);
        for (unsigned i = 0; i < 40; i++) {
                now += 100 * USEC_PER_MSEC;
                publish(p, 0, 0, now);
                own.saves = i % 2; /* ours every other sample */
                if (i % 3 == 0) {  /* the sibling's every third */
                        sibling_pub_save(p, true, 2048);
                        sibling_pub_save(p, false, 2048);
                }
                writes += own.saves * 6 + (i % 3 == 0) * 6; /* 6 x 4 KiB each */
                write_stat(f, "loop992", 0, writes, 0);
                neighbours_sample(n, now, &own, &nb);
                assert_true(nb.cost == 0);
        }
        /* A workload on that disk: 100 writes of 4 KiB a sample, beyond any save's. */
        for (unsigned i = 0; i < 10; i++) {
                now += 100 * USEC_PER_MSEC;
                publish(p, 0, 0, now);
                own.saves = 1;
                writes += 6 + 100;
                write_stat(f, "loop992", 0, writes, 0);
                neighbours_sample(n, now, &own, &nb);
        }
        /* its 1000 writes a second, less what ten saves a second may write */
        assert_true(nb.cost >= (1000.0 - 10 * SAVE_ALLOWANCE_OPS) * ACTIVITY_OP_BYTES +
                                       1000.0 * 4096 - 10.0 * (2 * 4096 + SAVE_ALLOWANCE_FS_BYTES));
        neighbours_free(n);
        sibling_pub_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_siblings_publish_and_read, setup, teardown),
                cmocka_unit_test_setup_teardown(test_siblings_refuse_what_is_planted, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_siblings_replaced_and_left_alone, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_siblings_stalls_beside_us, setup, teardown),
                cmocka_unit_test_setup_teardown(test_siblings_start_up_is_not_a_workload, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_siblings_neighbours_subtract_their_reads,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_siblings_mapping_reads_are_not_a_workload,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_siblings_found_when_their_disk_reads, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_siblings_saves_are_nobodys_workload, setup,
                                                teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
