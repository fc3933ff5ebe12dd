/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl's volume records: built from a state file, merged with running instances,
 * filtered by target, and rendered as a table, as JSON (parsed back with json-c) and as
 * Prometheus metrics (escaping, one-hot state and phase).
 */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <ebs-hydrate/findings.h>

#include "state.h"
#include "util.h"
#include "volinfo-format.h"
#include "volinfo.h"

#define K UINT64_C(1024)
#define MiB (K * K)
#define GiB (K * MiB)
#define CHUNK (512 * K)

/* A volume that is running, as ctl-bus.c would build it from the bus. */
static VolumeInfo running_volume(const char *id, const char *kernel_name, const char *mapping) {
        char device[64];
        VolumeInfo v;

        snprintf(device, sizeof(device), "/dev/%s", kernel_name);
        assert_int_equal(volume_info_init(&v, id, device, mapping, kernel_name, "hydrating"), 0);
        v.size_bytes = 10 * GiB;
        v.hydrated_bytes = 4 * GiB + 210 * MiB;
        v.rate_bytes_per_second = 187 * MiB;
        v.eta_seconds = 32;
        v.running = true;
        free(v.phase);
        v.phase = strdup("used");
        assert_non_null(v.phase);
        assert_int_equal(volume_info_add_phase(&v, "metadata", 64 * MiB, 64 * MiB), 0);
        assert_int_equal(
                volume_info_add_phase(&v, "used", 4 * GiB + 146 * MiB, 10 * GiB - 64 * MiB), 0);
        return v;
}

/* A volume with a state file only: 10 chunks, 4 read, one unreadable range. */
static VolumeInfo stored_volume(const char *id, bool complete) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        VolumeInfo v;

        assert_int_equal(state_new(&s, id, 10 * CHUNK, 4096, CHUNK), 0);
        chunkmap_mark_done(s->map, 0, complete ? 10 : 4);
        if (!complete)
                assert_int_equal(state_add_bad(s, 6 * CHUNK, CHUNK), 0);
        s->complete = complete;
        assert_int_equal(volume_info_from_state(id, s, &v), 0);
        return v;
}

static VolumeList *list_of(VolumeInfo *items, size_t n) {
        VolumeList *l = NULL;

        assert_int_equal(volume_list_new(&l), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(volume_list_add(l, &items[i]), 0);
        return l;
}

/* "@name.state" holding the complete state of @key, as after `cp key.state name.state`. */
static VolumeInfo copied_volume(const char *name, const char *key) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        VolumeInfo v;

        assert_int_equal(state_new(&s, key, 10 * CHUNK, 4096, CHUNK), 0);
        chunkmap_mark_done(s->map, 0, 10);
        assert_int_equal(state_add_bad(s, 6 * CHUNK, CHUNK), 0);
        s->complete = s->used_complete = true;
        assert_int_equal(volume_info_from_state(name, s, &v), 0);
        return v;
}

/* Runs a print function into memory; returns the text (malloc'ed). */
static char *render(int (*print)(FILE *f, const VolumeList *l), const VolumeList *l) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        assert_int_equal(print(f, l), 0);
        assert_int_equal(fclose(f), 0);
        return text;
}

static int print_table_with_legend(FILE *f, const VolumeList *l) {
        return volume_list_print_table(f, l, true);
}

static void test_volinfo_from_state(void **state) {
        VolumeInfo partial = stored_volume("vol-0aaaaaaaaaaaaaaaa", false);
        VolumeInfo done = stored_volume("vol-0bbbbbbbbbbbbbbbb", true);

        assert_string_equal(partial.volume_id, "vol-0aaaaaaaaaaaaaaaa");
        assert_string_equal(partial.state, "stopped");
        assert_false(partial.running);
        assert_string_equal(partial.device, "");
        assert_int_equal(partial.size_bytes, 10 * CHUNK);
        assert_int_equal(partial.hydrated_bytes, 4 * CHUNK);
        assert_int_equal(partial.error_count, 1);
        assert_int_equal(partial.rate_bytes_per_second, 0);
        assert_int_equal(volume_info_permille(&partial), 400);

        /* Everything but the unreadable chunk read: finished, with errors. */
        {
                _cleanup_(state_freep) HydrateState *s = NULL;
                VolumeInfo v;

                assert_int_equal(state_new(&s, "vol-0ccccccccccccccccc", 10 * CHUNK, 4096, CHUNK),
                                 0);
                chunkmap_mark_done(s->map, 0, 6);
                chunkmap_mark_done(s->map, 7, 3);
                assert_int_equal(state_add_bad(s, 6 * CHUNK, CHUNK), 0);
                assert_int_equal(volume_info_from_state("vol-0ccccccccccccccccc", s, &v), 0);
                assert_string_equal(v.state, "failed");
                assert_int_equal(v.error_count, 1);
                volume_info_done(&v);
        }

        /* A Mode=used run finished with 3 chunks of free space unread: completed, and said. */
        {
                _cleanup_(state_freep) HydrateState *s = NULL;
                VolumeInfo v;

                assert_int_equal(state_new(&s, "vol-0dddddddddddddddd", 10 * CHUNK, 4096, CHUNK),
                                 0);
                chunkmap_mark_done(s->map, 0, 7);
                s->used_complete = true;
                assert_int_equal(volume_info_from_state("vol-0dddddddddddddddd", s, &v), 0);
                assert_string_equal(v.state, "completed");
                assert_true(v.free_space_cold);
                assert_int_equal(volume_info_permille(&v), 700);
                volume_info_done(&v);
        }

        assert_false(partial.free_space_cold);
        assert_false(done.free_space_cold);
        assert_string_equal(done.state, "completed");
        assert_int_equal(done.hydrated_bytes, 10 * CHUNK);
        assert_int_equal(done.error_count, 0);
        assert_int_equal(volume_info_permille(&done), 1000);
        volume_info_done(&partial);
        volume_info_done(&done);
}

/* The file name says whose state it is: a file holding another key's is neither volume's. */
static void test_volinfo_from_state_mismatched(void **state) {
        VolumeInfo v = copied_volume("b1", "a1");

        assert_string_equal(v.volume_id, "b1");
        assert_string_equal(v.state, "mismatched");
        assert_false(volume_info_has_figures(&v));
        assert_int_equal(v.size_bytes, 0);
        assert_int_equal(v.hydrated_bytes, 0);
        assert_int_equal(v.error_count, 0);
        assert_int_equal(volume_info_permille(&v), 0); /* not 100%, as 0 of 0 bytes would be */
        assert_false(v.free_space_cold);
        assert_false(v.running);
        assert_true(volume_info_matches(&v, "b1", NULL));
        assert_false(volume_info_matches(&v, "a1", NULL));
        volume_info_done(&v);

        v = stored_volume("a1", true);
        assert_true(volume_info_has_figures(&v));
        volume_info_done(&v);
}

static void test_volinfo_permille_rounds_down(void **state) {
        VolumeInfo v = running_volume("vol-0aaaaaaaaaaaaaaaa", "nvme1n1", "sdf");

        v.hydrated_bytes = v.size_bytes - 1; /* 99.99999...%: never shown as 100.0 */
        assert_int_equal(volume_info_permille(&v), 999);
        volume_info_done(&v);
}

static void test_volinfo_running_hides_state_file(void **state) {
        VolumeInfo running[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "sdg")};
        VolumeInfo stored[] = {stored_volume("vol-0bbbbbbbbbbbbbbbb", false),
                               stored_volume("vol-0aaaaaaaaaaaaaaaa", true)};
        _cleanup_(volume_list_freep) VolumeList *l = list_of(running, 1);
        _cleanup_(volume_list_freep) VolumeList *s = list_of(stored, 2);

        assert_int_equal(volume_list_merge(l, s), 0);
        assert_int_equal(s->n, 0);
        volume_list_sort(l);
        assert_int_equal(l->n, 2);
        assert_string_equal(l->items[0].volume_id, "vol-0aaaaaaaaaaaaaaaa");
        assert_false(l->items[0].running);
        assert_string_equal(l->items[1].volume_id, "vol-0bbbbbbbbbbbbbbbb");
        assert_true(l->items[1].running); /* the bus wins over the state file */
        assert_string_equal(l->items[1].state, "hydrating");
}

/* A copy of a running volume's state file under another name is not hidden by it, and only
 * the running instance answers to its key. */
static void test_volinfo_running_keeps_mismatched_file(void **state) {
        VolumeInfo running[] = {running_volume("a1", "nvme2n1", "sdg")};
        VolumeInfo stored[] = {copied_volume("b1", "a1"), stored_volume("a1", true)};
        _cleanup_(volume_list_freep) VolumeList *l = list_of(running, 1);
        _cleanup_(volume_list_freep) VolumeList *s = list_of(stored, 2);

        assert_int_equal(volume_list_merge(l, s), 0);
        volume_list_sort(l);
        assert_int_equal(l->n, 2);
        assert_string_equal(l->items[0].volume_id, "a1");
        assert_true(l->items[0].running);
        assert_string_equal(l->items[1].volume_id, "b1");
        assert_string_equal(l->items[1].state, "mismatched");
        assert_non_null(volume_list_find(l, "b1"));
        assert_int_equal(volume_list_filter(l, "a1", NULL), 1);
        assert_true(l->items[0].running);
}

static void test_volinfo_filter_by_target(void **state) {
        VolumeInfo items[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "sdg"),
                              stored_volume("vol-0aaaaaaaaaaaaaaaa", true)};
        _cleanup_(volume_list_freep) VolumeList *l = list_of(items, 2);
        const VolumeInfo *r = &l->items[0], *s = &l->items[1];

        assert_true(volume_info_matches(r, "vol-0bbbbbbbbbbbbbbbb", NULL));
        assert_true(volume_info_matches(r, "nvme2n1", NULL));
        assert_true(volume_info_matches(r, "/dev/nvme2n1", "/dev/nvme2n1"));
        /* A by-id link, resolved by the caller. */
        assert_true(volume_info_matches(r, "/dev/disk/by-id/nvme-x", "/dev/nvme2n1"));
        assert_false(volume_info_matches(r, "nvme2", NULL));
        assert_false(volume_info_matches(r, "/dev/nvme2n1p1", "/dev/nvme2n1p1"));
        assert_false(volume_info_matches(r, "sdg", NULL)); /* mappings are not unique */
        assert_true(volume_info_matches(s, "vol-0aaaaaaaaaaaaaaaa", NULL));
        /* Not running: no kernel name, so "/dev/" alone or "" names nothing. */
        assert_false(volume_info_matches(s, "", NULL));
        assert_false(volume_info_matches(s, "/dev/", "/dev/"));

        assert_int_equal(volume_list_filter(l, "nvme2n1", NULL), 1);
        assert_string_equal(l->items[0].volume_id, "vol-0bbbbbbbbbbbbbbbb");
        assert_int_equal(volume_list_filter(l, "vol-0aaaaaaaaaaaaaaaa", NULL), 0);
}

static void assert_json_string(struct json_object *o, const char *key, const char *want) {
        struct json_object *v;

        assert_true(json_object_object_get_ex(o, key, &v));
        assert_true(json_object_is_type(v, json_type_string));
        assert_string_equal(json_object_get_string(v), want);
}

static void assert_json_uint(struct json_object *o, const char *key, uint64_t want) {
        struct json_object *v;

        assert_true(json_object_object_get_ex(o, key, &v));
        assert_true(json_object_is_type(v, json_type_int));
        assert_int_equal(json_object_get_uint64(v), want);
}

static void test_volinfo_json(void **state) {
        VolumeInfo items[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "sdg"),
                              stored_volume("odd\"key\\", false)};
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        _cleanup_free_ char *text = NULL;

        /* AWS initializes the first at a provisioned rate; of the second it said nothing. */
        (void)snprintf(items[0].aws, sizeof(items[0].aws), "%s", EBS_HYDRATE_AWS_INITIALIZING);
        (void)snprintf(items[0].aws_snapshot_id, sizeof(items[0].aws_snapshot_id), "snap-0abc");
        items[0].aws_progress = 42;
        l = list_of(items, 2);
        text = render(volume_list_print_json, l);
        struct json_object *root = json_tokener_parse(text), *volumes, *v, *x;

        assert_non_null(root);
        assert_int_equal(json_object_object_length(root), 1);
        assert_true(json_object_object_get_ex(root, "volumes", &volumes));
        assert_int_equal(json_object_array_length(volumes), 2);

        v = json_object_array_get_idx(volumes, 0);
        assert_int_equal(json_object_object_length(v), 17);
        assert_true(json_object_object_get_ex(v, "aws", &x));
        assert_json_string(x, "verdict", "initializing");
        assert_json_string(x, "snapshot_id", "snap-0abc");
        assert_json_uint(x, "initialization_percent", 42);
        assert_true(json_object_object_get_ex(x, "initialization_eta_seconds", &x));
        assert_null(x); /* unknown: null, not 0 */
        assert_json_string(v, "phase", "used");
        assert_true(json_object_object_get_ex(v, "phases", &x));
        assert_int_equal(json_object_array_length(x), 2);
        assert_json_string(json_object_array_get_idx(x, 0), "name", "metadata");
        assert_json_uint(json_object_array_get_idx(x, 0), "done_bytes", 64 * MiB);
        assert_json_uint(json_object_array_get_idx(x, 1), "total_bytes", 10 * GiB - 64 * MiB);
        assert_json_string(v, "volume_id", "vol-0bbbbbbbbbbbbbbbb");
        assert_json_string(v, "device", "/dev/nvme2n1");
        assert_json_string(v, "device_name", "sdg");
        assert_json_string(v, "state", "hydrating");
        assert_json_uint(v, "size_bytes", 10 * GiB);
        assert_json_uint(v, "hydrated_bytes", 4 * GiB + 210 * MiB);
        assert_json_uint(v, "rate_bytes_per_second", 187 * MiB);
        assert_json_uint(v, "eta_seconds", 32);
        assert_json_uint(v, "error_count", 0);
        assert_true(json_object_object_get_ex(v, "percent", &x));
        assert_true(json_object_is_type(x, json_type_double));
        assert_float_equal(json_object_get_double(x), 42.0, 1e-9);
        assert_true(json_object_object_get_ex(v, "running", &x));
        assert_true(json_object_is_type(x, json_type_boolean));
        assert_true(json_object_get_boolean(x));
        assert_true(json_object_object_get_ex(v, "free_space_cold", &x));
        assert_true(json_object_is_type(x, json_type_boolean));
        assert_false(json_object_get_boolean(x));

        v = json_object_array_get_idx(volumes, 1);
        assert_json_string(v, "volume_id", "odd\"key\\");
        assert_true(json_object_object_get_ex(v, "aws", &x));
        assert_null(x);
        assert_json_string(v, "device", "");
        assert_json_string(v, "state", "stopped");
        assert_false(json_object_object_get_ex(v, "phases", NULL)); /* known only when running */
        assert_json_uint(v, "rate_bytes_per_second", 0);
        assert_json_uint(v, "eta_seconds", 0);
        assert_json_uint(v, "error_count", 1);
        assert_true(json_object_object_get_ex(v, "running", &x));
        assert_false(json_object_get_boolean(x));
        assert_true(json_object_object_get_ex(v, "free_space_cold", &x));
        assert_false(json_object_get_boolean(x));
        /* One decimal, as on the table, not 40.000000000000001. */
        assert_non_null(strstr(text, "\"percent\":40.0,"));
        assert_non_null(strstr(text, "\"device\":\"/dev/nvme2n1\"")); /* no "\/" */
        json_object_put(root);
}

static void test_volinfo_json_empty(void **state) {
        _cleanup_(volume_list_freep) VolumeList *l = list_of(NULL, 0);
        _cleanup_free_ char *text = render(volume_list_print_json, l);

        assert_string_equal(text, "{\"volumes\":[]}\n");
}

/* The lines of @text that start with @prefix, joined. */
static char *lines_starting(const char *text, const char *prefix) {
        char *out = calloc(1, strlen(text) + 1);
        const char *line = text;

        assert_non_null(out);
        while (*line) {
                size_t n = strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n');

                if (strncmp(line, prefix, strlen(prefix)) == 0)
                        strncat(out, line, n);
                line += n;
        }
        return out;
}

static void test_volinfo_metrics(void **state) {
        VolumeInfo items[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "sdg"),
                              stored_volume("vol-0aaaaaaaaaaaaaaaa", false)};
        _cleanup_(volume_list_freep) VolumeList *l = list_of(items, 2);
        _cleanup_free_ char *text = render(volume_list_print_metrics, l);
        _cleanup_free_ char *state_lines = lines_starting(text, "ebs_hydrate_volume_state{");
        _cleanup_free_ char *running = lines_starting(text, "ebs_hydrate_volume_running{");
        _cleanup_free_ char *help = lines_starting(text, "# HELP ebs_hydrate_volume_size_bytes ");
        _cleanup_free_ char *type = lines_starting(text, "# TYPE ebs_hydrate_volume_errors ");

        assert_string_equal(type, "# TYPE ebs_hydrate_volume_errors gauge\n");
        assert_non_null(strstr(help, "# HELP ebs_hydrate_volume_size_bytes "));
        assert_null(strstr(help + 1, "# HELP")); /* once, not once per volume */
        assert_non_null(strstr(
                text, "ebs_hydrate_volume_hydrated_bytes{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                      "device=\"/dev/nvme2n1\",device_name=\"sdg\"} 4515168256\n"));
        assert_non_null(strstr(text,
                               "ebs_hydrate_volume_errors{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                               "device=\"\",device_name=\"\"} 1\n"));
        assert_string_equal(running,
                            "ebs_hydrate_volume_running{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\"} 1\n"
                            "ebs_hydrate_volume_running{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                            "device=\"\",device_name=\"\"} 0\n");
        /* One-hot: six states per volume, exactly one of them 1. */
        assert_string_equal(state_lines,
                            "ebs_hydrate_volume_state{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",state=\"hydrating\"} 1\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",state=\"paused\"} 0\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",state=\"completed\"} 0\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",state=\"failed\"} 0\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",state=\"stopped\"} 0\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",state=\"mismatched\"} 0\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                            "device=\"\",device_name=\"\",state=\"hydrating\"} 0\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                            "device=\"\",device_name=\"\",state=\"paused\"} 0\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                            "device=\"\",device_name=\"\",state=\"completed\"} 0\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                            "device=\"\",device_name=\"\",state=\"failed\"} 0\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                            "device=\"\",device_name=\"\",state=\"stopped\"} 1\n"
                            "ebs_hydrate_volume_state{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                            "device=\"\",device_name=\"\",state=\"mismatched\"} 0\n");
}

/* A mismatched state file: no figures in any rendering, and its own state. */
static void test_volinfo_mismatched_output(void **state) {
        VolumeInfo items[] = {copied_volume("b1", "a1"), stored_volume("a1", true)};
        _cleanup_(volume_list_freep) VolumeList *l = list_of(items, 2);
        _cleanup_free_ char *table = NULL, *json = NULL, *metrics = NULL;
        struct json_object *root, *volumes, *v, *x;

        volume_list_sort(l);
        table = render(print_table_with_legend, l);
        assert_string_equal(table, "VOLUME  DEVICE  MAPPING  STATE       HYDRATED     SIZE  RATE  "
                                   "ETA  ERRORS  PHASE\n"
                                   "a1      -       -        completed     100.0%  5.0 MiB     -  "
                                   "  -       0  -\n"
                                   "b1      -       -        mismatched         -        -     -  "
                                   "  -       -  -\n");

        json = render(volume_list_print_json, l);
        root = json_tokener_parse(json);
        assert_non_null(root);
        assert_true(json_object_object_get_ex(root, "volumes", &volumes));
        assert_int_equal(json_object_array_length(volumes), 2);
        v = json_object_array_get_idx(volumes, 1);
        assert_json_string(v, "volume_id", "b1");
        assert_json_string(v, "state", "mismatched");
        assert_json_uint(v, "size_bytes", 0);
        assert_json_uint(v, "hydrated_bytes", 0);
        assert_json_uint(v, "error_count", 0);
        assert_true(json_object_object_get_ex(v, "percent", &x));
        assert_float_equal(json_object_get_double(x), 0.0, 1e-9);
        assert_true(json_object_object_get_ex(v, "free_space_cold", &x));
        assert_false(json_object_get_boolean(x));
        json_object_put(root);

        metrics = render(volume_list_print_metrics, l);
        assert_non_null(strstr(metrics, "ebs_hydrate_volume_hydrated_bytes{volume_id=\"a1\","
                                        "device=\"\",device_name=\"\"} 5242880\n"));
        /* b1: running and state samples only; counted as progress of neither volume. */
        assert_null(strstr(metrics, "_bytes{volume_id=\"b1\""));
        assert_null(strstr(metrics, "_errors{volume_id=\"b1\""));
        assert_null(strstr(metrics, "_eta_seconds{volume_id=\"b1\""));
        assert_non_null(strstr(metrics, "ebs_hydrate_volume_running{volume_id=\"b1\","
                                        "device=\"\",device_name=\"\"} 0\n"));
        assert_non_null(strstr(metrics, "ebs_hydrate_volume_state{volume_id=\"b1\",device=\"\","
                                        "device_name=\"\",state=\"mismatched\"} 1\n"));
        assert_non_null(strstr(metrics, "ebs_hydrate_volume_state{volume_id=\"b1\",device=\"\","
                                        "device_name=\"\",state=\"completed\"} 0\n"));
        assert_non_null(strstr(metrics, "ebs_hydrate_volume_state{volume_id=\"a1\",device=\"\","
                                        "device_name=\"\",state=\"mismatched\"} 0\n"));
}

/* The phase's state set: a running volume's D-Bus Phase, else "done" for a completed volume
 * (Mode=used too) and "unknown" for the rest. */
static void test_volinfo_metrics_phase(void **state) {
        VolumeInfo items[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "sdg"),
                              stored_volume("vol-0aaaaaaaaaaaaaaaa", false),
                              stored_volume("vol-0cccccccccccccccc", true),
                              stored_volume("vol-0dddddddddddddddd", false),
                              running_volume("vol-0eeeeeeeeeeeeeeee", "nvme3n1", ""),
                              copied_volume("b1", "a1")};
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        _cleanup_free_ char *text = NULL, *phase_lines = NULL, *help = NULL, *type = NULL;

        free(items[3].state); /* finished by Mode=used: free space left cold */
        items[3].state = strdup("completed");
        assert_non_null(items[3].state);
        items[3].free_space_cold = true;
        free(items[4].phase); /* an older daemon, or none reported yet */
        items[4].phase = strdup("");
        assert_non_null(items[4].phase);
        assert_string_equal(volume_info_phase(&items[0]), "used");
        assert_string_equal(volume_info_phase(&items[1]), "unknown");
        assert_string_equal(volume_info_phase(&items[2]), "done");
        assert_string_equal(volume_info_phase(&items[3]), "done");
        assert_string_equal(volume_info_phase(&items[4]), "unknown");
        assert_string_equal(volume_info_phase(&items[5]), "unknown");

        l = list_of(items, ELEMENTSOF(items));
        text = render(volume_list_print_metrics, l);
        phase_lines = lines_starting(text, "ebs_hydrate_volume_phase{volume_id=\"vol-0bbb");
        help = lines_starting(text, "# HELP ebs_hydrate_volume_phase ");
        type = lines_starting(text, "# TYPE ebs_hydrate_volume_phase ");
        assert_string_equal(type, "# TYPE ebs_hydrate_volume_phase gauge\n");
        assert_non_null(strstr(help, "# HELP ebs_hydrate_volume_phase "));
        assert_null(strstr(help + 1, "# HELP"));
        assert_string_equal(phase_lines,
                            "ebs_hydrate_volume_phase{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",phase=\"metadata\"} 0\n"
                            "ebs_hydrate_volume_phase{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",phase=\"hot-paths\"} 0\n"
                            "ebs_hydrate_volume_phase{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",phase=\"used\"} 1\n"
                            "ebs_hydrate_volume_phase{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",phase=\"free\"} 0\n"
                            "ebs_hydrate_volume_phase{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",phase=\"done\"} 0\n"
                            "ebs_hydrate_volume_phase{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                            "device=\"/dev/nvme2n1\",device_name=\"sdg\",phase=\"unknown\"} 0\n");
        assert_non_null(strstr(text, "ebs_hydrate_volume_phase{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                                     "device=\"\",device_name=\"\",phase=\"unknown\"} 1\n"));
        assert_non_null(strstr(text, "ebs_hydrate_volume_phase{volume_id=\"vol-0aaaaaaaaaaaaaaaa\","
                                     "device=\"\",device_name=\"\",phase=\"done\"} 0\n"));
        assert_non_null(strstr(text, "ebs_hydrate_volume_phase{volume_id=\"vol-0cccccccccccccccc\","
                                     "device=\"\",device_name=\"\",phase=\"done\"} 1\n"));
        assert_non_null(strstr(text, "ebs_hydrate_volume_phase{volume_id=\"vol-0dddddddddddddddd\","
                                     "device=\"\",device_name=\"\",phase=\"done\"} 1\n"));
        assert_non_null(strstr(text,
                               "ebs_hydrate_volume_phase{volume_id=\"vol-0eeeeeeeeeeeeeeee\","
                               "device=\"/dev/nvme3n1\",device_name=\"\",phase=\"unknown\"} 1\n"));
        /* A mismatched file's contents are another volume's: its phase is not known. */
        assert_non_null(strstr(text, "ebs_hydrate_volume_phase{volume_id=\"b1\",device=\"\","
                                     "device_name=\"\",phase=\"unknown\"} 1\n"));
        assert_non_null(strstr(text, "ebs_hydrate_volume_phase{volume_id=\"b1\",device=\"\","
                                     "device_name=\"\",phase=\"done\"} 0\n"));
        /* Exactly one 1 per volume. */
        for (size_t i = 0; i < l->n; i++) {
                char prefix[128];
                _cleanup_free_ char *mine = NULL;

                snprintf(prefix, sizeof(prefix), "ebs_hydrate_volume_phase{volume_id=\"%s\"",
                         l->items[i].volume_id);
                mine = lines_starting(text, prefix);
                assert_non_null(strstr(mine, "} 1\n"));
                assert_null(strstr(strstr(mine, "} 1\n") + 1, "} 1\n"));
        }
}

static void test_volinfo_metrics_escaping(void **state) {
        VolumeInfo items[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "a\"b\\c\nd")};
        _cleanup_(volume_list_freep) VolumeList *l = list_of(items, 1);
        _cleanup_free_ char *text = NULL;

        free(l->items[0].state);
        l->items[0].state = strdup("resting"); /* from a newer daemon: kept, as 1 */
        free(l->items[0].phase);
        l->items[0].phase = strdup("trim"); /* likewise */
        text = render(volume_list_print_metrics, l);
        assert_non_null(strstr(text, ",phase=\"trim\"} 1\n"));
        assert_non_null(strstr(text, ",phase=\"unknown\"} 0\n"));
        assert_non_null(strstr(text,
                               "ebs_hydrate_volume_size_bytes{volume_id=\"vol-0bbbbbbbbbbbbbbbb\""
                               ",device=\"/dev/nvme2n1\",device_name=\"a\\\"b\\\\c\\nd\"} "
                               "10737418240\n"));
        assert_non_null(strstr(text, ",state=\"resting\"} 1\n"));
        assert_non_null(strstr(text, ",state=\"hydrating\"} 0\n"));
}

static void test_volinfo_table(void **state) {
        VolumeInfo items[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "sdg"),
                              stored_volume("vol-0aaaaaaaaaaaaaaaa", true)};
        _cleanup_(volume_list_freep) VolumeList *l = list_of(items, 2);
        _cleanup_free_ char *text = NULL;

        volume_list_sort(l);
        text = render(print_table_with_legend, l);
        assert_string_equal(text, "VOLUME                 DEVICE        MAPPING  STATE      "
                                  "HYDRATED      SIZE       RATE  ETA  ERRORS  PHASE\n"
                                  "vol-0aaaaaaaaaaaaaaaa  -             -        completed  "
                                  "  100.0%   5.0 MiB          -    -       0  -\n"
                                  "vol-0bbbbbbbbbbbbbbbb  /dev/nvme2n1  sdg      hydrating  "
                                  "   42.0%  10.0 GiB  187 MiB/s  32s       0  used\n");
}

/* A running volume that gives way to a workload: STATE says so; JSON keeps the state and adds
 * "yielding". */
static void test_volinfo_yielding(void **state) {
        VolumeInfo items[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "sdg")};
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        _cleanup_free_ char *text = NULL, *json = NULL;

        items[0].yielding = true;
        l = list_of(items, 1);
        text = render(print_table_with_legend, l);
        assert_non_null(strstr(text, "sdg      yielding  "));
        json = render(volume_list_print_json, l);
        assert_non_null(strstr(json, "\"state\":\"hydrating\""));
        assert_non_null(strstr(json, "\"yielding\":true"));
}

/* Mode=used finished: completed below 100%, and the PHASE column says why; in JSON too. */
static void test_volinfo_used_complete(void **state) {
        VolumeInfo items[] = {stored_volume("vol-0aaaaaaaaaaaaaaaa", false)};
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        _cleanup_free_ char *text = NULL, *json = NULL;

        free(items[0].state);
        items[0].state = strdup("completed");
        assert_non_null(items[0].state);
        items[0].free_space_cold = true;
        l = list_of(items, 1);
        text = render(print_table_with_legend, l);
        assert_string_equal(text, "VOLUME                 DEVICE  MAPPING  STATE      HYDRATED     "
                                  "SIZE  RATE  ETA  ERRORS  PHASE\n"
                                  "vol-0aaaaaaaaaaaaaaaa  -       -        completed     40.0%  "
                                  "5.0 MiB     -    -       1  done (Mode=used)\n");
        json = render(volume_list_print_json, l);
        assert_non_null(strstr(json, "\"state\":\"completed\""));
        assert_non_null(strstr(json, "\"free_space_cold\":true"));
}

/* What AWS said: a column of its own (only when AWS said something of a volume listed), a state
 * set and AWS's progress in the metrics, nothing for a volume AWS said nothing of. */
static void test_volinfo_aws(void **state) {
        VolumeInfo items[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "sdg"),
                              stored_volume("vol-0aaaaaaaaaaaaaaaa", true)};
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        _cleanup_free_ char *text = NULL, *aws = NULL, *percent = NULL;

        (void)snprintf(items[0].aws, sizeof(items[0].aws), "%s", EBS_HYDRATE_AWS_INITIALIZING);
        items[0].aws_progress = 42;
        l = list_of(items, 2);
        volume_list_sort(l);
        text = render(print_table_with_legend, l);
        assert_non_null(strstr(text, "ERRORS  AWS               PHASE\n"));
        assert_non_null(strstr(text, "       0  -                 -\n"));
        assert_non_null(strstr(text, "       0  initializing 42%  used\n"));
        free(text);

        text = render(volume_list_print_metrics, l);
        aws = lines_starting(text, "ebs_hydrate_volume_aws{");
        assert_string_equal(aws, "ebs_hydrate_volume_aws{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                                 "device=\"/dev/nvme2n1\",device_name=\"sdg\",aws=\"empty\"} 0\n"
                                 "ebs_hydrate_volume_aws{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                                 "device=\"/dev/nvme2n1\",device_name=\"sdg\","
                                 "aws=\"fast-restored\"} 0\n"
                                 "ebs_hydrate_volume_aws{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                                 "device=\"/dev/nvme2n1\",device_name=\"sdg\","
                                 "aws=\"initialized\"} 0\n"
                                 "ebs_hydrate_volume_aws{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                                 "device=\"/dev/nvme2n1\",device_name=\"sdg\","
                                 "aws=\"initializing\"} 1\n"
                                 "ebs_hydrate_volume_aws{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                                 "device=\"/dev/nvme2n1\",device_name=\"sdg\","
                                 "aws=\"snapshot\"} 0\n"
                                 "ebs_hydrate_volume_aws{volume_id=\"vol-0bbbbbbbbbbbbbbbb\","
                                 "device=\"/dev/nvme2n1\",device_name=\"sdg\","
                                 "aws=\"unavailable\"} 0\n");
        percent = lines_starting(text, "ebs_hydrate_volume_aws_initialization_percent{");
        assert_string_equal(percent, "ebs_hydrate_volume_aws_initialization_percent{"
                                     "volume_id=\"vol-0bbbbbbbbbbbbbbbb\",device=\"/dev/nvme2n1\","
                                     "device_name=\"sdg\"} 42\n");
}

static void test_volinfo_table_paused_and_empty(void **state) {
        VolumeInfo items[] = {running_volume("vol-0bbbbbbbbbbbbbbbb", "nvme2n1", "")};
        _cleanup_(volume_list_freep) VolumeList *l = list_of(items, 1);
        _cleanup_(volume_list_freep) VolumeList *empty = list_of(NULL, 0);
        _cleanup_free_ char *text = NULL, *none = NULL;
        char buf[256] = "";
        FILE *f;

        free(l->items[0].state);
        l->items[0].state = strdup("paused");
        text = render(print_table_with_legend, l);
        /* Paused: no rate, no ETA, whatever the last figures were; no mapping known. */
        assert_non_null(strstr(text, "vol-0bbbbbbbbbbbbbbbb  /dev/nvme2n1  -        paused  "));
        assert_non_null(strstr(text, "  -    -       0  used\n"));
        none = render(print_table_with_legend, empty);
        assert_string_equal(none, "No volumes.\n");
        f = fmemopen(buf, sizeof(buf), "w");
        assert_non_null(f);
        assert_int_equal(volume_list_print_table(f, empty, false), 0);
        assert_int_equal(volume_list_print_table(f, l, false), 0);
        fclose(f);
        /* Without the legend: no header, no "No volumes.", columns fitted to the data. */
        assert_string_equal(buf, "vol-0bbbbbbbbbbbbbbbb  /dev/nvme2n1  -  paused  42.0%  10.0 GiB"
                                 "  -  -  0  used\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_volinfo_from_state),
                cmocka_unit_test(test_volinfo_from_state_mismatched),
                cmocka_unit_test(test_volinfo_permille_rounds_down),
                cmocka_unit_test(test_volinfo_running_hides_state_file),
                cmocka_unit_test(test_volinfo_running_keeps_mismatched_file),
                cmocka_unit_test(test_volinfo_filter_by_target),
                cmocka_unit_test(test_volinfo_json),
                cmocka_unit_test(test_volinfo_json_empty),
                cmocka_unit_test(test_volinfo_metrics),
                cmocka_unit_test(test_volinfo_metrics_escaping),
                cmocka_unit_test(test_volinfo_metrics_phase),
                cmocka_unit_test(test_volinfo_mismatched_output),
                cmocka_unit_test(test_volinfo_table),
                cmocka_unit_test(test_volinfo_aws),
                cmocka_unit_test(test_volinfo_table_paused_and_empty),
                cmocka_unit_test(test_volinfo_used_complete),
                cmocka_unit_test(test_volinfo_yielding),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
