/* SPDX-License-Identifier: MIT */
/*
 * One run of ebs-hydrated, from DEVICE on the command line to the line that says how it ended:
 * the device and its identity, the configuration, the state directory and its lock, the event
 * loop with the hydrator, the D-Bus object, STATUS=, the progress bar and the journal records.
 */
#pragma once

#include "args.h"

/* The signals that stop a run as SIGTERM does (all blocked, for sd-event's signalfd, by
 * manager_block_signals()). */
void manager_block_signals(void);

/*
 * manager_run() - run the hydration @a asks for. Returns the EBS_HYDRATE_EXIT_* the run ended with,
 * or -errno when it could not start (logged: report_exit_status_errno() tells which exit status
 * that is). *@ret_signal is the signal that stopped the run, or 0: the caller dies of it, once
 * everything is saved and freed.
 */
int manager_run(const Args *a, int *ret_signal);
