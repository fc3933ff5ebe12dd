/* SPDX-License-Identifier: MIT */
/*
 * STATUS= lines: the progress format of docs/design.md, and a distinct final word for each way
 * to end.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "status.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static HydratorStatus sample(HydratorPhase phase) {
        return (HydratorStatus){
                .phase = phase,
                .key = "vol-0123456789abcdef0",
                .size = 10 * GiB,
                .done_bytes = 4 * GiB + 210 * MiB,
                .rate = 187 * MiB,
        };
}

static void test_status_hydrating(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[256];

        /* 5934 MiB left at 187 MiB/s: 31.7 s, rounded up. */
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB), "
                                 "187 MiB/s, about 32s left");
}

/* Giving way to a workload: said after the figures, which stay the prefix of docs/design.md. */
static void test_status_yielding(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[256];

        st.yielding = true;
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB), "
                                 "187 MiB/s, about 32s left; yielding to other I/O on the volume");
        st.yield_neighbours = true; /* the I/O is on another volume behind the same cap */
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB), "
                                 "187 MiB/s, about 32s left; yielding to other I/O on other "
                                 "volumes");
        st.paused = true; /* paused says paused */
        status_format(buf, sizeof(buf), &st);
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
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB), "
                                 "187 MiB/s, about 32s left; metadata done, hot paths 63%, "
                                 "used 12%, free space next");

        /* No plan beyond "all used": the line is as before. */
        st.plan = (PlanProgress){.current = PLAN_STAGE_USED, .total_bytes = {0, 0, 10 * GiB, 0}};
        status_format(buf, sizeof(buf), &st);
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
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: hydrated 312.0 MiB of used blocks; "
                                 "700.0 MiB free space left cold (Mode=used)");
}

static void test_status_paused(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[256];

        st.paused = true;
        st.rate = 0;
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: paused at 42.0% hydrated (of 10.0 GiB)");
}

static void test_status_complete(void **state) {
        HydratorStatus st = sample(HYDRATOR_COMPLETE);
        char buf[256];

        st.done_bytes = st.size;
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: hydrated (10.0 GiB)");
}

static void test_status_unreadable(void **state) {
        HydratorStatus st = sample(HYDRATOR_UNREADABLE);
        ByteRange bad[2] = {{1048576, 524288}, {8 * MiB, 524288}};
        char buf[256];

        st.bad = bad;
        st.n_bad = 2;
        st.done_bytes = st.size - MiB;
        status_format(buf, sizeof(buf), &st);
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
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: finished, 42.0% hydrated (of 10.0 GiB); "
                                 "5 unreadable ranges (bytes): 0-511, 4096-4607, 8192-8703 and 2 "
                                 "more");
        memset(small, 'x', sizeof(small));
        status_format(small, sizeof(small), &st);
        assert_int_equal(strlen(small), sizeof(small) - 1);
}

static void test_status_failed_and_stopped(void **state) {
        HydratorStatus st = sample(HYDRATOR_FAILED);
        char buf[256];

        st.error = -ENXIO;
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: failed at 42.0% hydrated (of 10.0 GiB): "
                                 "No such device or address; progress saved");
        /* The save failed: never claim otherwise. */
        st.error = -EIO;
        st.unsaved = true;
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: failed at 42.0% hydrated (of 10.0 GiB): "
                                 "Input/output error; the state file could not be saved");
        st.unsaved = false;
        st.phase = HYDRATOR_DETACHED;
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf,
                            "vol-0123456789abcdef0: device detached at 42.0% hydrated (of 10.0 "
                            "GiB); progress saved, resumes when it is back");
        st.phase = HYDRATOR_STOPPED;
        status_format(buf, sizeof(buf), &st);
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
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (4.2 GiB of 10.0 GiB); "
                                 "device stalled, no read completed for 12 s");
        /* Stopped while stalled: saved, but the process waits for the device. */
        st.phase = HYDRATOR_STOPPED;
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: stopped at 42.0% hydrated (of 10.0 GiB); "
                                 "progress saved; waiting for the stalled device to return 16 "
                                 "reads");
        /* Stopped with reads in flight that are not stuck: the plain word. */
        st.stalled_usec = 0;
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: stopped at 42.0% hydrated (of 10.0 GiB); "
                                 "progress saved");
}

/* io_setup() failed with EAGAIN: the status names the sysctl and says it retries. */
static void test_status_waiting_for_aio(void **state) {
        HydratorStatus st = sample(HYDRATOR_HYDRATING);
        char buf[256];

        st.rate = 0;
        st.waiting_for_aio = true;
        status_format(buf, sizeof(buf), &st);
        assert_string_equal(buf, "vol-0123456789abcdef0: 42.0% hydrated (of 10.0 GiB); waiting "
                                 "for asynchronous I/O: fs.aio-max-nr is used up, trying again "
                                 "every 5 s");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status_hydrating),
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
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
