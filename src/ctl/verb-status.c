/* SPDX-License-Identifier: MIT */
/* ebs-hydratectl status: every volume, or the one TARGET names, as a table or JSON. */
#include <errno.h>
#include <stdio.h>

#include "ctl-verbs.h"
#include "log.h"
#include "volinfo-format.h"

int verb_status(const CtlArgs *a, char **args) {
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        int r;

        r = ctl_collect_volumes(a, &l);
        if (r < 0)
                return r;
        if (args[0]) {
                r = ctl_select_volumes(l, args[0], true);
                if (r < 0)
                        return log_error_errno(r, "Out of memory");
                if (r == 0) {
                        log_error("No volume '%s': no running instance has this volume "
                                  "id, kernel name or device, and %s has no state for it",
                                  args[0], a->state_dir);
                        return -ENOENT;
                }
        }
        r = a->json ? volume_list_print_json(stdout, l)
                    : volume_list_print_table(stdout, l, a->legend);
        if (r == -ENOMEM)
                return log_error_errno(r, "Out of memory");
        return ctl_flush_stdout();
}
