/* SPDX-License-Identifier: MIT */
/*
 * Table, JSON and Prometheus renderings of a volume list. JSON goes through json-c, so escaping
 * is not ours to get wrong; the Prometheus text format is simple enough to write directly, with
 * label values escaped as the exposition format requires (backslash, double quote, newline).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "progress.h"
#include "util.h"
#include "volinfo-format.h"

#include <ebs-hydrate/findings.h>
#include <ebs-hydrate/metrics.h>

/* --- table --- */

enum {
        COL_VOLUME,
        COL_DEVICE,
        COL_MAPPING,
        COL_STATE,
        COL_HYDRATED,
        COL_SIZE,
        COL_RATE,
        COL_ETA,
        COL_ERRORS,
        COL_AWS, /* only when AWS said something of a volume listed */
        COL_PHASE,
        N_COLUMNS,
};

static const struct {
        const char *title;
        bool right; /* numbers are right-aligned */
} columns[N_COLUMNS] = {
        [COL_VOLUME] = {"VOLUME", false},    [COL_DEVICE] = {"DEVICE", false},
        [COL_MAPPING] = {"MAPPING", false},  [COL_STATE] = {"STATE", false},
        [COL_HYDRATED] = {"HYDRATED", true}, [COL_SIZE] = {"SIZE", true},
        [COL_RATE] = {"RATE", true},         [COL_ETA] = {"ETA", true},
        [COL_ERRORS] = {"ERRORS", true},     [COL_AWS] = {"AWS", false},
        [COL_PHASE] = {"PHASE", false},
};

typedef struct Row {
        const char *cell[N_COLUMNS];
        char hydrated[FORMAT_PERMILLE_MAX + 1]; /* "42.1%" */
        char size[FORMAT_BYTES_MAX];
        char rate[FORMAT_RATE_MAX];
        char eta[FORMAT_DURATION_MAX];
        char errors[DECIMAL_STR_MAX(uint64_t)];
        char aws[sizeof(((VolumeInfo *)0)->aws) + DECIMAL_STR_MAX(int64_t) + 2];
} Row;

static const char *or_dash(const char *s) {
        return s && s[0] ? s : "-";
}

/* Rate and ETA mean something only while reads are being made. */
static bool volume_moving(const VolumeInfo *v) {
        return v->running && streq_ptr(v->state, VOLUME_STATE_HYDRATING) &&
               v->rate_bytes_per_second > 0 && v->hydrated_bytes < v->size_bytes;
}

static void row_fill(Row *row, const VolumeInfo *v) {
        unsigned pm = volume_info_permille(v);
        char pmb[FORMAT_PERMILLE_MAX];
        bool moving = volume_moving(v), figures = volume_info_has_figures(v);

        (void)snprintf(row->hydrated, sizeof(row->hydrated), "%s%%", format_permille(pmb, pm));
        (void)snprintf(row->errors, sizeof(row->errors), "%" PRIu64, v->error_count);
        row->cell[COL_VOLUME] = or_dash(v->volume_id);
        row->cell[COL_DEVICE] = or_dash(v->device);
        row->cell[COL_MAPPING] = or_dash(v->device_name);
        row->cell[COL_STATE] =
                v->running && v->yielding && streq_ptr(v->state, VOLUME_STATE_HYDRATING)
                        ? "yielding"
                        : or_dash(v->state);
        row->cell[COL_HYDRATED] = figures ? row->hydrated : "-";
        row->cell[COL_SIZE] =
                figures ? format_bytes(row->size, sizeof(row->size), v->size_bytes) : "-";
        row->cell[COL_RATE] =
                moving ? format_rate(row->rate, sizeof(row->rate), v->rate_bytes_per_second) : "-";
        row->cell[COL_ETA] =
                moving ? format_duration(row->eta, sizeof(row->eta), v->eta_seconds) : "-";
        row->cell[COL_ERRORS] = figures ? row->errors : "-";
        row->cell[COL_PHASE] = v->free_space_cold ? "done (Mode=used)" : or_dash(v->phase);
        /* "initializing 42%": AWS's own progress where it gives one */
        if (streq(v->aws, EBS_HYDRATE_AWS_INITIALIZING) && v->aws_progress >= 0)
                (void)snprintf(row->aws, sizeof(row->aws), "%s %" PRId64 "%%", v->aws,
                               v->aws_progress);
        else
                (void)snprintf(row->aws, sizeof(row->aws), "%s", or_dash(v->aws));
        row->cell[COL_AWS] = row->aws;
}

static bool any_aws(const VolumeList *l) {
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].aws[0])
                        return true;
        return false;
}

static void print_cells(FILE *f, const char *const cell[N_COLUMNS], const size_t width[N_COLUMNS],
                        bool aws) {
        for (size_t c = 0; c < N_COLUMNS; c++) {
                const char *sep = c == 0 ? "" : "  ";

                if (c == COL_AWS && !aws)
                        continue;
                if (columns[c].right)
                        fprintf(f, "%s%*s", sep, (int)width[c], cell[c]);
                else if (c + 1 == N_COLUMNS)
                        fprintf(f, "%s%s", sep, cell[c]);
                else
                        fprintf(f, "%s%-*s", sep, (int)width[c], cell[c]);
        }
        fputc('\n', f);
}

int volume_list_print_table(FILE *f, const VolumeList *l, bool legend) {
        const char *titles[N_COLUMNS];
        size_t width[N_COLUMNS];
        bool aws = any_aws(l);
        Row row;

        if (l->n == 0) {
                if (legend)
                        fputs("No volumes.\n", f);
                return ferror(f) ? -EIO : 0;
        }
        for (size_t c = 0; c < N_COLUMNS; c++) {
                titles[c] = columns[c].title;
                width[c] = legend ? strlen(titles[c]) : 0;
        }
        for (size_t i = 0; i < l->n; i++) {
                row_fill(&row, &l->items[i]);
                for (size_t c = 0; c < N_COLUMNS; c++)
                        width[c] = MAX(width[c], strlen(row.cell[c]));
        }
        if (legend)
                print_cells(f, titles, width, aws);
        for (size_t i = 0; i < l->n; i++) {
                row_fill(&row, &l->items[i]);
                print_cells(f, row.cell, width, aws);
        }
        return ferror(f) ? -EIO : 0;
}

/* --- JSON --- */

DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put)

#define _cleanup_json_ _cleanup_(json_object_putp)

/* Adds @value (NULL after a failed allocation) to @o under @key; consumes @value either way. */
static int json_add(struct json_object *o, const char *key, struct json_object *value) {
        if (!value)
                return -ENOMEM;
        if (json_object_object_add(o, key, value) < 0) {
                (void)json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

static int json_add_string(struct json_object *o, const char *key, const char *value) {
        return json_add(o, key, json_object_new_string(strempty(value)));
}

static int json_add_u64(struct json_object *o, const char *key, uint64_t value) {
        return json_add(o, key, json_object_new_uint64(value));
}

static int phases_to_json(const VolumeInfo *v, struct json_object **ret) {
        _cleanup_json_ struct json_object *a = json_object_new_array();

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < v->n_phases; i++) {
                struct json_object *o = json_object_new_object();

                if (!o || json_add_string(o, "name", v->phases[i].name) < 0 ||
                    json_add_u64(o, "done_bytes", v->phases[i].done_bytes) < 0 ||
                    json_add_u64(o, "total_bytes", v->phases[i].total_bytes) < 0 ||
                    json_object_array_add(a, o) < 0) {
                        if (o)
                                (void)json_object_put(o);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(a);
        return 0;
}

/* An int64 that is < 0 when unknown: null then. */
static int json_add_known(struct json_object *o, const char *key, int64_t value) {
        if (value < 0)
                return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
        return json_add(o, key, json_object_new_int64(value));
}

/* "aws": what AWS said of the volume, or null. */
static int aws_to_json(const VolumeInfo *v, struct json_object *parent) {
        struct json_object *o;

        if (!v->aws[0])
                return json_object_object_add(parent, "aws", NULL) < 0 ? -ENOMEM : 0;
        o = json_object_new_object();
        if (json_add(parent, "aws", o) < 0)
                return -ENOMEM;
        if (json_add_string(o, "verdict", v->aws) < 0 ||
            json_add_string(o, "snapshot_id", v->aws_snapshot_id) < 0 ||
            json_add_known(o, "initialization_percent", v->aws_progress) < 0 ||
            json_add_known(o, "initialization_eta_seconds", v->aws_eta_seconds) < 0)
                return -ENOMEM;
        return 0;
}

static int volume_to_json(const VolumeInfo *v, struct json_object **ret) {
        _cleanup_json_ struct json_object *o = json_object_new_object();
        unsigned pm = volume_info_permille(v);
        char pmb[FORMAT_PERMILLE_MAX];
        char percent[FORMAT_PERMILLE_MAX + 1];

        if (!o)
                return -ENOMEM;
        /* One decimal, rounded down as on the table: 42.1, not 42.100000000000001. */
        (void)snprintf(percent, sizeof(percent), "%s", format_permille(pmb, pm));
        if (json_add_string(o, "volume_id", v->volume_id) < 0 ||
            json_add_string(o, "device", v->device) < 0 ||
            json_add_string(o, "device_name", v->device_name) < 0 ||
            json_add_string(o, "state", v->state) < 0 ||
            json_add_u64(o, "size_bytes", v->size_bytes) < 0 ||
            json_add_u64(o, "hydrated_bytes", v->hydrated_bytes) < 0 ||
            json_add_u64(o, "empty_bytes", v->empty_bytes) < 0 ||
            json_add(o, "percent", json_object_new_double_s(pm / 10.0, percent)) < 0 ||
            json_add_u64(o, "rate_bytes_per_second", v->rate_bytes_per_second) < 0 ||
            json_add_u64(o, "eta_seconds", v->eta_seconds) < 0 ||
            json_add_u64(o, "error_count", v->error_count) < 0 ||
            json_add(o, "running", json_object_new_boolean(v->running)) < 0 ||
            json_add(o, "free_space_cold", json_object_new_boolean(v->free_space_cold)) < 0 ||
            json_add(o, "yielding", json_object_new_boolean(v->yielding)) < 0 ||
            aws_to_json(v, o) < 0)
                return -ENOMEM;
        if (v->running) { /* what the plan is, only a running daemon knows */
                struct json_object *phases = NULL;

                if (json_add_string(o, "phase", v->phase) < 0 || phases_to_json(v, &phases) < 0 ||
                    json_add(o, "phases", phases) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

int volume_list_print_json(FILE *f, const VolumeList *l) {
        _cleanup_json_ struct json_object *root = json_object_new_object();
        struct json_object *array, *item;
        const char *text;
        int r;

        if (!root)
                return -ENOMEM;
        array = json_object_new_array();
        if (json_add(root, "volumes", array) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                r = volume_to_json(&l->items[i], &item);
                if (r < 0)
                        return r;
                if (json_object_array_add(array, item) < 0) {
                        (void)json_object_put(item);
                        return -ENOMEM;
                }
        }
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                return -ENOMEM;
        fprintf(f, "%s\n", text);
        return ferror(f) ? -EIO : 0;
}

/* --- Prometheus text format --- */

typedef struct Gauge {
        const char *name;
        const char *help;
        uint64_t (*value)(const VolumeInfo *v);
        bool figure; /* no sample for a volume without figures (volume_info_has_figures()) */
} Gauge;

static uint64_t size_value(const VolumeInfo *v) {
        return v->size_bytes;
}

static uint64_t hydrated_value(const VolumeInfo *v) {
        return v->hydrated_bytes;
}

static uint64_t empty_value(const VolumeInfo *v) {
        return v->empty_bytes;
}

static uint64_t rate_value(const VolumeInfo *v) {
        return v->rate_bytes_per_second;
}

static uint64_t eta_value(const VolumeInfo *v) {
        return v->eta_seconds;
}

static uint64_t errors_value(const VolumeInfo *v) {
        return v->error_count;
}

static uint64_t running_value(const VolumeInfo *v) {
        return v->running;
}

static const Gauge gauges[] = {
        {EBS_HYDRATE_METRIC_SIZE_BYTES, "Size of the volume in bytes.", size_value, true},
        {EBS_HYDRATE_METRIC_HYDRATED_BYTES, "Bytes of the volume read at least once.",
         hydrated_value, true},
        {EBS_HYDRATE_METRIC_EMPTY_BYTES,
         "Bytes of the volume its snapshot stores nothing of: never read, counted as hydrated "
         "(0 without the snapshot's block list).",
         empty_value, true},
        {EBS_HYDRATE_METRIC_RATE, "Current hydration rate in bytes per second (0 unless running).",
         rate_value, true},
        {EBS_HYDRATE_METRIC_ETA_SECONDS,
         "Estimated seconds until the volume is hydrated (0 when unknown or not hydrating).",
         eta_value, true},
        {EBS_HYDRATE_METRIC_ERRORS, "Unreadable ranges recorded for the volume.", errors_value,
         true},
        {EBS_HYDRATE_METRIC_RUNNING, "1 if an ebs-hydrated instance is hydrating the volume.",
         running_value, false},
};

/* A state set (OpenMetrics' name for it): one sample per value of @label, 1 for the volume's
 * current value and 0 for the others. */
typedef struct StateSet {
        const char *name;
        const char *help;
        const char *label;
        const char *const *values;
        size_t n_values;
        const char *(*current)(const VolumeInfo *v);
} StateSet;

static const char *const metric_states[] = {
        VOLUME_STATE_HYDRATING, VOLUME_STATE_PAUSED,  VOLUME_STATE_COMPLETED,
        VOLUME_STATE_FAILED,    VOLUME_STATE_STOPPED, VOLUME_STATE_MISMATCHED,
};

static const char *const metric_phases[] = {
        VOLUME_PHASE_METADATA, VOLUME_PHASE_HOT_PATHS, VOLUME_PHASE_USED,
        VOLUME_PHASE_FREE,     VOLUME_PHASE_DONE,      VOLUME_PHASE_UNKNOWN,
};

static const char *state_current(const VolumeInfo *v) {
        return v->state;
}

static const StateSet state_sets[] = {
        {EBS_HYDRATE_METRIC_STATE,
         "State of the volume: 1 for the current state, 0 for the others.",
         EBS_HYDRATE_METRIC_LABEL_STATE, metric_states, ELEMENTSOF(metric_states), state_current},
        {EBS_HYDRATE_METRIC_PHASE,
         "Phase of the hydration plan being read (done at the end, unknown when not running "
         "and not completed): 1 for the current phase, 0 for the others.",
         EBS_HYDRATE_METRIC_LABEL_PHASE, metric_phases, ELEMENTSOF(metric_phases),
         volume_info_phase},
};

static void print_label_value(FILE *f, const char *s) {
        for (s = strempty(s); *s; s++)
                switch (*s) {
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                default:
                        fputc(*s, f);
                }
}

static void print_label(FILE *f, const char *sep, const char *name, const char *value) {
        fprintf(f, "%s%s=\"", sep, name);
        print_label_value(f, value);
        fputc('"', f);
}

/* name{volume_id="...",device="...",device_name="..."[,label="value"]} sample */
static void print_sample(FILE *f, const char *name, const VolumeInfo *v, const char *label,
                         const char *value, uint64_t sample) {
        fputs(name, f);
        print_label(f, "{", EBS_HYDRATE_METRIC_LABEL_VOLUME_ID, v->volume_id);
        print_label(f, ",", EBS_HYDRATE_METRIC_LABEL_DEVICE, v->device);
        print_label(f, ",", EBS_HYDRATE_METRIC_LABEL_DEVICE_NAME, v->device_name);
        if (label)
                print_label(f, ",", label, value);
        fprintf(f, "} %" PRIu64 "\n", sample);
}

static void print_family(FILE *f, const char *name, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static bool state_set_has(const StateSet *set, const char *value) {
        for (size_t i = 0; i < set->n_values; i++)
                if (streq_ptr(value, set->values[i]))
                        return true;
        return false;
}

static void print_state_set(FILE *f, const StateSet *set, const VolumeList *l) {
        print_family(f, set->name, set->help);
        for (size_t i = 0; i < l->n; i++) {
                const VolumeInfo *v = &l->items[i];
                const char *current = set->current(v);

                for (size_t s = 0; s < set->n_values; s++)
                        print_sample(f, set->name, v, set->label, set->values[s],
                                     streq_ptr(current, set->values[s]));
                /* A value from a newer daemon is shown, not lost. */
                if (current && current[0] && !state_set_has(set, current))
                        print_sample(f, set->name, v, set->label, current, 1);
        }
}

static const char *const metric_aws[] = {
        EBS_HYDRATE_AWS_EMPTY,        EBS_HYDRATE_AWS_FAST_RESTORED, EBS_HYDRATE_AWS_INITIALIZED,
        EBS_HYDRATE_AWS_INITIALIZING, EBS_HYDRATE_AWS_SNAPSHOT,      EBS_HYDRATE_AWS_UNAVAILABLE,
};

/* What AWS said: a state set and AWS's own progress, for the volumes it said something of. */
static void print_aws(FILE *f, const VolumeList *l) {
        if (!any_aws(l))
                return;
        print_family(f, EBS_HYDRATE_METRIC_AWS,
                     "What AWS said of the volume (ebs-hydrate-aws): 1 for the current word, 0 "
                     "for the others.");
        for (size_t i = 0; i < l->n; i++) {
                const VolumeInfo *v = &l->items[i];
                bool known = false;

                if (!v->aws[0])
                        continue;
                for (size_t s = 0; s < ELEMENTSOF(metric_aws); s++) {
                        known = known || streq(v->aws, metric_aws[s]);
                        print_sample(f, EBS_HYDRATE_METRIC_AWS, v, EBS_HYDRATE_METRIC_LABEL_AWS,
                                     metric_aws[s], streq(v->aws, metric_aws[s]));
                }
                if (!known)
                        print_sample(f, EBS_HYDRATE_METRIC_AWS, v, EBS_HYDRATE_METRIC_LABEL_AWS,
                                     v->aws, 1);
        }
        print_family(f, EBS_HYDRATE_METRIC_AWS_PROGRESS,
                     "AWS's own initialization of the volume, percent (where AWS gives it).");
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].aws[0] && l->items[i].aws_progress >= 0)
                        print_sample(f, EBS_HYDRATE_METRIC_AWS_PROGRESS, &l->items[i], NULL, NULL,
                                     (uint64_t)l->items[i].aws_progress);
}

int volume_list_print_metrics(FILE *f, const VolumeList *l) {
        for (size_t g = 0; g < ELEMENTSOF(gauges); g++) {
                print_family(f, gauges[g].name, gauges[g].help);
                for (size_t i = 0; i < l->n; i++)
                        if (!gauges[g].figure || volume_info_has_figures(&l->items[i]))
                                print_sample(f, gauges[g].name, &l->items[i], NULL, NULL,
                                             gauges[g].value(&l->items[i]));
        }
        for (size_t s = 0; s < ELEMENTSOF(state_sets); s++)
                print_state_set(f, &state_sets[s], l);
        print_aws(f, l);
        return ferror(f) ? -EIO : 0;
}
