/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydrated: hydrate one block device in the foreground. The command line is args.c's, the
 * run manager.c's; this maps how the run ended to the exit status: 0 complete, 1 failed,
 * 2 bad usage or configuration, 3 finished with unreadable ranges, 4 the device went away.
 */
#include <signal.h>

#include "args.h"
#include "log.h"
#include "manager.h"
#include "report.h"

/* Die by the signal that stopped the run, as a well-behaved program does, now that progress is
 * saved; returns only if the signal does not kill (it is ignored by a parent's disposition). */
static void die_by_signal(int sig) {
        sigset_t ss;

        sigemptyset(&ss);
        sigaddset(&ss, sig);
        signal(sig, SIG_DFL);
        sigprocmask(SIG_UNBLOCK, &ss, NULL);
        raise(sig);
}

int main(int argc, char *argv[]) {
        Args a = {.progress = PROGRESS_AUTO};
        int r, sig;

        log_setup("ebs-hydrated");
        r = args_parse(argc, argv, &a);
        if (r <= 0)
                return r == 0 ? EBS_HYDRATE_EXIT_SUCCESS : EBS_HYDRATE_EXIT_USAGE;

        /* sd-event takes signals through a signalfd: they must be blocked first. Every signal
         * whose default action ends the process without a core is taken as a stop: a closed SSH
         * session (SIGHUP) or a stray kill -USR1 saves the checkpoint and prints the summary
         * before the process dies of it. A closed or full stdout is not a reason to stop
         * (SIGPIPE), and a file size limit must fail a save, not kill us (SIGXFSZ). */
        manager_block_signals();
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN);

        r = manager_run(&a, &sig);
        if (sig > 0)
                die_by_signal(sig);
        return r >= 0 ? r : report_exit_status_errno(r);
}
