/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl wait, the pure part (see ctl-wait.h): --phase and --timeout, the names a
 * volume goes by, and whether a volume record says a phase is reached.
 */
#include <errno.h>
#include <string.h>

#include "ctl-wait.h"
#include "parse.h"
#include "string-table.h"
#include "util.h"

/* The phases wait knows, by its names: the record's, but "hot" and "complete". */
static const char *const wait_phase_table[_RECORD_PHASE_MAX] = {
        [RECORD_PHASE_METADATA] = EBS_HYDRATE_PHASE_METADATA,
        [RECORD_PHASE_HOT] = WAIT_PHASE_HOT,
        [RECORD_PHASE_USED] = EBS_HYDRATE_PHASE_USED,
        [RECORD_PHASE_DONE] = WAIT_PHASE_COMPLETE,
};

DEFINE_STRING_TABLE_TO_STRING(wait_phase, RecordPhase)

int wait_phase_from_string(const char *s, RecordPhase *ret) {
        ssize_t p = string_table_lookup(wait_phase_table, ELEMENTSOF(wait_phase_table), s);

        /* On top: the record's own name where wait has a shorter one. */
        if (p < 0 && streq_ptr(s, EBS_HYDRATE_PHASE_HOT_PATHS))
                p = RECORD_PHASE_HOT;
        if (p < 0)
                return -EINVAL;
        *ret = (RecordPhase)p;
        return 0;
}

int wait_parse_timeout(const char *s, uint64_t *ret_usec) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                {"", USEC_PER_SEC},         {"ms", USEC_PER_MSEC},       {"s", USEC_PER_SEC},
                {"sec", USEC_PER_SEC},      {"m", 60 * USEC_PER_SEC},    {"min", 60 * USEC_PER_SEC},
                {"h", 3600 * USEC_PER_SEC}, {"d", 86400 * USEC_PER_SEC},
        };
        char digits[DECIMAL_STR_MAX(uint64_t)];
        size_t n;
        uint64_t v;

        if (!s)
                return -EINVAL;
        if (strcmp(s, "infinity") == 0) {
                *ret_usec = UINT64_MAX;
                return 0;
        }
        n = strspn(s, "0123456789");
        if (n == 0 || n >= sizeof(digits))
                return -EINVAL;
        memcpy(digits, s, n);
        digits[n] = '\0';
        if (parse_unsigned(digits, 0, UINT64_MAX, &v) < 0)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strcmp(s + n, units[i].suffix) == 0) {
                        if (v > (UINT64_MAX - 1) / units[i].usec)
                                return -EINVAL;
                        *ret_usec = v * units[i].usec;
                        return 0;
                }
        return -EINVAL;
}

WaitVerdict wait_verdict(const VolumeRecord *r, RecordPhase phase, const char **ret_why) {
        RecordPhase at = r->phase;
        bool reached;

        *ret_why = NULL;
        if (!r->fs_aware && phase < RECORD_PHASE_USED)
                phase = RECORD_PHASE_USED; /* metadata and hot paths are not known apart */
        if (phase == RECORD_PHASE_DONE)
                reached = r->state == RECORD_COMPLETED && !r->free_space_cold;
        else
                reached = r->state == RECORD_COMPLETED || at > phase;
        if (reached)
                return WAIT_REACHED;
        switch (r->state) {
        case RECORD_FAILED:
                *ret_why = r->errors > 0 ? "finished with unreadable ranges" : "failed";
                return WAIT_SHORT;
        case RECORD_DISABLED:
                *ret_why = "hydration disabled by configuration (Enabled=no)";
                return WAIT_SHORT;
        case RECORD_COMPLETED: /* only Mode=used stops short of complete */
                *ret_why = "completed by a Mode=used run: free space stays cold";
                return WAIT_SHORT;
        default:
                return WAIT_PENDING;
        }
}

/* "/dev/sdf", "xvdf" and "sdf" are one mapping name. */
static const char *mapping_name(const char *s) {
        if (strncmp(s, "/dev/", 5) == 0)
                s += 5;
        return s;
}

static bool mapping_names_equal(const char *a, const char *b) {
        a = mapping_name(a);
        b = mapping_name(b);
        if (strncmp(a, "xvd", 3) == 0)
                a += 2; /* "xvdf" -> "df", compared with "sdf" + 1 */
        else if (strncmp(a, "sd", 2) == 0)
                a += 1;
        else
                return strcmp(a, b) == 0;
        if (strncmp(b, "xvd", 3) == 0)
                b += 2;
        else if (strncmp(b, "sd", 2) == 0)
                b += 1;
        else
                return false;
        return strcmp(a, b) == 0;
}

bool wait_name_matches(const VolumeRecord *r, const char *name) {
        /* /dev/nvme1n1 waited for before the disk is there: its kernel name, once it is */
        bool dev = strncmp(name, "/dev/", 5) == 0;

        return streq_ptr(r->volume_id, name) || streq_ptr(r->kernel_name, name) ||
               (dev && r->kernel_name[0] && streq_ptr(r->kernel_name, name + 5)) ||
               (r->device_name[0] && mapping_names_equal(r->device_name, name));
}
