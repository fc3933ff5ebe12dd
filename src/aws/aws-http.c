/* SPDX-License-Identifier: MIT */
/* One HTTP exchange over libcurl (aws-http.h). */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws-http.h"
#include "util.h"

void aws_endpoint_done(AwsEndpoint *e) {
        free(e->url);
        free(e->host);
        *e = (AwsEndpoint){};
}

void aws_http_response_done(AwsHttpResponse *r) {
        free(r->body);
        *r = (AwsHttpResponse){};
}

static char *url_part(CURLU *u, CURLUPart part) {
        char *s = NULL, *copy;

        /* No default port: curl leaves it out of Host:, and the signature must see what is sent. */
        if (curl_url_get(u, part, &s, part == CURLUPART_PORT ? CURLU_NO_DEFAULT_PORT : 0) !=
            CURLUE_OK)
                return NULL;
        copy = strdup(s);
        curl_free(s);
        return copy;
}

int aws_endpoint_parse(const char *url, AwsEndpoint *ret) {
        _cleanup_free_ char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL,
                            *fragment = NULL, *user = NULL;
        CURLU *u = curl_url();
        int r = -EINVAL;

        if (!u)
                return -ENOMEM;
        if (isempty(url) || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
                goto out;
        scheme = url_part(u, CURLUPART_SCHEME);
        host = url_part(u, CURLUPART_HOST);
        port = url_part(u, CURLUPART_PORT);
        path = url_part(u, CURLUPART_PATH);
        query = url_part(u, CURLUPART_QUERY);
        fragment = url_part(u, CURLUPART_FRAGMENT);
        user = url_part(u, CURLUPART_USER);
        if (!scheme || !host || (!streq(scheme, "http") && !streq(scheme, "https")) || query ||
            fragment || user || (path && !streq(path, "/") && !isempty(path)))
                goto out;
        r = -ENOMEM;
        if (asprintf(&ret->url, "%s://%s%s%s", scheme, host, port ? ":" : "", strempty(port)) < 0)
                goto out;
        if (asprintf(&ret->host, "%s%s%s", host, port ? ":" : "", strempty(port)) < 0) {
                free(ret->url);
                ret->url = NULL;
                goto out;
        }
        r = 0;
out:
        curl_url_cleanup(u);
        return r;
}

typedef struct Sink {
        char *data;
        size_t size;
        bool too_big;
} Sink;

static size_t on_body(char *p, size_t size, size_t n, void *userdata) {
        Sink *s = userdata;
        size_t len = size * n;
        char *grown;

        if (s->size + len > AWS_HTTP_BODY_MAX) {
                s->too_big = true;
                return 0; /* curl stops with CURLE_WRITE_ERROR */
        }
        grown = realloc(s->data, s->size + len + 1);
        if (!grown)
                return 0;
        s->data = grown;
        memcpy(s->data + s->size, p, len);
        s->size += len;
        s->data[s->size] = '\0';
        return len;
}

static int errno_of(CURLcode c) {
        switch (c) {
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_COULDNT_CONNECT:
                return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return -EHOSTUNREACH;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return -EIO;
        }
}

static char *request_url(const AwsEndpoint *e, const AwsRequest *r) {
        _cleanup_free_ char *path = aws_uri_encode(isempty(r->path) ? "/" : r->path, true);
        char *url;

        if (!path || asprintf(&url, "%s%s%s%s", e->url, path, isempty(r->query) ? "" : "?",
                              strempty(r->query)) < 0)
                return NULL;
        return url;
}

static struct curl_slist *request_headers(const AwsRequest *r) {
        struct curl_slist *l = NULL;

        for (size_t i = 0; i < r->n_headers; i++) {
                _cleanup_free_ char *line = NULL;
                struct curl_slist *n;

                if (asprintf(&line, "%s: %s", r->headers[i].name, r->headers[i].value) < 0)
                        goto fail;
                n = curl_slist_append(l, line);
                if (!n)
                        goto fail;
                l = n;
        }
        /* curl's own "Expect: 100-continue" would wait a second on a server that ignores it */
        if (!(l = curl_slist_append(l, "Expect:")))
                goto fail;
        return l;
fail:
        curl_slist_free_all(l);
        return NULL;
}

int aws_http_send(const AwsEndpoint *e, const AwsRequest *r, const AwsHttpOptions *o,
                  AwsHttpResponse *ret, char **ret_error_text) {
        _cleanup_free_ char *url = request_url(e, r);
        char error_text[CURL_ERROR_SIZE] = "";
        struct curl_slist *headers = NULL;
        Sink sink = {};
        CURL *c = NULL;
        CURLcode k;
        long status = 0;
        int ret_code = -ENOMEM;

        if (!url || !(headers = request_headers(r)) || !(c = curl_easy_init()))
                goto out;
        (void)curl_easy_setopt(c, CURLOPT_URL, url);
        (void)curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        (void)curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        (void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        (void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(o->timeout_usec / 1000));
        (void)curl_easy_setopt(
                c, CURLOPT_CONNECTTIMEOUT_MS,
                (long)((o->connect_timeout_usec ? o->connect_timeout_usec : o->timeout_usec) /
                       1000));
        if (o->no_proxy)
                (void)curl_easy_setopt(c, CURLOPT_PROXY, "");
        (void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        (void)curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_text);
        (void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        (void)curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
        (void)curl_easy_setopt(c, CURLOPT_USERAGENT, "ebs-hydrate-aws");
        if (streq(r->method, "GET"))
                (void)curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        else {
                (void)curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)r->body_size);
                (void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body ? r->body : "");
                if (!streq(r->method, "POST"))
                        (void)curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
        }
        k = curl_easy_perform(c);
        if (k != CURLE_OK) {
                ret_code = sink.too_big ? -EFBIG : errno_of(k);
                if (sink.too_big)
                        snprintf(error_text, sizeof(error_text), "sent an answer over %u MiB",
                                 AWS_HTTP_BODY_MAX >> 20);
                else {
                        char curl_text[CURL_ERROR_SIZE];

                        snprintf(curl_text, sizeof(curl_text), "%s",
                                 error_text[0] ? error_text : curl_easy_strerror(k));
                        snprintf(error_text, sizeof(error_text), "did not answer (%.200s)",
                                 curl_text);
                }
                goto out;
        }
        (void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 300 && status < 400) {
                snprintf(error_text, sizeof(error_text),
                         "answered with a redirect (HTTP %ld), not followed", status);
                ret_code = -EPROTO;
                goto out;
        }
        *ret = (AwsHttpResponse){
                .status = status, .body = sink.data ? sink.data : strdup(""), .size = sink.size};
        sink.data = NULL;
        ret_code = ret->body ? 0 : -ENOMEM;
out:
        if (ret_code < 0 && ret_error_text)
                *ret_error_text = strdup(error_text[0] ? error_text : "failed: out of memory");
        free(sink.data);
        curl_slist_free_all(headers);
        if (c)
                curl_easy_cleanup(c);
        return ret_code;
}
