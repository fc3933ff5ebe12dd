/* SPDX-License-Identifier: MIT */
/*
 * ListSnapshotBlocks' pages and the EBS direct APIs' errors (src/aws/ebs-blocks.c): what AWS
 * sends, what moto sends (BlockIndex as a string, blocks unsorted, BlockSize 512), and what
 * neither should: values of the wrong type or range, trailing bytes, deep nesting, bad tokens.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ebs-blocks.h"
#include "util.h"

static int parse(const char *json, EbsBlocksPage *p) {
        return ebs_parse_blocks_page(json, strlen(json), p);
}

static void test_page(void **state) {
        EbsBlocksPage p;

        (void)state;
        assert_int_equal(parse("{\"Blocks\":[{\"BlockIndex\":0,\"BlockToken\":\"AAE=\"},"
                               "{\"BlockIndex\":7,\"BlockToken\":\"AAI=\"}],"
                               "\"ExpiryTime\":1.795e9,\"VolumeSize\":8,\"BlockSize\":524288,"
                               "\"NextToken\":\"AAEAAe+/9w==\"}\n",
                               &p),
                         0);
        assert_int_equal(p.n, 2);
        assert_int_equal(p.blocks[0], 0);
        assert_int_equal(p.blocks[1], 7);
        assert_int_equal(p.block_size, EBS_BLOCK_SIZE);
        assert_int_equal(p.volume_size_gib, 8);
        assert_int_equal(p.expiry_usec, UINT64_C(1795000000000000));
        assert_string_equal(p.next_token, "AAEAAe+/9w==");
        ebs_blocks_page_done(&p);

        /* The last page: no token; an empty snapshot: no blocks. */
        assert_int_equal(parse("{\"Blocks\":[],\"VolumeSize\":1,\"BlockSize\":524288}", &p), 0);
        assert_int_equal(p.n, 0);
        assert_null(p.blocks);
        assert_string_equal(p.next_token, "");
        assert_int_equal(p.expiry_usec, 0);
        ebs_blocks_page_done(&p);
        assert_int_equal(parse("{\"NextToken\":null,\"Blocks\":null}", &p), 0);
        assert_int_equal(p.block_size, EC2_UNKNOWN);
        assert_int_equal(p.volume_size_gib, EC2_UNKNOWN);
        ebs_blocks_page_done(&p);
}

/* moto's server mode: indexes as strings, unsorted, duplicates; BlockSize 512 (checked by
 * the caller, not here: the page says what it says). */
static void test_moto_quirks(void **state) {
        EbsBlocksPage p;

        (void)state;
        assert_int_equal(parse("{\"Blocks\":[{\"BlockIndex\":\"12\",\"BlockToken\":\"x\"},"
                               "{\"BlockIndex\":\"3\"},{\"BlockIndex\":\"12\"}],"
                               "\"VolumeSize\":1,\"BlockSize\":512,\"ExpiryTime\":\"soon\"}",
                               &p),
                         0);
        assert_int_equal(p.n, 3);
        assert_int_equal(p.blocks[0], 12);
        assert_int_equal(p.blocks[1], 3);
        assert_int_equal(p.blocks[2], 12);
        assert_int_equal(p.block_size, 512);
        assert_int_equal(p.expiry_usec, 0); /* not a number: unknown */
        ebs_blocks_page_done(&p);
}

static void test_refused(void **state) {
        static const char *const bad[] = {
                "",
                "[]",
                "{\"Blocks\":[{\"BlockIndex\":-1}]}",
                "{\"Blocks\":[{\"BlockIndex\":2147483648}]}",
                "{\"Blocks\":[{\"BlockIndex\":1.5}]}",
                "{\"Blocks\":[{\"BlockIndex\":\"1e3\"}]}",
                "{\"Blocks\":[{\"BlockIndex\":\"\"}]}",
                "{\"Blocks\":[{\"BlockIndex\":\"99999999999999999999\"}]}",
                "{\"Blocks\":[{\"BlockToken\":\"AAE=\"}]}",
                "{\"Blocks\":[7]}",
                "{\"Blocks\":{\"BlockIndex\":1}}",
                "{\"BlockSize\":0}",
                "{\"BlockSize\":\"524288\"}",
                "{\"VolumeSize\":-8}",
                "{\"NextToken\":\"a b\"}",
                "{\"NextToken\":7}",
                "{\"NextToken\":\"a\\nb\"}",
                "{\"Blocks\":[]} trailing",
                "{\"Blocks\":[]}{}",
                "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
        };
        EbsBlocksPage p;

        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                print_message("%s\n", bad[i]);
                assert_int_equal(parse(bad[i], &p), -EBADMSG);
        }
        /* A NUL inside, and a token one character too long. */
        assert_int_equal(ebs_parse_blocks_page("{}\0{}", 5, &p), -EBADMSG);
        {
                char json[EBS_TOKEN_MAX + 32], token[EBS_TOKEN_MAX + 1];

                memset(token, 'A', EBS_TOKEN_MAX);
                token[EBS_TOKEN_MAX] = '\0';
                (void)snprintf(json, sizeof(json), "{\"NextToken\":\"%s\"}", token);
                assert_int_equal(parse(json, &p), -EBADMSG);
                token[EBS_TOKEN_MAX - 1] = '\0'; /* 256: the longest a token may be */
                (void)snprintf(json, sizeof(json), "{\"NextToken\":\"%s\"}", token);
                assert_int_equal(parse(json, &p), 0);
                assert_int_equal(strlen(p.next_token), EBS_TOKEN_MAX - 1);
                ebs_blocks_page_done(&p);
        }
}

/* More blocks than a page may hold is no page. */
static void test_too_many(void **state) {
        size_t n = EBS_PAGE_BLOCKS_MAX + 1, len = 0, size = n * 20 + 64;
        _cleanup_free_ char *json = malloc(size);
        EbsBlocksPage p;

        (void)state;
        assert_non_null(json);
        len += (size_t)snprintf(json + len, size - len, "{\"Blocks\":[");
        for (size_t i = 0; i < n; i++)
                len += (size_t)snprintf(json + len, size - len, "%s{\"BlockIndex\":%zu}",
                                        i ? "," : "", i);
        len += (size_t)snprintf(json + len, size - len, "]}");
        assert_int_equal(ebs_parse_blocks_page(json, len, &p), -EBADMSG);
}

static int error(const char *json, long status, AwsError *e) {
        return ebs_parse_error(json, strlen(json), status, e);
}

static void test_errors(void **state) {
        AwsError e;
        const char *denied = "{\"Message\":\"User is not authorized\",\"Reason\":"
                             "\"DEPENDENCY_ACCESS_DENIED\"}";

        (void)state;
        assert_int_equal(error(denied, 403, &e), 0);
        assert_string_equal(e.code, "AccessDeniedException");
        assert_string_equal(e.message, "DEPENDENCY_ACCESS_DENIED: User is not authorized");
        assert_int_equal(error("{\"Reason\":\"ACCOUNT_THROTTLED\"}", 400, &e), 0);
        assert_string_equal(e.code, "RequestThrottledException");
        assert_int_equal(error("{\"__type\":\"com.amazon.coral#ValidationException\","
                               "\"Reason\":\"INVALID_PAGE_TOKEN\",\"message\":\"expired\"}",
                               400, &e),
                         0);
        assert_string_equal(e.code, "ValidationException");
        assert_string_equal(e.message, "INVALID_PAGE_TOKEN: expired");
        assert_int_equal(error("{\"Message\":\"gone\"}", 404, &e), 0);
        assert_string_equal(e.code, "ResourceNotFoundException");
        /* Not JSON (a proxy's page): the status still names it. */
        assert_int_equal(error("<html>", 503, &e), -EBADMSG);
        assert_string_equal(e.code, "InternalServerException");
        /* A type cut to nothing (a control character after the '#'): the status names it. */
        assert_int_equal(error("{\"__type\":\"com.amazon#\\u0016x\"}", 400, &e), 0);
        assert_string_equal(e.code, "ValidationException");
        /* A message with a newline is cut there: it goes into one line of a file. */
        assert_int_equal(error("{\"Message\":\"a\\nSOURCE=empty\"}", 400, &e), 0);
        assert_string_equal(e.message, "a");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_page),    cmocka_unit_test(test_moto_quirks),
                cmocka_unit_test(test_refused), cmocka_unit_test(test_too_many),
                cmocka_unit_test(test_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
