/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl wait (src/ctl/ctl-wait.c): when a record says a phase is reached, when it never
 * will be, --phase and --timeout, the names a volume goes by; then ctl_wait() on a runtime
 * directory of real record files: at once, after a record written later, on timeout, and for
 * targets that name nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctl-wait.h"
#include "fixtures.h"
#include "time-util.h"

static VolumeRecord rec(RecordState s, RecordPhase p) {
        VolumeRecord r = {.state = s, .phase = p, .fs_aware = true, .size_bytes = 100};

        strcpy(r.volume_id, "vol-1");
        strcpy(r.kernel_name, "nvme1n1");
        strcpy(r.device_name, "sdf");
        return r;
}

static WaitVerdict verdict(VolumeRecord r, RecordPhase want) {
        const char *why;
        WaitVerdict v = wait_verdict(&r, want, &why);

        assert_true((v == WAIT_SHORT) == (why != NULL));
        return v;
}

static void test_verdicts(void **state) {
        VolumeRecord r;

        (void)state;
        /* a stage is reached when a later one is read */
        assert_int_equal(
                verdict(rec(RECORD_HYDRATING, RECORD_PHASE_METADATA), RECORD_PHASE_METADATA),
                WAIT_PENDING);
        assert_int_equal(verdict(rec(RECORD_HYDRATING, RECORD_PHASE_HOT), RECORD_PHASE_METADATA),
                         WAIT_REACHED);
        assert_int_equal(verdict(rec(RECORD_HYDRATING, RECORD_PHASE_HOT), RECORD_PHASE_HOT),
                         WAIT_PENDING);
        assert_int_equal(verdict(rec(RECORD_PAUSED, RECORD_PHASE_USED), RECORD_PHASE_HOT),
                         WAIT_REACHED);
        assert_int_equal(verdict(rec(RECORD_HYDRATING, RECORD_PHASE_USED), RECORD_PHASE_USED),
                         WAIT_PENDING);
        assert_int_equal(verdict(rec(RECORD_HYDRATING, RECORD_PHASE_FREE), RECORD_PHASE_USED),
                         WAIT_REACHED);
        assert_int_equal(verdict(rec(RECORD_HYDRATING, RECORD_PHASE_FREE), RECORD_PHASE_DONE),
                         WAIT_PENDING);
        assert_int_equal(verdict(rec(RECORD_COMPLETED, RECORD_PHASE_DONE), RECORD_PHASE_DONE),
                         WAIT_REACHED);
        /* a stopped run keeps what it reached, and resumes for the rest */
        assert_int_equal(verdict(rec(RECORD_STOPPED, RECORD_PHASE_USED), RECORD_PHASE_HOT),
                         WAIT_REACHED);
        assert_int_equal(verdict(rec(RECORD_STOPPED, RECORD_PHASE_USED), RECORD_PHASE_DONE),
                         WAIT_PENDING);
        /* ended short */
        assert_int_equal(verdict(rec(RECORD_FAILED, RECORD_PHASE_HOT), RECORD_PHASE_HOT),
                         WAIT_SHORT);
        assert_int_equal(verdict(rec(RECORD_FAILED, RECORD_PHASE_FREE), RECORD_PHASE_HOT),
                         WAIT_REACHED); /* hot paths were read before it failed */
        assert_int_equal(
                verdict(rec(RECORD_DISABLED, RECORD_PHASE_METADATA), RECORD_PHASE_METADATA),
                WAIT_SHORT);
        /* Mode=used: "used" at its end, never "complete" */
        r = rec(RECORD_COMPLETED, RECORD_PHASE_DONE);
        r.free_space_cold = true;
        assert_int_equal(verdict(r, RECORD_PHASE_USED), WAIT_REACHED);
        assert_int_equal(verdict(r, RECORD_PHASE_DONE), WAIT_SHORT);
        /* without a file-system-aware plan, only the whole device tells metadata is read */
        r = rec(RECORD_HYDRATING, RECORD_PHASE_USED);
        r.fs_aware = false;
        assert_int_equal(verdict(r, RECORD_PHASE_METADATA), WAIT_PENDING);
        assert_int_equal(verdict(r, RECORD_PHASE_HOT), WAIT_PENDING);
        r.phase = RECORD_PHASE_DONE;
        assert_int_equal(verdict(r, RECORD_PHASE_METADATA), WAIT_REACHED);
}

static void test_options(void **state) {
        RecordPhase p;
        uint64_t t;

        (void)state;
        assert_int_equal(wait_phase_from_string("metadata", &p), 0);
        assert_int_equal(p, RECORD_PHASE_METADATA);
        assert_int_equal(wait_phase_from_string("hot", &p), 0);
        assert_int_equal(p, RECORD_PHASE_HOT);
        assert_int_equal(wait_phase_from_string("hot-paths", &p), 0);
        assert_int_equal(wait_phase_from_string("used", &p), 0);
        assert_int_equal(p, RECORD_PHASE_USED);
        assert_int_equal(wait_phase_from_string("complete", &p), 0);
        assert_int_equal(p, RECORD_PHASE_DONE);
        assert_int_equal(wait_phase_from_string("free", &p), -EINVAL);
        assert_int_equal(wait_phase_from_string("done", &p), -EINVAL);
        assert_int_equal(wait_phase_from_string("", &p), -EINVAL);

        assert_int_equal(wait_parse_timeout("30", &t), 0);
        assert_int_equal(t, 30 * USEC_PER_SEC);
        assert_int_equal(wait_parse_timeout("250ms", &t), 0);
        assert_int_equal(t, 250 * USEC_PER_MSEC);
        assert_int_equal(wait_parse_timeout("10min", &t), 0);
        assert_int_equal(t, 600 * USEC_PER_SEC);
        assert_int_equal(wait_parse_timeout("2h", &t), 0);
        assert_int_equal(t, 7200 * USEC_PER_SEC);
        assert_int_equal(wait_parse_timeout("0", &t), 0);
        assert_int_equal(t, 0);
        assert_int_equal(wait_parse_timeout("infinity", &t), 0);
        assert_int_equal(t, UINT64_MAX);
        assert_int_equal(wait_parse_timeout("", &t), -EINVAL);
        assert_int_equal(wait_parse_timeout("-1", &t), -EINVAL);
        assert_int_equal(wait_parse_timeout("1.5s", &t), -EINVAL);
        assert_int_equal(wait_parse_timeout("5 s", &t), -EINVAL);
        assert_int_equal(wait_parse_timeout("3y", &t), -EINVAL);
        assert_int_equal(wait_parse_timeout("99999999999999999999", &t), -EINVAL);
        assert_int_equal(wait_parse_timeout("999999999999999d", &t), -EINVAL); /* overflow */
}

static void test_names(void **state) {
        VolumeRecord r = rec(RECORD_HYDRATING, RECORD_PHASE_USED);

        (void)state;
        assert_true(wait_name_matches(&r, "vol-1"));
        assert_true(wait_name_matches(&r, "nvme1n1"));
        assert_true(wait_name_matches(&r, "sdf"));
        assert_true(wait_name_matches(&r, "xvdf"));
        assert_true(wait_name_matches(&r, "/dev/sdf"));
        assert_true(wait_name_matches(&r, "/dev/xvdf"));
        assert_false(wait_name_matches(&r, "sdg"));
        assert_false(wait_name_matches(&r, "vol-2"));
        assert_false(wait_name_matches(&r, "nvme1n"));
        assert_false(wait_name_matches(&r, "df"));
        /* /dev/ and a kernel name: the disk, waited for before it exists (issue 23) */
        assert_true(wait_name_matches(&r, "/dev/nvme1n1"));
        assert_false(wait_name_matches(&r, "/dev/nvme2n1"));
        assert_false(wait_name_matches(&r, "/dev/vol-1"));
        r.device_name[0] = '\0'; /* a volume without a mapping name matches no mapping name */
        assert_false(wait_name_matches(&r, ""));
        assert_false(wait_name_matches(&r, "sdf"));
}

static char *runtime_dir;

static int setup(void **state) {
        (void)state;
        runtime_dir = fixture_tmpdir("test-wait");
        return runtime_dir ? 0 : -1;
}

static int teardown(void **state) {
        (void)state;
        rm_rf(runtime_dir);
        free(runtime_dir);
        return 0;
}

static void put(const char *key, RecordState s, RecordPhase p) {
        VolumeRecord r = rec(s, p);
        _cleanup_close_ int fd = open(runtime_dir, O_RDONLY | O_DIRECTORY);

        snprintf(r.volume_id, sizeof(r.volume_id), "%s", key);
        assert_true(fd >= 0);
        assert_int_equal(record_save(fd, &r), 0);
}

static int wait_for(RecordPhase phase, uint64_t timeout_usec, const char *target) {
        WaitOptions o = {
                .phase = phase,
                .timeout_usec = timeout_usec,
                .runtime_dir = runtime_dir,
                .state_dir = "/nonexistent",
        };
        char *targets[] = {(char *)target};

        return ctl_wait(&o, targets, 1);
}

static void test_wait_at_once(void **state) {
        (void)state;
        put("vol-done", RECORD_COMPLETED, RECORD_PHASE_DONE);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, UINT64_MAX, "vol-done"), 0);
        put("vol-bad", RECORD_FAILED, RECORD_PHASE_USED);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, UINT64_MAX, "vol-bad"),
                         EBS_HYDRATE_EXIT_WAIT_SHORT);
        assert_int_equal(wait_for(RECORD_PHASE_HOT, UINT64_MAX, "vol-bad"), 0);
}

static void test_wait_timeout_and_unknown(void **state) {
        (void)state;
        put("vol-slow", RECORD_HYDRATING, RECORD_PHASE_USED);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 0, "vol-slow"), EBS_HYDRATE_EXIT_WAIT_TIMEOUT);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 200 * USEC_PER_MSEC, "vol-slow"),
                         EBS_HYDRATE_EXIT_WAIT_TIMEOUT);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 0, "vol-never"),
                         EBS_HYDRATE_EXIT_WAIT_UNKNOWN);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, UINT64_MAX, ""), EBS_HYDRATE_EXIT_USAGE);
        /* a path no volume can hold is unknown at once, whatever the timeout */
        assert_int_equal(wait_for(RECORD_PHASE_DONE, UINT64_MAX, "/proc/self"),
                         EBS_HYDRATE_EXIT_WAIT_UNKNOWN);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, UINT64_MAX, "/no/such/path"),
                         EBS_HYDRATE_EXIT_WAIT_UNKNOWN);
}

/* A record that appears, then changes, while ctl_wait() waits (as a daemon started after it
 * would write them): seen through inotify, long before the 30 s timeout. */
static void test_wait_follows_changes(void **state) {
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        int status;
        pid_t pid;

        (void)state;
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                usleep(200 * 1000);
                put("vol-late", RECORD_HYDRATING, RECORD_PHASE_METADATA);
                usleep(200 * 1000);
                put("vol-late", RECORD_STOPPED, RECORD_PHASE_HOT); /* stopped, then resumed */
                usleep(200 * 1000);
                put("vol-late", RECORD_HYDRATING, RECORD_PHASE_FREE);
                _exit(0);
        }
        assert_int_equal(wait_for(RECORD_PHASE_USED, 30 * USEC_PER_SEC, "sdf"), 0);
        assert_true(now_usec(CLOCK_MONOTONIC) - start >= 550 * USEC_PER_MSEC);
        assert_true(now_usec(CLOCK_MONOTONIC) - start < 20 * USEC_PER_SEC);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The runtime directory itself appears later (a daemon not yet started since boot). */
static void test_wait_directory_appears(void **state) {
        _cleanup_free_ char *later = NULL;
        WaitOptions o = {.phase = RECORD_PHASE_DONE, .timeout_usec = 30 * USEC_PER_SEC};
        char *targets[] = {"vol-d"};
        int status;
        pid_t pid;

        (void)state;
        assert_true(asprintf(&later, "%s/later", runtime_dir) > 0);
        o.runtime_dir = later;
        o.state_dir = "/nonexistent";
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                _cleanup_close_ int fd = -1;
                VolumeRecord r = rec(RECORD_COMPLETED, RECORD_PHASE_DONE);

                usleep(200 * 1000);
                strcpy(r.volume_id, "vol-d");
                if (mkdir(later, 0755) < 0)
                        _exit(1);
                fd = open(later, O_RDONLY | O_DIRECTORY);
                _exit(fd >= 0 && record_save(fd, &r) == 0 ? 0 : 1);
        }
        assert_int_equal(ctl_wait(&o, targets, 1), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The runtime directory removed and made again under a waiter (an administrator's rm -rf, a
 * systemctl clean): the new one is watched through its parent, and its records are seen. */
static void test_wait_directory_replaced(void **state) {
        int status;
        pid_t pid;

        (void)state;
        put("vol-r", RECORD_HYDRATING, RECORD_PHASE_USED);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                usleep(300 * 1000);
                if (rm_rf(runtime_dir) < 0 || mkdir(runtime_dir, 0755) < 0)
                        _exit(1);
                usleep(300 * 1000);
                put("vol-r", RECORD_COMPLETED, RECORD_PHASE_DONE);
                _exit(0);
        }
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 20 * USEC_PER_SEC, "vol-r"), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Records anyone could have written are not believed. */
static void test_wait_untrusted(void **state) {
        char path[512];

        (void)state;
        put("vol-t", RECORD_COMPLETED, RECORD_PHASE_DONE);
        assert_int_equal(chmod(runtime_dir, 0777), 0);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 0, "vol-t"), EXIT_FAILURE);
        /* sticky (as /tmp): the directory may be shared, a record must be its owner's or root's */
        assert_int_equal(chmod(runtime_dir, 01777), 0);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 0, "vol-t"), 0);
        snprintf(path, sizeof(path), "%s/vol-t.record", runtime_dir);
        if (geteuid() == 0) {
                assert_int_equal(chown(path, 65534, 65534), 0);
                assert_int_equal(wait_for(RECORD_PHASE_DONE, 0, "vol-t"),
                                 EBS_HYDRATE_EXIT_WAIT_UNKNOWN);
        }
        assert_int_equal(chmod(runtime_dir, 0755), 0);
        assert_int_equal(unlink(path), 0);
}

/* A record left by a volume once attached under the same kernel name: not this attachment's
 * (the disk's sequence number in sysfs differs), so it does not answer for the name, while its
 * own volume id still finds it. */
static void test_wait_stale_kernel_name(void **state) {
        _cleanup_free_ char *sys = fixture_tmpdir("test-wait-sys");
        _cleanup_close_ int fd = open(runtime_dir, O_RDONLY | O_DIRECTORY);
        VolumeRecord old = rec(RECORD_COMPLETED, RECORD_PHASE_DONE), now;

        (void)state;
        assert_non_null(sys);
        fixture_write(sys, "block/nvme7n1/diskseq", "12\n");
        assert_int_equal(setenv("EBS_HYDRATE_SYSFS_ROOT", sys, 1), 0);
        strcpy(old.volume_id, "vol-old");
        strcpy(old.kernel_name, "nvme7n1");
        strcpy(old.device_name, "sdq");
        old.diskseq = 11;
        assert_int_equal(record_save(fd, &old), 0);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 0, "nvme7n1"), EBS_HYDRATE_EXIT_WAIT_UNKNOWN);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 0, "sdq"), EBS_HYDRATE_EXIT_WAIT_UNKNOWN);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 0, "vol-old"), 0);
        /* the volume attached now, still hydrating */
        now = old;
        strcpy(now.volume_id, "vol-new");
        now.state = RECORD_HYDRATING;
        now.phase = RECORD_PHASE_USED;
        now.diskseq = 12;
        assert_int_equal(record_save(fd, &now), 0);
        assert_int_equal(wait_for(RECORD_PHASE_DONE, 0, "nvme7n1"), EBS_HYDRATE_EXIT_WAIT_TIMEOUT);
        assert_int_equal(wait_for(RECORD_PHASE_USED, 0, "nvme7n1"), EBS_HYDRATE_EXIT_WAIT_TIMEOUT);
        assert_int_equal(wait_for(RECORD_PHASE_HOT, 0, "sdq"), 0);
        /* detached: neither record answers for the name any more */
        fixture_write(sys, "block/nvme7n1/diskseq", "13\n");
        assert_int_equal(wait_for(RECORD_PHASE_HOT, 0, "nvme7n1"), EBS_HYDRATE_EXIT_WAIT_UNKNOWN);
        assert_int_equal(unsetenv("EBS_HYDRATE_SYSFS_ROOT"), 0);
        assert_int_equal(rm_rf(sys), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_verdicts),
                cmocka_unit_test(test_options),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_wait_at_once),
                cmocka_unit_test(test_wait_timeout_and_unknown),
                cmocka_unit_test(test_wait_follows_changes),
                cmocka_unit_test(test_wait_directory_appears),
                cmocka_unit_test(test_wait_directory_replaced),
                cmocka_unit_test(test_wait_untrusted),
                cmocka_unit_test(test_wait_stale_kernel_name),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
