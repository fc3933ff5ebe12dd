/* SPDX-License-Identifier: MIT */
/*
 * Volume records for ebs-hydratectl and the list operations on them. A record is built either
 * from a running daemon's properties (ctl-bus.c) or from a state file; this file only moves
 * and compares them, so that merging and target matching are tested without a bus or a disk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "progress.h"
#include "util.h"
#include "volinfo.h"

int volume_info_init(VolumeInfo *ret, const char *volume_id, const char *device,
                     const char *device_name, const char *kernel_name, const char *state) {
        VolumeInfo v = {
                .volume_id = strdup(strempty(volume_id)),
                .device = strdup(strempty(device)),
                .device_name = strdup(strempty(device_name)),
                .kernel_name = strdup(strempty(kernel_name)),
                .state = strdup(strempty(state)),
                .phase = strdup(""),
                .aws_progress = -1,
                .aws_eta_seconds = -1,
        };

        if (!v.volume_id || !v.device || !v.device_name || !v.kernel_name || !v.state || !v.phase) {
                volume_info_done(&v);
                return -ENOMEM;
        }
        *ret = v;
        return 0;
}

void volume_info_done(VolumeInfo *v) {
        free(v->volume_id);
        free(v->device);
        free(v->device_name);
        free(v->kernel_name);
        free(v->state);
        free(v->phase);
        for (size_t i = 0; i < v->n_phases; i++)
                free(v->phases[i].name);
        free(v->phases);
        *v = (VolumeInfo){0};
}

int volume_info_add_phase(VolumeInfo *v, const char *name, uint64_t done_bytes,
                          uint64_t total_bytes) {
        char *copy;

        if (ARRAY_GROW(v->phases, v->n_phases_allocated, v->n_phases + 1) < 0)
                return -ENOMEM;
        copy = strdup(strempty(name));
        if (!copy)
                return -ENOMEM;
        v->phases[v->n_phases++] = (VolumePhase){copy, done_bytes, total_bytes};
        return 0;
}

/* Every chunk either read or recorded unreadable: the run finished, with errors. */
static bool finished_with_errors(const HydrateState *s) {
        uint64_t bad = 0;

        for (size_t i = 0; i < s->n_bad; i++)
                bad += s->bad[i].length;
        return s->n_bad > 0 && chunkmap_done_bytes(s->map) + bad >= s->size;
}

int volume_info_from_state(const char *key, const HydrateState *s, VolumeInfo *ret) {
        bool complete = s->complete || chunkmap_complete(s->map);
        int r;

        if (!streq_ptr(s->key, key))
                return volume_info_init(ret, key, NULL, NULL, NULL, VOLUME_STATE_MISMATCHED);
        r = volume_info_init(ret, key, NULL, NULL, NULL,
                             complete || s->used_complete ? VOLUME_STATE_COMPLETED
                             : finished_with_errors(s)    ? VOLUME_STATE_FAILED
                                                          : VOLUME_STATE_STOPPED);
        if (r < 0)
                return r;
        ret->free_space_cold = !complete && s->used_complete;
        ret->size_bytes = s->size;
        ret->hydrated_bytes = chunkmap_done_bytes(s->map);
        ret->error_count = s->n_bad;
        return 0;
}

bool volume_info_has_figures(const VolumeInfo *v) {
        return !streq_ptr(v->state, VOLUME_STATE_MISMATCHED);
}

const char *volume_info_phase(const VolumeInfo *v) {
        if (v->running)
                return v->phase && v->phase[0] ? v->phase : VOLUME_PHASE_UNKNOWN;
        return streq_ptr(v->state, VOLUME_STATE_COMPLETED) ? VOLUME_PHASE_DONE
                                                           : VOLUME_PHASE_UNKNOWN;
}

unsigned volume_info_permille(const VolumeInfo *v) {
        if (!volume_info_has_figures(v))
                return 0; /* not 1000, as 0 of 0 bytes would be */
        /* of what is to be read: with the snapshot's block list, what it stores */
        if (v->empty_bytes > 0 && v->empty_bytes <= v->hydrated_bytes &&
            v->hydrated_bytes <= v->size_bytes)
                return progress_permille(v->hydrated_bytes - v->empty_bytes,
                                         v->size_bytes - v->empty_bytes);
        return progress_permille(v->hydrated_bytes, v->size_bytes);
}

/* "/dev/nvme1n1" names the kernel name "nvme1n1"; "/dev/disk/..." names none directly. */
static bool path_is_dev_node(const char *path, const char *kernel_name) {
        return strncmp(path, "/dev/", 5) == 0 && strcmp(path + 5, kernel_name) == 0;
}

bool volume_info_matches(const VolumeInfo *v, const char *target, const char *resolved_path) {
        bool has_kernel_name = v->kernel_name && v->kernel_name[0];

        if (streq_ptr(target, v->volume_id))
                return true;
        if (has_kernel_name && streq_ptr(target, v->kernel_name))
                return true;
        if (!resolved_path)
                return false;
        if (v->device && v->device[0] && streq_ptr(resolved_path, v->device))
                return true;
        return has_kernel_name && path_is_dev_node(resolved_path, v->kernel_name);
}

int volume_list_new(VolumeList **ret) {
        VolumeList *l = calloc(1, sizeof(*l));

        if (!l)
                return -ENOMEM;
        *ret = l;
        return 0;
}

VolumeList *volume_list_free(VolumeList *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                volume_info_done(&l->items[i]);
        free(l->items);
        free(l);
        return NULL;
}

int volume_list_add(VolumeList *l, VolumeInfo *v) {
        if (ARRAY_GROW(l->items, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        l->items[l->n++] = *v;
        *v = (VolumeInfo){0};
        return 0;
}

VolumeInfo *volume_list_find(const VolumeList *l, const char *volume_id) {
        for (size_t i = 0; i < l->n; i++)
                if (streq_ptr(l->items[i].volume_id, volume_id))
                        return &l->items[i];
        return NULL;
}

int volume_list_merge(VolumeList *l, VolumeList *stored) {
        int r = 0;

        for (size_t i = 0; i < stored->n; i++) {
                if (r >= 0 && !volume_list_find(l, stored->items[i].volume_id))
                        r = volume_list_add(l, &stored->items[i]);
                volume_info_done(&stored->items[i]);
        }
        stored->n = 0;
        return r;
}

static int compare_volumes(const void *a, const void *b) {
        const VolumeInfo *x = a, *y = b;
        int c = strcmp(strempty(x->volume_id), strempty(y->volume_id));

        return c != 0 ? c : strcmp(strempty(x->kernel_name), strempty(y->kernel_name));
}

void volume_list_sort(VolumeList *l) {
        if (l->n > 1)
                qsort(l->items, l->n, sizeof(*l->items), compare_volumes);
}

size_t volume_list_filter(VolumeList *l, const char *target, const char *resolved_path) {
        size_t kept = 0;

        for (size_t i = 0; i < l->n; i++) {
                if (volume_info_matches(&l->items[i], target, resolved_path))
                        l->items[kept++] = l->items[i];
                else
                        volume_info_done(&l->items[i]);
        }
        l->n = kept;
        return kept;
}
