/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for findings_parse(), the reader of what ebs-hydrate-aws says AWS said
 * (src/state/findings.c), which decides whether a volume is read at all. Any bytes: findings
 * that parse name a valid volume, either an error or a known source (a snapshot with its id),
 * keep every text on one line and a progress of at most 100; formatted again they parse to the
 * same findings, and the text is a fixed point.
 */
#include <string.h>

#include "findings.h"
#include "fuzz-util.h"

static void check_line(const char *s, size_t size) {
        size_t n = strnlen(s, size);

        fuzz_assert(n < size);
        for (size_t i = 0; i < n; i++)
                fuzz_assert((unsigned char)s[i] >= ' ' && s[i] != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char text[FINDINGS_FILE_MAX], again[FINDINGS_FILE_MAX];
        AwsFindings f, back;
        int n, m;

        if (findings_parse((const char *)data, size, &f) < 0)
                return 0;
        fuzz_assert(state_key_valid(f.volume_id, strlen(f.volume_id)));
        check_line(f.error, sizeof(f.error));
        check_line(f.status_error, sizeof(f.status_error));
        check_line(f.snapshot_id, sizeof(f.snapshot_id));
        check_line(f.initialization_state, sizeof(f.initialization_state));
        check_line(f.initialization_type, sizeof(f.initialization_type));
        check_line(f.blocks_error, sizeof(f.blocks_error));
        fuzz_assert(f.blocks_stored == FINDINGS_UNKNOWN || f.blocks_stored >= 0);
        fuzz_assert((f.blocks_stored == FINDINGS_UNKNOWN && !f.blocks_error[0]) ||
                    (f.source == FINDINGS_SOURCE_SNAPSHOT &&
                     (f.blocks_stored == FINDINGS_UNKNOWN || !f.blocks_error[0])));
        if (!f.error[0]) {
                fuzz_assert(findings_source_to_string(f.source) != NULL);
                fuzz_assert(f.source != FINDINGS_SOURCE_SNAPSHOT || f.snapshot_id[0]);
        }
        fuzz_assert(f.initialization_progress == FINDINGS_UNKNOWN ||
                    (f.initialization_progress >= 0 && f.initialization_progress <= 100));

        n = findings_format(&f, text, sizeof(text));
        if (f.error[0] || findings_source_to_string(f.source)) {
                fuzz_assert(n > 0);
                fuzz_assert(findings_parse(text, (size_t)n, &back) == 0);
                fuzz_assert(strcmp(back.volume_id, f.volume_id) == 0);
                fuzz_assert(strcmp(back.error, f.error) == 0);
                if (!f.error[0]) {
                        fuzz_assert(back.source == f.source);
                        fuzz_assert(strcmp(back.snapshot_id, f.snapshot_id) == 0);
                        fuzz_assert(back.fast_restored == f.fast_restored);
                        fuzz_assert(back.initialization_progress == f.initialization_progress);
                }
                m = findings_format(&back, again, sizeof(again));
                fuzz_assert(m == n && memcmp(text, again, (size_t)n) == 0);
        }
        return 0;
}
