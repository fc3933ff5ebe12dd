/* SPDX-License-Identifier: MIT */
/*
 * KEY=VALUE text in the style of os-release(5), as the volume record and the AWS findings are
 * written: one pair a line, empty lines and lines starting with '#' skipped. The value is the
 * rest of the line, as it is (no quotes, no escapes).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Called for each pair; a negative return stops the walk and is returned. */
typedef int (*KvTextPair)(const char *key, size_t key_len, const char *value, size_t value_len,
                          void *userdata);

/* kv_text_foreach() - 0, -EBADMSG for a line without '=' (or an empty key), or @f's error. */
int kv_text_foreach(const char *text, size_t size, KvTextPair f, void *userdata);

/* kv_value_word() - the @len bytes at @value into @dst (@size with its NUL) if they are printable
 * ASCII without spaces (none at all is a word: an empty value) and fit: 0, or -EBADMSG. */
int kv_value_word(const char *value, size_t len, char *dst, size_t size);
/* kv_value_number() - the @len bytes at @value as a decimal number of at most @max: 0 or
 * -EBADMSG. */
int kv_value_number(const char *value, size_t len, uint64_t max, uint64_t *ret);

/* kv_key_is() - whether the @len bytes at @key are @name. */
int kv_key_is(const char *key, size_t len, const char *name);
