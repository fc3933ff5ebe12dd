/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl's side of the D-Bus interface in docs/design.md: find the running ebs-hydrated
 * instances (one bus name per kernel name), read their properties into VolumeInfo records and
 * call their methods. Quiet, except for an instance it skips for a reason other than vanishing.
 */
#pragma once

#include <systemd/sd-bus.h>

#include <ebs-hydrate/bus.h>
#include "volinfo.h"

/*
 * ctl_bus_kernel_name() - the kernel name a bus name stands for: "nvme1n1" for
 * "org.ebshydrate.Volume1.nvme1n1", or NULL if @bus_name is not an instance's name.
 */
const char *ctl_bus_kernel_name(const char *bus_name);

/*
 * ctl_bus_name() - the bus name of the instance for @kernel_name (malloc'ed into *@ret).
 * Returns 0, -EINVAL if @kernel_name cannot be a bus name element, or -ENOMEM.
 */
int ctl_bus_name(const char *kernel_name, char **ret);

/*
 * ctl_bus_get_volume() - GetAll of the instance for @kernel_name into *@ret (running = true;
 * an unknown ETA becomes 0). Properties this program does not know are ignored.
 * Returns 0; -EBADMSG if a property has the wrong type or VolumeId is missing; another negative
 * errno with *@ret_error set if the call failed.
 */
int ctl_bus_get_volume(sd_bus *bus, const char *kernel_name, VolumeInfo *ret,
                       sd_bus_error *ret_error);

/*
 * ctl_bus_list_volumes() - append every running instance to @l. An instance that goes away
 * between ListNames and GetAll is skipped silently; one that answers with an error or with
 * malformed properties is skipped with a warning. Returns 0, or a negative errno with
 * *@ret_error set if ListNames itself failed.
 */
int ctl_bus_list_volumes(sd_bus *bus, VolumeList *l, sd_bus_error *ret_error);

/*
 * ctl_bus_call() - call @method of the instance for @kernel_name with arguments as in
 * sd_bus_call_method() (@types, then the values). Returns 0 or a negative errno, with the
 * D-Bus error (such as org.freedesktop.DBus.Error.AccessDenied) in *@ret_error.
 */
int ctl_bus_call(sd_bus *bus, const char *kernel_name, const char *method, sd_bus_error *ret_error,
                 const char *types, ...);
