/* SPDX-License-Identifier: MIT */
/*
 * Another process, by its PID: whether it is still the one that wrote something (a volume
 * record names its writer by PID and start time, since a PID is given again), and a descriptor
 * that tells when it exits.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* process_start_time() - @pid's start time (proc(5) /proc/PID/stat field 22, clock ticks after
 * boot; @pid 0 is this process). 0, -ENOENT (no such process, or /proc hides it), -EBADMSG. */
int process_start_time(pid_t pid, uint64_t *ret);

/*
 * process_gone() - has the process @pid, started at @start_time (0: not known), ended? True only
 * when that is known: no process has the PID (ESRCH), or the one that has it started at another
 * time. A process of another user's is there (EPERM); one /proc hides is taken as there.
 */
bool process_gone(pid_t pid, uint64_t start_time);

/* process_pidfd() - a pidfd of @pid (pidfd_open(2), close-on-exec), readable once it exits;
 * -errno (ENOSYS before Linux 5.3, ESRCH when it is gone). */
int process_pidfd(pid_t pid);
