/* SPDX-License-Identifier: MIT */
/*
 * Other processes by PID (process-util.h): the start time that tells a process from a later one
 * of the same PID, whether one has ended, and a pidfd that says when it does.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "process-util.h"

/* A child that sleeps until killed. */
static pid_t sleeper(void) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        return pid;
}

static void test_process_start_time(void **state) {
        uint64_t self, again, child;
        pid_t pid;

        (void)state;
        assert_int_equal(process_start_time(0, &self), 0);
        assert_int_equal(process_start_time(getpid(), &again), 0);
        assert_true(self > 0 && self == again);
        pid = sleeper();
        assert_int_equal(process_start_time(pid, &child), 0);
        assert_true(child >= self);
        assert_false(process_gone(pid, child));
        assert_false(process_gone(pid, 0));
        assert_true(process_gone(pid, child + 1)); /* another process under that PID */
        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
        assert_true(process_gone(pid, child));
        assert_true(process_gone(pid, 0));
        assert_int_equal(process_start_time(pid, &child), -ENOENT);
        assert_false(process_gone(0, 0)); /* no PID: nothing known */
        assert_int_equal(process_start_time(-1, &child), -EINVAL);
}

static void test_process_pidfd(void **state) {
        struct pollfd p = {.events = POLLIN};
        pid_t pid;
        int fd;

        (void)state;
        pid = sleeper();
        fd = process_pidfd(pid);
        if (fd == -ENOSYS) { /* before Linux 5.3 */
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                skip();
        }
        assert_true(fd >= 0);
        p.fd = fd;
        assert_int_equal(poll(&p, 1, 0), 0); /* running */
        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_int_equal(poll(&p, 1, 10000), 1); /* ended: readable */
        assert_true(p.revents & POLLIN);
        close(fd);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
        assert_int_equal(process_pidfd(pid), -ESRCH);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_process_start_time),
                cmocka_unit_test(test_process_pidfd),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
