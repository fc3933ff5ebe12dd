/* SPDX-License-Identifier: MIT */
/* ebs-hydratectl wait: the command line's part; the waiting is ctl-wait.c's. */
#include <stddef.h>
#include <unistd.h>

#include "ctl-verbs.h"
#include "ctl-wait.h"

int verb_wait(const CtlArgs *a, char **args) {
        WaitOptions o = {
                .phase = a->phase,
                .timeout_usec = a->timeout_usec,
                .runtime_dir = a->runtime_dir,
                .state_dir = a->state_dir,
                .progress = isatty(STDERR_FILENO),
        };
        size_t n = 0;

        while (args[n])
                n++;
        return ctl_wait(&o, args, n);
}
