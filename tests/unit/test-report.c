/* SPDX-License-Identifier: MIT */
/*
 * Every phrasing of a run (src/daemon/report.c): STATUS= lines in the progress format of
 * docs/design.md with a distinct final word for each way to end, and the summary, the journal
 * record, the bus State and the exit status, which must agree with them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <ebs-hydrate/bus.h>
#include "config.h"
#include "log.h"
#include "report.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static HydratorStatus sample(HydratorPhase phase) {
        return (HydratorStatus){
                .phase = phase,
                .key = "vol-0123456789abcdef0",
                .size = 10 * GiB,
                .done_bytes = 4 * GiB + 210 * MiB,
                .device_size = 10 * GiB,
                .rate = 187 * MiB,
        };
}

/* The snapshot's block list: 60 GiB stored of a 500 GiB volume, 24 GiB of it read. */
static void test_status_listed(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        VolumeRecord r = {};
        char buf[512];

        st.size = 60 * GiB;
        st.done_bytes = 24 * GiB;
        st.device_size = 500 * GiB;
        st.rate = 0;
        st.plan.listed = true;
        st.plan.empty_bytes = st.plan.empty_done = 440 * GiB;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 40.0% hydrated (24.0 GiB of 60.0 GiB "
                                 "stored in the snapshot; 500.0 GiB volume), measuring rate");
        report_record(&st, &r);
        assert_int_equal(r.size_bytes, 500 * GiB);
        assert_int_equal(r.empty_bytes, 440 * GiB);
        assert_int_equal(r.hydrated_bytes, 464 * GiB);
        st.phase = HYDRATOR_COMPLETE;
        st.done_bytes = st.size;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: hydrated (60.0 GiB stored in the "
                                 "snapshot; 500.0 GiB volume)");
        st.run_bytes = 36 * GiB;
        st.run_usec = 100 * UINT64_C(1000000);
        report_summary(buf, sizeof(buf), &st);
        assert_non_null(strstr(buf, "hydrated, read 36.0 GiB in 100.0 s"));
        /* Whole reads around the stored blocks: more than is stored, said apart. */
        st.run_bytes = 61 * GiB;
        report_summary(buf, sizeof(buf), &st);
        assert_null(strstr(buf, " of 60.0 GiB"));
        assert_non_null(strstr(buf, "hydrated, read 61.0 GiB in 100.0 s"));
        assert_non_null(strstr(buf, "; 60.0 GiB stored in the snapshot, the rest of the 500.0 GiB "
                                    "volume left unread (empty)"));
}

static void test_status_hydrating(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[256];

        /* 5934 MiB left at 187 MiB/s: 31.7 s, rounded up. */
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB), "
                                 "187 MiB/s, about 32s left");
}

/* Giving way to a workload: said after the figures, which stay the prefix of docs/design.md. */
static void test_status_yielding(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[256];

        st.yielding = true;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB), "
                                 "187 MiB/s, about 32s left; yielding to other I/O on the volume");
        st.yield_neighbours = true; /* the I/O is on another volume behind the same cap */
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB), "
                                 "187 MiB/s, about 32s left; yielding to other I/O on other "
                                 "volumes");
        st.paused = true; /* paused says paused */
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: paused at 42.0% hydrated (of 10.0 GiB)");
}

/* A file-system-aware plan adds its stages; the format of docs/design.md stays the prefix. */
static void test_status_hydrating_with_plan(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[512];

        st.plan = (PlanProgress){
                .fs_aware = true,
                .current = PLAN_STAGE_HOT,
                .done_bytes = {64 * MiB, 63 * MiB, 1 * GiB, 0},
                .total_bytes = {64 * MiB, 100 * MiB, 8 * GiB, 2 * GiB - 164 * MiB},
        };
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB), "
                                 "187 MiB/s, about 32s left; metadata done, hot paths 63%, "
                                 "used 12%, free space next");

        /* No plan beyond "all used": the line is as before. */
        st.plan = (PlanProgress){.current = PLAN_STAGE_USED, .total_bytes = {0, 0, 10 * GiB, 0}};
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB), "
                                 "187 MiB/s, about 32s left");
}

static void test_status_complete_used_mode(void **state) {
        HydratorStatus st = sample(HYDRATOR_COMPLETE);
        char buf[256];

        st.size = 1012 * MiB;
        st.plan = (PlanProgress){
                .fs_aware = true,
                .skip_free = true,
                .current = _PLAN_STAGE_MAX,
                .done_bytes = {12 * MiB, 0, 300 * MiB, 0},
                .total_bytes = {12 * MiB, 0, 300 * MiB, 700 * MiB},
        };
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: hydrated 312.0 MiB of used blocks; "
                                 "700.0 MiB free space left cold (Mode=used)");
}

static void test_status_paused(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[256];

        st.paused = true;
        st.rate = 0;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: paused at 42.0% hydrated (of 10.0 GiB)");
}

static void test_status_complete(void **state) {
        HydratorStatus st = sample(HYDRATOR_COMPLETE);
        char buf[256];

        st.done_bytes = st.size;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: hydrated (10.0 GiB)");
}

static void test_status_unreadable(void **state) {
        HydratorStatus st = sample(HYDRATOR_UNREADABLE);
        ByteRange bad[2] = {{1048576, 524288}, {8 * MiB, 524288}};
        char buf[256];

        st.bad = bad;
        st.n_bad = 2;
        st.done_bytes = st.size - MiB;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: finished, 99.9% hydrated (of 10.0 GiB); "
                                 "2 unreadable ranges (bytes): 1048576-1572863, 8388608-8912895");
}

/* Many unreadable ranges: the first three, and how many more; never past the buffer. */
static void test_status_unreadable_many(void **state) {
        HydratorStatus st = sample(HYDRATOR_UNREADABLE);
        ByteRange bad[5] = {{0, 512}, {4096, 512}, {8192, 512}, {12288, 512}, {16384, 512}};
        char buf[256], small[48];

        st.bad = bad;
        st.n_bad = 5;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: finished, 42.0% hydrated (of 10.0 GiB); "
                                 "5 unreadable ranges (bytes): 0-511, 4096-4607, 8192-8703 and 2 "
                                 "more");
        memset(small, 'x', sizeof(small));
        report_status(small, sizeof(small), &st);
        assert_int_equal(strlen(small), sizeof(small) - 1);
}

static void test_status_failed_and_stopped(void **state) {
        HydratorStatus st = sample(HYDRATOR_FAILED);
        char buf[256];

        st.error = -ENXIO;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: failed at 42.0% hydrated (of 10.0 GiB): "
                                 "No such device or address; progress saved");
        /* The save failed: never claim otherwise. */
        st.error = -EIO;
        st.unsaved = true;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: failed at 42.0% hydrated (of 10.0 GiB): "
                                 "Input/output error; the state file could not be saved");
        st.unsaved = false;
        st.phase = HYDRATOR_DETACHED;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf,
                            "vol-0123456789abcdef0: device detached at 42.0% hydrated (of 10.0 "
                            "GiB); progress saved, resumes when it is back");
        st.phase = HYDRATOR_STOPPED;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: stopped at 42.0% hydrated (of 10.0 GiB); "
                                 "progress saved");
}

/* A device that holds reads and returns none: the status says so instead of a stale rate. */
static void test_status_stalled(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[256];

        st.rate = 0;
        st.in_flight = 16;
        st.stalled_usec = 12 * UINT64_C(1000000) + 400000;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB); "
                                 "device stalled, no read completed for 12 s");
        /* Stopped while stalled: saved, but the process waits for the device. */
        st.phase = HYDRATOR_STOPPED;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: stopped at 42.0% hydrated (of 10.0 GiB); "
                                 "progress saved; waiting for the stalled device to return 16 "
                                 "reads");
        /* Stopped with reads in flight that are not stuck: the plain word. */
        st.stalled_usec = 0;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: stopped at 42.0% hydrated (of 10.0 GiB); "
                                 "progress saved");
}

/* io_setup() failed with EAGAIN: the status names the sysctl and says it retries. */
static void test_status_waiting_for_aio(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[256];

        st.rate = 0;
        st.waiting_for_aio = true;
        report_status(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (of 10.0 GiB); waiting "
                                 "for asynchronous I/O: fs.aio-max-nr is used up, trying again "
                                 "every 5 s");
}

/* The summary on stdout: how the run ended, in the same words as STATUS= and the journal. */
static void test_report_summary(void **state) {
        HydratorStatus st = sample(HYDRATOR_COMPLETE);
        char buf[512];

        st.run_bytes = 5 * GiB;
        st.run_usec = 50 * UINT64_C(1000000);
        report_summary(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: hydrated, read 5.0 GiB of 10.0 GiB in "
                                 "50.0 s (102 MiB/s average)");
        /* Failed: says why, and never "N% hydrated" when the state could not be saved. */
        st.phase = HYDRATOR_FAILED;
        st.error = -ENOSPC;
        st.unsaved = true;
        report_summary(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: failed after reading 5.0 GiB of 10.0 GiB "
                                 "in 50.0 s (102 MiB/s average): No space left on device; the "
                                 "state file could not be saved, the next run resumes from the "
                                 "last checkpoint written");
        /* The hydrator's -ESTALE: the device changed size, in words, not "Stale file handle". */
        st.error = -ESTALE;
        st.unsaved = false;
        report_summary(buf, sizeof(buf), &st);
        assert_non_null(strstr(buf, ": the device changed size during the run; the next run "
                                    "starts over"));
        report_status(buf, sizeof(buf), &st);
        assert_non_null(strstr(buf, "the device changed size during the run"));
        st.phase = HYDRATOR_STOPPED;
        report_summary(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: stopped after reading 5.0 GiB of 10.0 GiB "
                                 "in 50.0 s (102 MiB/s average), 42.0% hydrated");
}

/* Unreadable ranges: the summary, the journal record and STATUS= name the same ones, the same
 * way (they once listed 8 in one place and 3 in another). */
static void test_report_unreadable_agree(void **state) {
        ByteRange bad[] = {{0, 512}, {4096, 1024}, {1 << 20, 512}, {2 << 20, 512}, {3 << 20, 512}};
        const char *ranges = ": 0-511, 4096-5119, 1048576-1049087 and 2 more";
        HydratorStatus st = sample(HYDRATOR_UNREADABLE);
        const char *id = NULL;
        char buf[512];

        st.bad = bad;
        st.n_bad = 5;
        report_summary(buf, sizeof(buf), &st);
        assert_non_null(strstr(buf, "; 5 unreadable ranges (bytes)"));
        assert_non_null(strstr(buf, ranges));
        assert_int_equal(report_journal(buf, sizeof(buf), &st, "/dev/nvme1n1", &id), LOG_WARNING);
        assert_string_equal(id, LOG_MESSAGE_HYDRATION_UNREADABLE);
        assert_string_equal(buf, "vol-0123456789abcdef0 (/dev/nvme1n1): hydration finished with 5 "
                                 "unreadable ranges (bytes): 0-511, 4096-5119, 1048576-1049087 "
                                 "and 2 more");
        report_status(buf, sizeof(buf), &st);
        assert_non_null(strstr(buf, ranges));
        assert_int_equal(report_exit_status(&st), EBS_HYDRATE_EXIT_UNREADABLE);
        assert_string_equal(report_bus_state(&st), EBS_HYDRATE_STATE_FAILED);
}

/* The journal record, the exit status and the bus State of each way to end. */
static void test_report_journal_exit_and_bus(void **state) {
        HydratorStatus st = sample(HYDRATOR_COMPLETE);
        const char *id = NULL;
        char buf[512];

        assert_int_equal(report_journal(buf, sizeof(buf), &st, "/dev/nvme1n1", &id), LOG_INFO);
        assert_string_equal(id, LOG_MESSAGE_HYDRATION_COMPLETE);
        assert_string_equal(buf, "vol-0123456789abcdef0 (/dev/nvme1n1): hydration complete, all "
                                 "10.0 GiB read");
        assert_int_equal(report_exit_status(&st), EBS_HYDRATE_EXIT_SUCCESS);
        assert_string_equal(report_bus_state(&st), EBS_HYDRATE_STATE_COMPLETED);

        st.phase = HYDRATOR_FAILED;
        st.error = -EIO;
        assert_int_equal(report_journal(buf, sizeof(buf), &st, "/dev/nvme1n1", &id), LOG_ERR);
        assert_string_equal(id, LOG_MESSAGE_HYDRATION_FAILED);
        assert_string_equal(buf, "vol-0123456789abcdef0 (/dev/nvme1n1): hydration failed at "
                                 "42.0%: Input/output error; progress saved");
        assert_int_equal(report_exit_status(&st), EBS_HYDRATE_EXIT_FAILURE);
        assert_string_equal(report_bus_state(&st), EBS_HYDRATE_STATE_FAILED);

        st.phase = HYDRATOR_DETACHED;
        assert_int_equal(report_journal(buf, sizeof(buf), &st, "/dev/nvme1n1", &id), -ENODATA);
        assert_int_equal(report_exit_status(&st), EBS_HYDRATE_EXIT_DETACHED);
        assert_string_equal(report_bus_state(&st), EBS_HYDRATE_STATE_PAUSED);

        st.phase = HYDRATOR_LOADED; /* mapping the file systems */
        st.paused = true;
        assert_string_equal(report_bus_state(&st), EBS_HYDRATE_STATE_PAUSED);
        st.paused = false;
        assert_string_equal(report_bus_state(&st), EBS_HYDRATE_STATE_HYDRATING);
        report_status_mapping(buf, sizeof(buf), &st, 0);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (of 10.0 GiB), mapping the "
                                 "file systems");
        report_status_mapping(buf, sizeof(buf), &st, 11 * UINT64_C(1000000));
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (of 10.0 GiB), mapping the "
                                 "file systems; device stalled, no read completed for 11 s");
}

/* The volume record that ebs-hydratectl wait follows, from each phase of a run. */
static void test_record(void **state) {
        HydratorStatus st = sample(HYDRATOR_LOADED);
        VolumeRecord r = {.volume_id = "kept", .kernel_name = "nvme1n1"};

        (void)state;
        st.plan.current = PLAN_STAGE_USED; /* not planned yet: what a LOADED run says is moot */
        st.plan.fs_aware = true;
        report_record(&st, &r);
        assert_string_equal(r.volume_id, "kept"); /* the identity is the caller's */
        assert_int_equal(r.state, RECORD_HYDRATING);
        assert_int_equal(r.phase, RECORD_PHASE_METADATA);
        assert_true(r.fs_aware);
        assert_int_equal(r.size_bytes, 10 * GiB);
        assert_int_equal(r.hydrated_bytes, 4 * GiB + 210 * MiB);
        st.phase = HYDRATOR_HYDRATING;
        st.plan.current = PLAN_STAGE_HOT;
        st.paused = true;
        report_record(&st, &r);
        assert_int_equal(r.state, RECORD_PAUSED);
        assert_int_equal(r.phase, RECORD_PHASE_HOT);
        st.phase = HYDRATOR_UNREADABLE;
        st.plan.current = PLAN_STAGE_FREE;
        st.n_bad = 3;
        report_record(&st, &r);
        assert_int_equal(r.state, RECORD_FAILED);
        assert_int_equal(r.phase, RECORD_PHASE_FREE);
        assert_int_equal(r.errors, 3);
        st.phase = HYDRATOR_DETACHED;
        report_record(&st, &r);
        assert_int_equal(r.state, RECORD_STOPPED);
        st.phase = HYDRATOR_STOPPED;
        report_record(&st, &r);
        assert_int_equal(r.state, RECORD_STOPPED);
        /* complete: by Mode=used (free space unread), then every block */
        st.phase = HYDRATOR_COMPLETE;
        st.plan.current = _PLAN_STAGE_MAX;
        report_record(&st, &r);
        assert_int_equal(r.state, RECORD_COMPLETED);
        assert_int_equal(r.phase, RECORD_PHASE_DONE);
        assert_true(r.free_space_cold);
        st.done_bytes = st.size;
        report_record(&st, &r);
        assert_false(r.free_space_cold);
        /* a plan that does not know the file systems says so */
        st.plan.fs_aware = false;
        report_record(&st, &r);
        assert_false(r.fs_aware);
}

/* A run that could not start: what may pass by itself is restarted (1), what waits for a person
 * is not (2), so that a unit cannot loop on it. */
static void test_exit_status_errno(void **state) {
        (void)state;
        /* may pass: the unit's Restart= tries again */
        assert_int_equal(report_exit_status_errno(-EIO), EBS_HYDRATE_EXIT_FAILURE);
        assert_int_equal(report_exit_status_errno(-ENOSPC), EBS_HYDRATE_EXIT_FAILURE);
        assert_int_equal(report_exit_status_errno(-EDQUOT), EBS_HYDRATE_EXIT_FAILURE);
        assert_int_equal(report_exit_status_errno(-EROFS), EBS_HYDRATE_EXIT_FAILURE);
        assert_int_equal(report_exit_status_errno(-ENOMEM), EBS_HYDRATE_EXIT_FAILURE);
        assert_int_equal(report_exit_status_errno(-EBUSY),
                         EBS_HYDRATE_EXIT_FAILURE); /* lock held */
        /* waits for a person */
        assert_int_equal(report_exit_status_errno(-EINVAL),
                         EBS_HYDRATE_EXIT_USAGE); /* usage, config */
        assert_int_equal(report_exit_status_errno(-ENOENT), EBS_HYDRATE_EXIT_USAGE);
        assert_int_equal(report_exit_status_errno(-ENOTBLK), EBS_HYDRATE_EXIT_USAGE);
        assert_int_equal(report_exit_status_errno(-ENOTDIR), EBS_HYDRATE_EXIT_USAGE);
        assert_int_equal(report_exit_status_errno(-EACCES), EBS_HYDRATE_EXIT_USAGE);
        assert_int_equal(report_exit_status_errno(-EPERM),
                         EBS_HYDRATE_EXIT_USAGE); /* not our dir */
        assert_int_equal(report_exit_status_errno(-ELOOP), EBS_HYDRATE_EXIT_USAGE);  /* planted */
        assert_int_equal(report_exit_status_errno(-ENOKEY), EBS_HYDRATE_EXIT_USAGE); /* no key */
        assert_int_equal(report_exit_status_errno(-EISDIR), EBS_HYDRATE_EXIT_USAGE);
}

/* The lines the manager logs at the start and the end of the reads, worded here. */
static void test_report_start_and_end_lines(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        HydrateSettings s;
        char buf[REPORT_LINE_MAX];

        hydrate_settings_init(&s);
        st.depth_min = 4;
        st.depth_max = 256;
        st.request_bytes = MiB;
        report_started(buf, sizeof(buf), &st, st.key, "/dev/nvme1n1", &s);
        assert_string_equal(buf, "Hydrating /dev/nvme1n1 (vol-0123456789abcdef0) from 42.0%, "
                                 "queue depth auto (4 to 256), 1024 KiB reads");
        s.queue_depth = 8;
        s.rate_limit = 100 * MiB;
        s.mode = HYDRATE_MODE_USED;
        s.yield = false;
        report_started(buf, sizeof(buf), &st, st.key, "/dev/nvme1n1", &s);
        assert_string_equal(buf, "Hydrating /dev/nvme1n1 (vol-0123456789abcdef0) from 42.0%, "
                                 "queue depth 8, 1024 KiB reads, rate limited, Mode=used, "
                                 "Yield=no");
        report_start_failed(buf, sizeof(buf), &st, st.key, "/dev/nvme1n1", -ENOMEM);
        assert_string_equal(buf, "vol-0123456789abcdef0 (/dev/nvme1n1): hydration failed at "
                                 "42.0%: cannot start: Cannot allocate memory; progress saved");
        report_stopped_mapping(buf, sizeof(buf), st.key, true, false);
        assert_string_equal(buf, "vol-0123456789abcdef0: stopped while mapping the file systems, "
                                 "nothing read");
        report_stopped_mapping(buf, sizeof(buf), st.key, true, true);
        assert_string_equal(buf, "vol-0123456789abcdef0: stopped while mapping the file systems, "
                                 "nothing read; waiting for the stalled device");
        report_stopped_mapping(buf, sizeof(buf), st.key, false, false);
        assert_string_equal(buf, "vol-0123456789abcdef0: stopped while mapping the file systems, "
                                 "before reading; nothing to save");
        st.depth = 29;
        st.depth_changes = 57;
        st.latency_usec = 579700;
        report_depth_at_end(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: queue depth 29 at the end (auto, 57 "
                                 "changes; mean latency 579.7 ms)");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_report_summary),
                cmocka_unit_test(test_report_unreadable_agree),
                cmocka_unit_test(test_report_journal_exit_and_bus),
                cmocka_unit_test(test_status_hydrating),
                cmocka_unit_test(test_status_listed),
                cmocka_unit_test(test_status_yielding),
                cmocka_unit_test(test_status_hydrating_with_plan),
                cmocka_unit_test(test_status_complete_used_mode),
                cmocka_unit_test(test_status_paused),
                cmocka_unit_test(test_status_complete),
                cmocka_unit_test(test_status_unreadable),
                cmocka_unit_test(test_status_unreadable_many),
                cmocka_unit_test(test_status_failed_and_stopped),
                cmocka_unit_test(test_status_stalled),
                cmocka_unit_test(test_status_waiting_for_aio),
                cmocka_unit_test(test_exit_status_errno),
                cmocka_unit_test(test_record),
                cmocka_unit_test(test_report_start_and_end_lines),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
