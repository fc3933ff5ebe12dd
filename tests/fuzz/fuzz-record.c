/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for record_parse(), the reader of the volume records that ebs-hydratectl wait
 * trusts (src/state/record.c). Any bytes: a record that parses has a valid volume id, a known
 * state and phase, printable words and no more hydrated than its size; formatted again it parses
 * to the same record, and its text is a fixed point (format, parse, format gives the same bytes).
 */
#include <string.h>

#include "fuzz-util.h"
#include "record.h"

static void check_word(const char *s, size_t size) {
        size_t n = strnlen(s, size);

        fuzz_assert(n < size);
        for (size_t i = 0; i < n; i++)
                fuzz_assert(s[i] > ' ' && s[i] <= '~');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char text[RECORD_FILE_MAX], again[RECORD_FILE_MAX];
        VolumeRecord r, back;
        int n, m;

        if (record_parse((const char *)data, size, &r) < 0)
                return 0;
        fuzz_assert(state_key_valid(r.volume_id, strlen(r.volume_id)));
        check_word(r.kernel_name, sizeof(r.kernel_name));
        check_word(r.device_name, sizeof(r.device_name));
        fuzz_assert(record_state_to_string(r.state) != NULL);
        fuzz_assert(record_phase_to_string(r.phase) != NULL);
        fuzz_assert(r.hydrated_bytes <= r.size_bytes);
        fuzz_assert(r.empty_bytes <= r.hydrated_bytes);
        fuzz_assert(r.pid >= 0);

        n = record_format(&r, text, sizeof(text));
        fuzz_assert(n > 0);
        fuzz_assert(record_parse(text, (size_t)n, &back) == 0);
        fuzz_assert(strcmp(back.volume_id, r.volume_id) == 0);
        fuzz_assert(strcmp(back.kernel_name, r.kernel_name) == 0);
        fuzz_assert(strcmp(back.device_name, r.device_name) == 0);
        fuzz_assert(back.state == r.state && back.phase == r.phase);
        fuzz_assert(back.size_bytes == r.size_bytes && back.hydrated_bytes == r.hydrated_bytes);
        fuzz_assert(back.empty_bytes == r.empty_bytes);
        fuzz_assert(back.errors == r.errors && back.pid == r.pid && back.diskseq == r.diskseq);
        fuzz_assert(back.free_space_cold == r.free_space_cold && back.fs_aware == r.fs_aware);
        m = record_format(&back, again, sizeof(again));
        fuzz_assert(m == n && memcmp(text, again, (size_t)n) == 0);
        return 0;
}
