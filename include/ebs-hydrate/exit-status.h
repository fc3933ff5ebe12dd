/* SPDX-License-Identifier: MIT */
/*
 * The exit statuses of the programs, for units (SuccessExitStatus=, RestartPreventExitStatus=)
 * and scripts. ebs-hydrated(8), ebs-hydratectl(1), ebs-hydrate-id(8) and ebs-hydrate-aws(8)
 * describe each.
 */
#ifndef EBS_HYDRATE_EXIT_STATUS_H
#define EBS_HYDRATE_EXIT_STATUS_H

/* Every program. */
#define EBS_HYDRATE_EXIT_SUCCESS 0
#define EBS_HYDRATE_EXIT_FAILURE 1 /* may pass by itself: restarting may help */
#define EBS_HYDRATE_EXIT_USAGE 2   /* bad usage or configuration: waits for a person */

/* ebs-hydrated. */
#define EBS_HYDRATE_EXIT_UNREADABLE 3 /* finished, with ranges that cannot be read */
#define EBS_HYDRATE_EXIT_DETACHED 4   /* the device went away during the run */

/* ebs-hydrate-aws: AWS could not be asked or did not answer; the findings say why. */
#define EBS_HYDRATE_EXIT_UNANSWERED 3

/* ebs-hydratectl, every command. */
#define EBS_HYDRATE_EXIT_NOPERM \
        4 /* not root, or the daemon refused (LSB: insufficient privilege) */

/* ebs-hydratectl wait. */
#define EBS_HYDRATE_EXIT_WAIT_SHORT 3   /* finished without reaching the phase */
#define EBS_HYDRATE_EXIT_WAIT_TIMEOUT 5 /* --timeout passed, every target known */
#define EBS_HYDRATE_EXIT_WAIT_UNKNOWN 6 /* a target that names no volume */

#endif
