/* SPDX-License-Identifier: MIT */
/* KEY=VALUE lines (kv-text.h). */
#include <errno.h>
#include <string.h>

#include "kv-text.h"
#include "parse.h"
#include "util.h"

int kv_text_foreach(const char *text, size_t size, KvTextPair f, void *userdata) {
        const char *end = text + size;

        for (const char *line = text; line < end;) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                const char *eol = nl ? nl : end, *eq = memchr(line, '=', (size_t)(eol - line));
                int r;

                if (eol == line || line[0] == '#') { /* empty line, comment */
                        line = eol + 1;
                        continue;
                }
                if (!eq || eq == line)
                        return -EBADMSG;
                r = f(line, (size_t)(eq - line), eq + 1, (size_t)(eol - eq - 1), userdata);
                if (r < 0)
                        return r;
                line = eol + 1;
        }
        return 0;
}

int kv_value_word(const char *value, size_t len, char *dst, size_t size) {
        if (len >= size)
                return -EBADMSG;
        for (size_t i = 0; i < len; i++)
                if (value[i] <= ' ' || value[i] > '~')
                        return -EBADMSG;
        memcpy(dst, value, len);
        dst[len] = '\0';
        return 0;
}

int kv_value_number(const char *value, size_t len, uint64_t max, uint64_t *ret) {
        char word[DECIMAL_STR_MAX(uint64_t)];

        if (kv_value_word(value, len, word, sizeof(word)) < 0)
                return -EBADMSG;
        return parse_unsigned(word, 0, max, ret) < 0 ? -EBADMSG : 0;
}

int kv_key_is(const char *key, size_t len, const char *name) {
        return strlen(name) == len && memcmp(key, name, len) == 0;
}
