/* SPDX-License-Identifier: MIT */
/*
 * AWS Signature Version 4 (sigv4.h), written from AWS's description of the algorithm: the
 * canonical request (method, normalised path, sorted query, trimmed lower-case headers, the
 * payload's hash), its hash in the string to sign, and the HMAC chain of the signing key.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc-util.h"
#include "sigv4.h"
#include "util.h"

#define SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SHA256_HEX_MAX (2 * SHA256_DIGEST_LENGTH + 1)
/* "20150830T123600Z" and "20150830" with their NULs */
#define AMZ_DATE_MAX 17
#define AMZ_DAY_MAX 9
/* What Python's str.split() splits on, of ASCII: the signers agree on odd values too. */
#define WHITESPACE_PY " \t\n\r\v\f\x1c\x1d\x1e\x1f"

/* Hop-by-hop and agent headers are not signed: a proxy may change them. */
static const char *const unsigned_headers[] = {
        "connection",
        "expect",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "x-amzn-trace-id",
};

void aws_credentials_done(AwsCredentials *c) {
        free(c->access_key_id);
        if (c->secret_access_key) /* do not leave the secret in freed memory */
                explicit_bzero(c->secret_access_key, strlen(c->secret_access_key));
        free(c->secret_access_key);
        free(c->session_token);
        *c = (AwsCredentials){};
}

int aws_request_add_header(AwsRequest *r, const char *name, const char *value) {
        AwsHeader *h = realloc(r->headers, (r->n_headers + 1) * sizeof(*h));

        if (!h)
                return -ENOMEM;
        r->headers = h;
        h = &r->headers[r->n_headers];
        h->name = strdup(name);
        h->value = strdup(value);
        if (!h->name || !h->value) {
                free(h->name);
                free(h->value);
                return -ENOMEM;
        }
        r->n_headers++;
        return 0;
}

static void remove_header(AwsRequest *r, const char *name) {
        for (size_t i = 0; i < r->n_headers;)
                if (strcasecmp(r->headers[i].name, name) == 0) {
                        free(r->headers[i].name);
                        free(r->headers[i].value);
                        memmove(&r->headers[i], &r->headers[i + 1],
                                (r->n_headers - i - 1) * sizeof(r->headers[0]));
                        r->n_headers--;
                } else
                        i++;
}

void aws_request_done(AwsRequest *r) {
        for (size_t i = 0; i < r->n_headers; i++) {
                free(r->headers[i].name);
                free(r->headers[i].value);
        }
        free(r->headers);
        r->headers = NULL;
        r->n_headers = 0;
}

static bool unreserved(unsigned char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_' || c == '.' || c == '~';
}

char *aws_uri_encode(const char *s, int keep_slash) {
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(s);
        char *out = malloc(3 * n + 1), *o = out;

        if (!out)
                return NULL;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
                if (unreserved(*p) || (keep_slash && *p == '/'))
                        *o++ = (char)*p;
                else {
                        *o++ = '%';
                        *o++ = hex[*p >> 4];
                        *o++ = hex[*p & 15];
                }
        *o = '\0';
        return out;
}

static void hex_encode(const unsigned char *d, size_t n, char *out) {
        static const char hex[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = hex[d[i] >> 4];
                out[2 * i + 1] = hex[d[i] & 15];
        }
        out[2 * n] = '\0';
}

static void sha256_hex(const void *data, size_t n, char out[static SHA256_HEX_MAX]) {
        unsigned char d[SHA256_DIGEST_LENGTH];

        SHA256(data, n, d);
        hex_encode(d, sizeof(d), out);
}

/*
 * The path with "." and ".." segments resolved and empty segments dropped, its leading and
 * trailing '/' kept (an empty path is "/"), then percent-encoded with '/' kept.
 */
static char *canonical_path(const char *path) {
        _cleanup_free_ char *copy = strdup(isempty(path) ? "/" : path), *joined = NULL;
        _cleanup_free_ char **segs = NULL;
        size_t n = 0, len, total = 3;
        char *save = NULL;

        if (!copy)
                return NULL;
        len = strlen(copy);
        segs = calloc(len + 1, sizeof(char *));
        if (!segs)
                return NULL;
        for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save))
                if (streq(t, "..")) {
                        if (n > 0)
                                n--;
                } else if (!streq(t, "."))
                        segs[n++] = t;
        for (size_t i = 0; i < n; i++)
                total += strlen(segs[i]) + 1;
        joined = malloc(total);
        if (!joined)
                return NULL;
        joined[0] = '\0';
        if (path && path[0] == '/')
                strcat(joined, "/");
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        strcat(joined, "/");
                strcat(joined, segs[i]);
        }
        if (n > 0 && len > 0 && path[len - 1] == '/')
                strcat(joined, "/");
        if (isempty(path))
                strcpy(joined, "/");
        return aws_uri_encode(joined, true);
}

typedef struct QueryPair {
        const char *key, *value;
        size_t key_len, value_len;
} QueryPair;

static int pair_compare(const void *a, const void *b) {
        const QueryPair *x = a, *y = b;
        int c = strncmp(x->key, y->key, MIN(x->key_len, y->key_len));

        if (c == 0 && x->key_len != y->key_len)
                return x->key_len < y->key_len ? -1 : 1;
        if (c != 0)
                return c;
        c = strncmp(x->value, y->value, MIN(x->value_len, y->value_len));
        if (c == 0 && x->value_len != y->value_len)
                return x->value_len < y->value_len ? -1 : 1;
        return c;
}

/* The query's pairs as given (already encoded), sorted by key and then value. */
static int canonical_query(FILE *f, const char *query) {
        _cleanup_free_ QueryPair *pairs = NULL;
        size_t n = 0, max = 1;

        if (isempty(query))
                return 0;
        for (const char *p = query; *p; p++)
                max += *p == '&';
        pairs = calloc(max, sizeof(*pairs));
        if (!pairs)
                return -ENOMEM;
        for (const char *p = query;; p++) {
                size_t len = strcspn(p, "&");
                const char *eq = memchr(p, '=', len);

                pairs[n++] = (QueryPair){p, eq ? eq + 1 : p + len, eq ? (size_t)(eq - p) : len,
                                         eq ? (size_t)(p + len - eq - 1) : 0};
                p += len;
                if (!*p)
                        break;
        }
        qsort(pairs, n, sizeof(*pairs), pair_compare);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%.*s=%.*s", i > 0 ? "&" : "", (int)pairs[i].key_len, pairs[i].key,
                        (int)pairs[i].value_len, pairs[i].value);
        return 0;
}

static bool header_signed(const char *lower_name) {
        for (size_t i = 0; i < ELEMENTSOF(unsigned_headers); i++)
                if (streq(lower_name, unsigned_headers[i]))
                        return false;
        return true;
}

/* The value with leading and trailing white space gone and every run inside made one space. */
static void put_trimmed(FILE *f, const char *v) {
        bool first = true;

        for (const char *p = v + strspn(v, WHITESPACE_PY); *p; p += strspn(p, WHITESPACE_PY)) {
                size_t len = strcspn(p, WHITESPACE_PY);

                fprintf(f, "%s%.*s", first ? "" : " ", (int)len, p);
                first = false;
                p += len;
        }
}

typedef struct SignedHeader {
        char *name; /* lower case */
        const char *value;
} SignedHeader;

static int signed_header_compare(const void *a, const void *b) {
        return strcmp(((const SignedHeader *)a)->name, ((const SignedHeader *)b)->name);
}

static char *lower_dup(const char *s) {
        char *l = strdup(s);

        for (char *p = l; p && *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p - 'A' + 'a');
        return l;
}

/* Canonical headers (each name once, repeated values joined by ','), then signed headers. */
static int canonical_headers(FILE *f, const AwsRequest *r, char **ret_signed) {
        SignedHeader *h = calloc(r->n_headers + 1, sizeof(*h));
        size_t n = 0;
        bool have_host = false;
        char *list = NULL;
        size_t list_size = 0;
        FILE *l;
        int ret = -ENOMEM;

        if (!h)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_headers; i++) {
                char *name = lower_dup(r->headers[i].name);

                if (!name)
                        goto out;
                if (!header_signed(name)) {
                        free(name);
                        continue;
                }
                have_host = have_host || streq(name, "host");
                h[n++] = (SignedHeader){name, r->headers[i].value};
        }
        if (!have_host) {
                h[n].name = strdup("host");
                if (!h[n].name)
                        goto out;
                h[n++].value = r->host;
        }
        /* A stable sort keeps repeated headers in the order given, as their values are joined. */
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && signed_header_compare(&h[j - 1], &h[j]) > 0; j--) {
                        SignedHeader t = h[j];

                        h[j] = h[j - 1];
                        h[j - 1] = t;
                }
        l = open_memstream(&list, &list_size);
        if (!l)
                goto out;
        for (size_t i = 0; i < n; i++) {
                bool repeat = i > 0 && streq(h[i].name, h[i - 1].name);

                if (repeat)
                        fputc(',', f);
                else {
                        fprintf(f, "%s%s:", i > 0 ? "\n" : "", h[i].name);
                        fprintf(l, "%s%s", i > 0 ? ";" : "", h[i].name);
                }
                put_trimmed(f, h[i].value);
        }
        fputc('\n', f);
        if (fclose(l) != 0) {
                free(list);
                goto out;
        }
        *ret_signed = list;
        ret = 0;
out:
        for (size_t i = 0; i < n; i++)
                free(h[i].name);
        free(h);
        return ret;
}

char *sigv4_canonical_request(const AwsRequest *r, char **ret_signed_headers) {
        _cleanup_free_ char *path = canonical_path(r->path), *signed_headers = NULL;
        char payload[SHA256_HEX_MAX], *buf = NULL;
        size_t size = 0;
        FILE *f;

        if (!path)
                return NULL;
        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        fprintf(f, "%s\n%s\n", r->method, path);
        if (canonical_query(f, r->query) < 0 ||
            (fputc('\n', f), canonical_headers(f, r, &signed_headers) < 0)) {
                fclose(f);
                free(buf);
                return NULL;
        }
        sha256_hex(r->body ? r->body : "", r->body ? r->body_size : 0, payload);
        fprintf(f, "\n%s\n%s", signed_headers, payload);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        if (ret_signed_headers)
                *ret_signed_headers = TAKE_PTR(signed_headers);
        return buf;
}

char *sigv4_string_to_sign(const char *amz_date, const char *scope, const char *canonical) {
        char hash[SHA256_HEX_MAX], *s = NULL;

        sha256_hex(canonical, strlen(canonical), hash);
        if (asprintf(&s, SIGV4_ALGORITHM "\n%s\n%s\n%s", amz_date, scope, hash) < 0)
                return NULL;
        return s;
}

static void hmac(const void *key, size_t key_len, const char *data,
                 unsigned char out[static SHA256_DIGEST_LENGTH]) {
        unsigned len = SHA256_DIGEST_LENGTH;

        HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)data, strlen(data), out, &len);
}

static int signature(const char *secret, const char *day, const char *region, const char *service,
                     const char *sts, char out[static SHA256_HEX_MAX]) {
        unsigned char k[SHA256_DIGEST_LENGTH];
        _cleanup_free_ char *first = NULL;

        if (asprintf(&first, "AWS4%s", secret) < 0)
                return -ENOMEM;
        hmac(first, strlen(first), day, k);
        explicit_bzero(first, strlen(first));
        hmac(k, sizeof(k), region, k);
        hmac(k, sizeof(k), service, k);
        hmac(k, sizeof(k), "aws4_request", k);
        hmac(k, sizeof(k), sts, k);
        hex_encode(k, sizeof(k), out);
        explicit_bzero(k, sizeof(k));
        return 0;
}

static bool has_newline(const char *s) {
        return strpbrk(s, "\r\n") != NULL;
}

int sigv4_sign(AwsRequest *r, const AwsCredentials *c, const char *region, const char *service,
               time_t now) {
        _cleanup_free_ char *canonical = NULL, *signed_headers = NULL, *scope = NULL, *sts = NULL,
                            *auth = NULL;
        char amz_date[AMZ_DATE_MAX], day[AMZ_DAY_MAX], sig[SHA256_HEX_MAX];
        struct tm tm;
        int k;

        if (!c || isempty(c->access_key_id) || isempty(c->secret_access_key) || isempty(region) ||
            isempty(service) || !gmtime_r(&now, &tm))
                return -EINVAL;
        /* The key id goes into Authorization as it is: letters and digits only, as AWS's are. */
        for (const char *p = c->access_key_id; *p; p++)
                if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                      (*p >= '0' && *p <= '9')))
                        return -EINVAL;
        if (has_newline(c->secret_access_key) || has_newline(region) || has_newline(service))
                return -EINVAL;
        for (size_t i = 0; i < r->n_headers; i++)
                if (has_newline(r->headers[i].name) || has_newline(r->headers[i].value))
                        return -EINVAL;
        if (c->session_token && has_newline(c->session_token))
                return -EINVAL;
        strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &tm);
        strftime(day, sizeof(day), "%Y%m%d", &tm);
        remove_header(r, "Authorization");
        remove_header(r, "X-Amz-Date");
        remove_header(r, "X-Amz-Security-Token");
        if (aws_request_add_header(r, "X-Amz-Date", amz_date) < 0 ||
            (c->session_token &&
             aws_request_add_header(r, "X-Amz-Security-Token", c->session_token) < 0))
                return -ENOMEM;
        canonical = sigv4_canonical_request(r, &signed_headers);
        if (!canonical || asprintf(&scope, "%s/%s/%s/aws4_request", day, region, service) < 0)
                return -ENOMEM;
        sts = sigv4_string_to_sign(amz_date, scope, canonical);
        if (!sts)
                return -ENOMEM;
        k = signature(c->secret_access_key, day, region, service, sts, sig);
        if (k < 0)
                return k;
        if (asprintf(&auth, SIGV4_ALGORITHM " Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                     c->access_key_id, scope, signed_headers, sig) < 0)
                return -ENOMEM;
        return aws_request_add_header(r, "Authorization", auth);
}
