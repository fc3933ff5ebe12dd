/* SPDX-License-Identifier: MIT */
/*
 * SigV4 (src/aws/sigv4.c): AWS's published example (IAM ListUsers, AWS General Reference,
 * "Examples of the complete Signature Version 4 signing process"), and each canonical step's
 * edges. The byte-for-byte comparison with botocore over many requests is
 * tests/aws/sigv4-botocore.py.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aws-http.h"
#include "sigv4.h"
#include "util.h"

/* 2015-08-30T12:36:00Z */
#define EXAMPLE_TIME ((time_t)1440938160)
#define EXAMPLE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

static AwsCredentials example_credentials(const char *token) {
        return (AwsCredentials){
                .access_key_id = strdup("AKIDEXAMPLE"),
                .secret_access_key = strdup(EXAMPLE_SECRET),
                .session_token = token ? strdup(token) : NULL,
        };
}

static const char *header(const AwsRequest *r, const char *name) {
        for (size_t i = 0; i < r->n_headers; i++)
                if (strcmp(r->headers[i].name, name) == 0)
                        return r->headers[i].value;
        return NULL;
}

static unsigned header_count(const AwsRequest *r, const char *name) {
        unsigned n = 0;

        for (size_t i = 0; i < r->n_headers; i++)
                n += strcmp(r->headers[i].name, name) == 0;
        return n;
}

static void test_sigv4_aws_example(void **state) {
        AwsRequest r = {.method = "GET",
                        .host = "iam.amazonaws.com",
                        .path = "/",
                        .query = "Action=ListUsers&Version=2010-05-08"};
        AwsCredentials c = example_credentials(NULL);
        _cleanup_free_ char *canonical = NULL, *signed_headers = NULL, *sts = NULL;

        assert_int_equal(aws_request_add_header(&r, "Content-Type",
                                                "application/x-www-form-urlencoded; charset=utf-8"),
                         0);
        assert_int_equal(sigv4_sign(&r, &c, "us-east-1", "iam", EXAMPLE_TIME), 0);
        assert_string_equal(header(&r, "X-Amz-Date"), "20150830T123600Z");
        assert_null(header(&r, "X-Amz-Security-Token"));
        assert_string_equal(
                header(&r, "Authorization"),
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
                "SignedHeaders=content-type;host;x-amz-date, "
                "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");

        canonical = sigv4_canonical_request(&r, &signed_headers);
        assert_non_null(canonical);
        /* Authorization is a request header now, and so signed in a canonical request made
         * after the fact: the example's text is checked without it. */
        assert_non_null(strstr(canonical, "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
                                          "authorization:"));
        sts = sigv4_string_to_sign(
                "20150830T123600Z", "20150830/us-east-1/iam/aws4_request",
                "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
                "content-type:application/x-www-form-urlencoded; "
                "charset=utf-8\nhost:iam.amazonaws.com\n"
                "x-amz-date:20150830T123600Z\n\n"
                "content-type;host;x-amz-date\n"
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_string_equal(sts,
                            "AWS4-HMAC-SHA256\n20150830T123600Z\n"
                            "20150830/us-east-1/iam/aws4_request\n"
                            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
        aws_request_done(&r);
        aws_credentials_done(&c);
}

static void test_sigv4_uri_encode(void **state) {
        _cleanup_free_ char *a = aws_uri_encode("AZaz09-_.~", false),
                            *b = aws_uri_encode("a b+c/d=e&f%", false),
                            *c = aws_uri_encode("/snapshots/snap 1/", true),
                            *d = aws_uri_encode("\xc3\xa9\x01", false);

        assert_string_equal(a, "AZaz09-_.~");
        assert_string_equal(b, "a%20b%2Bc%2Fd%3De%26f%25");
        assert_string_equal(c, "/snapshots/snap%201/");
        assert_string_equal(d, "%C3%A9%01");
}

static bool starts_with(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The canonical request of a request with @path, @query and one header X-Test: @value. */
static char *canonical_of(const char *path, const char *query, const char *value) {
        AwsRequest r = {.method = "POST", .host = "h", .path = path, .query = query};
        char *s;

        assert_int_equal(aws_request_add_header(&r, "X-Test", value), 0);
        s = sigv4_canonical_request(&r, NULL);
        aws_request_done(&r);
        assert_non_null(s);
        return s;
}

static void test_sigv4_canonical_path(void **state) {
        static const struct {
                const char *path, *canonical;
        } cases[] = {
                {"", "/"},
                {"/", "/"},
                {"//", "/"},
                {"/a/./b/../c/", "/a/c/"},
                {"/../a", "/a"},
                {"/a//b", "/a/b"},
                {"/snapshots/snap-0123/blocks", "/snapshots/snap-0123/blocks"},
                {"/a b", "/a%20b"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *s = canonical_of(cases[i].path, "", "v");
                _cleanup_free_ char *want = NULL;

                assert_true(asprintf(&want, "POST\n%s\n\n", cases[i].canonical) > 0);
                assert_true(starts_with(s, want));
        }
}

static void test_sigv4_canonical_query(void **state) {
        _cleanup_free_ char *a = canonical_of("/", "b=2&a=2&a=1&c", "v"),
                            *b = canonical_of("/", "pageToken=x%2By%3D&maxResults=10000", "v"),
                            *c = canonical_of("/", "", "v");

        assert_true(starts_with(a, "POST\n/\na=1&a=2&b=2&c=\n"));
        assert_true(starts_with(b, "POST\n/\nmaxResults=10000&pageToken=x%2By%3D\n"));
        assert_true(starts_with(c, "POST\n/\n\n"));
}

static void test_sigv4_canonical_headers(void **state) {
        AwsRequest r = {.method = "GET", .host = "example:8080", .path = "/", .query = ""};
        _cleanup_free_ char *s = NULL, *signed_headers = NULL;

        assert_int_equal(aws_request_add_header(&r, "X-B", "  two   words\there  "), 0);
        assert_int_equal(aws_request_add_header(&r, "x-a", "1"), 0);
        assert_int_equal(aws_request_add_header(&r, "X-A", "2"), 0);
        assert_int_equal(aws_request_add_header(&r, "User-Agent", "not signed"), 0);
        assert_int_equal(aws_request_add_header(&r, "Expect", "100-continue"), 0);
        s = sigv4_canonical_request(&r, &signed_headers);
        assert_non_null(s);
        assert_string_equal(signed_headers, "host;x-a;x-b");
        assert_non_null(strstr(s, "\nhost:example:8080\nx-a:1,2\nx-b:two words here\n\n"
                                  "host;x-a;x-b\n"));
        assert_null(strstr(s, "user-agent"));
        aws_request_done(&r);
}

static void test_sigv4_session_token_and_resign(void **state) {
        AwsRequest r = {.method = "POST",
                        .host = "ec2.us-east-1.amazonaws.com",
                        .path = "/",
                        .query = "",
                        .body = "Action=DescribeVolumes",
                        .body_size = 22};
        AwsCredentials c = example_credentials("token+/=");
        char *first;

        assert_int_equal(sigv4_sign(&r, &c, "us-east-1", "ec2", EXAMPLE_TIME), 0);
        assert_string_equal(header(&r, "X-Amz-Security-Token"), "token+/=");
        assert_non_null(strstr(header(&r, "Authorization"),
                               "SignedHeaders=host;x-amz-date;x-amz-security-token,"));
        first = strdup(header(&r, "Authorization"));
        /* A retry signs again: one of each header, and a new time gives a new signature. */
        assert_int_equal(sigv4_sign(&r, &c, "us-east-1", "ec2", EXAMPLE_TIME + 1), 0);
        assert_int_equal(header_count(&r, "Authorization"), 1);
        assert_int_equal(header_count(&r, "X-Amz-Date"), 1);
        assert_int_equal(header_count(&r, "X-Amz-Security-Token"), 1);
        assert_string_equal(header(&r, "X-Amz-Date"), "20150830T123601Z");
        assert_string_not_equal(header(&r, "Authorization"), first);
        free(first);
        aws_request_done(&r);
        aws_credentials_done(&c);
}

static void test_sigv4_refuses(void **state) {
        AwsRequest r = {.method = "GET", .host = "h", .path = "/", .query = ""};
        AwsCredentials c = example_credentials(NULL), none = {};

        assert_int_equal(sigv4_sign(&r, &none, "us-east-1", "ec2", EXAMPLE_TIME), -EINVAL);
        assert_int_equal(sigv4_sign(&r, &c, "", "ec2", EXAMPLE_TIME), -EINVAL);
        assert_int_equal(aws_request_add_header(&r, "X-Evil", "a\r\nInjected: 1"), 0);
        assert_int_equal(sigv4_sign(&r, &c, "us-east-1", "ec2", EXAMPLE_TIME), -EINVAL);
        assert_null(header(&r, "Authorization"));
        aws_request_done(&r);
        aws_credentials_done(&c);
        c = example_credentials("tok\nen");
        assert_int_equal(sigv4_sign(&r, &c, "us-east-1", "ec2", EXAMPLE_TIME), -EINVAL);
        aws_request_done(&r);
        aws_credentials_done(&c);
        /* the key id goes into Authorization as it is: a header of its own must not follow */
        c = example_credentials(NULL);
        free(c.access_key_id);
        c.access_key_id = strdup("AKID\r\nX-Injected: 1");
        assert_int_equal(sigv4_sign(&r, &c, "us-east-1", "ec2", EXAMPLE_TIME), -EINVAL);
        assert_null(header(&r, "Authorization"));
        aws_request_done(&r);
        aws_credentials_done(&c);
}

/* The Host the signature covers is the Host curl sends: a scheme's own port is left out. */
static void test_sigv4_endpoint_host(void **state) {
        static const struct {
                const char *url, *host;
        } cases[] = {
                {"https://ec2.us-east-1.amazonaws.com", "ec2.us-east-1.amazonaws.com"},
                {"https://vpce-1.ec2.us-east-1.vpce.amazonaws.com:443/",
                 "vpce-1.ec2.us-east-1.vpce.amazonaws.com"},
                {"http://127.0.0.1:80", "127.0.0.1"},
                {"http://127.0.0.1:8080/", "127.0.0.1:8080"},
                {"https://127.0.0.1:80", "127.0.0.1:80"},
        };
        static const char *const bad[] = {"ftp://h/",       "https://u:p@h/", "https://h/path",
                                          "https://h/?q=1", "https://h/#f",   "",
                                          "not a url"};
        AwsEndpoint e;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_int_equal(aws_endpoint_parse(cases[i].url, &e), 0);
                assert_string_equal(e.host, cases[i].host);
                aws_endpoint_done(&e);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(aws_endpoint_parse(bad[i], &e), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sigv4_aws_example),
                cmocka_unit_test(test_sigv4_uri_encode),
                cmocka_unit_test(test_sigv4_canonical_path),
                cmocka_unit_test(test_sigv4_canonical_query),
                cmocka_unit_test(test_sigv4_canonical_headers),
                cmocka_unit_test(test_sigv4_session_token_and_resign),
                cmocka_unit_test(test_sigv4_refuses),
                cmocka_unit_test(test_sigv4_endpoint_host),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
