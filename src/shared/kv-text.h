/* SPDX-License-Identifier: MIT */
/*
 * KEY=VALUE text in the style of os-release(5), as the volume record and the AWS findings are
 * written: one pair a line, empty lines and lines starting with '#' skipped. The value is the
 * rest of the line, as it is (no quotes, no escapes).
 */
#pragma once

#include <stddef.h>

/* Called for each pair; a negative return stops the walk and is returned. */
typedef int (*KvTextPair)(const char *key, size_t key_len, const char *value, size_t value_len,
                          void *userdata);

/* kv_text_foreach() - 0, -EBADMSG for a line without '=' (or an empty key), or @f's error. */
int kv_text_foreach(const char *text, size_t size, KvTextPair f, void *userdata);

/* kv_key_is() - whether the @len bytes at @key are @name. */
int kv_key_is(const char *key, size_t len, const char *name);
