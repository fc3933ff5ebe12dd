/* SPDX-License-Identifier: MIT */
/*
 * EC2's answers (src/aws/ec2-xml.c), written after the shapes of the EC2 2016-11-15 service
 * model: a volume from a snapshot, one created empty, a fast-restored one, initialization
 * states, errors, and hostile input (another volume's answer, an attachment's volumeId, a DTD,
 * huge and truncated values).
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

#include "ec2-xml.h"

#define VOL "vol-0123456789abcdef0"
#define NS "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\""

/* A DescribeVolumes answer with one volume whose item ends with @fields. */
static char *volumes_answer(const char *volume_id, const char *fields) {
        char *s;

        assert_true(asprintf(&s,
                             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                             "<DescribeVolumesResponse " NS ">\n"
                             "  <requestId>59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId>\n"
                             "  <volumeSet><item>\n"
                             "    <volumeId>%s</volumeId><size>80</size>\n"
                             "    <availabilityZone>us-east-1a</availabilityZone>\n"
                             "    <status>in-use</status>\n"
                             "    <attachmentSet><item><volumeId>vol-attachment</volumeId>"
                             "<instanceId>i-1</instanceId><device>/dev/sdf</device>"
                             "<status>attached</status></item></attachmentSet>\n"
                             "    <volumeType>gp3</volumeType>%s\n"
                             "  </item></volumeSet>\n"
                             "</DescribeVolumesResponse>\n",
                             volume_id, fields) > 0);
        return s;
}

static int parse_volume(const char *xml, Ec2Volume *v) {
        return ec2_parse_describe_volumes(xml, strlen(xml), VOL, v, NULL);
}

static void test_ec2_xml_volume_from_snapshot(void **state) {
        char *xml = volumes_answer(VOL, "<snapshotId>snap-0abc</snapshotId>"
                                        "<fastRestored>false</fastRestored>");
        Ec2Volume v;

        assert_int_equal(parse_volume(xml, &v), 0);
        assert_string_equal(v.volume_id, VOL);
        assert_string_equal(v.snapshot_id, "snap-0abc");
        assert_string_equal(v.state, "in-use"); /* not the attachment's "attached" */
        assert_int_equal(v.size_gib, 80);
        assert_int_equal(v.fast_restored, 0);
        assert_int_equal(v.initialization_rate, EC2_UNKNOWN);
        free(xml);
}

static void test_ec2_xml_volume_empty_and_fast_restored(void **state) {
        char *empty = volumes_answer(VOL, "<snapshotId/>"), *absent = volumes_answer(VOL, ""),
             *fsr = volumes_answer(VOL, "<snapshotId>snap-1</snapshotId>"
                                        "<fastRestored>true</fastRestored>"
                                        "<volumeInitializationRate>300</volumeInitializationRate>");
        Ec2Volume v;

        assert_int_equal(parse_volume(empty, &v), 0);
        assert_string_equal(v.snapshot_id, "");
        assert_int_equal(v.fast_restored, EC2_UNKNOWN);
        /* EC2 always sends <snapshotId/>: a volume without it is not "created empty" but an
         * answer we do not understand (taken for empty, the volume would never be read) */
        assert_int_equal(parse_volume(absent, &v), -EBADMSG);
        assert_int_equal(parse_volume(fsr, &v), 0);
        assert_int_equal(v.fast_restored, 1);
        assert_int_equal(v.initialization_rate, 300);
        free(empty);
        free(absent);
        free(fsr);
}

static void test_ec2_xml_volume_not_ours(void **state) {
        /* Another volume's answer, or an attachment's volumeId alone: never this volume. */
        char *other = volumes_answer("vol-0ffffffffffffffff", "<snapshotId>snap-1</snapshotId>"),
             *attachment_only = volumes_answer("vol-attachment", "<snapshotId/>");
        const char *none = "<DescribeVolumesResponse " NS "><requestId>r</requestId>"
                           "<volumeSet/></DescribeVolumesResponse>";
        Ec2Volume v;

        assert_int_equal(parse_volume(other, &v), -ENOENT);
        assert_int_equal(ec2_parse_describe_volumes(attachment_only, strlen(attachment_only),
                                                    "vol-attachment", &v, NULL),
                         0);
        assert_string_equal(v.state, "in-use");
        assert_int_equal(parse_volume(attachment_only, &v), -ENOENT);
        assert_int_equal(parse_volume(none, &v), -ENOENT);
        free(other);
        free(attachment_only);
}

static void test_ec2_xml_error_answer(void **state) {
        const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error>"
                          "<Code>UnauthorizedOperation</Code><Message>You are not authorized to "
                          "perform this operation.</Message></Error></Errors>"
                          "<RequestID>b1c2</RequestID></Response>";
        AwsError e = {};
        Ec2Volume v;

        assert_int_equal(ec2_parse_describe_volumes(xml, strlen(xml), VOL, &v, &e), -EPROTO);
        assert_string_equal(e.code, "UnauthorizedOperation");
        assert_string_equal(e.message, "You are not authorized to perform this operation.");
        e = (AwsError){};
        assert_int_equal(aws_parse_error(xml, strlen(xml), &e), 0);
        assert_string_equal(e.code, "UnauthorizedOperation");
        /* an error without a code is not an answer */
        xml = "<Response><Errors><Error><Message>m</Message></Error></Errors></Response>";
        assert_int_equal(ec2_parse_describe_volumes(xml, strlen(xml), VOL, &v, &e), -EBADMSG);
        assert_int_equal(aws_parse_error(xml, strlen(xml), &e), -EBADMSG);
}

static void test_ec2_xml_status(void **state) {
        const char *xml =
                "<DescribeVolumeStatusResponse " NS "><requestId>r</requestId><volumeStatusSet>"
                "<item><volumeId>" VOL "</volumeId><availabilityZone>us-east-1a</availabilityZone>"
                "<volumeStatus><status>ok</status><details>"
                "<item><name>io-enabled</name><status>passed</status></item>"
                "<item><name>initialization-state</name><status>initializing</status></item>"
                "</details></volumeStatus><eventsSet/><actionsSet/>"
                "<initializationStatusDetails><initializationType>provisioned-rate"
                "</initializationType><progress>42</progress>"
                "<estimatedTimeToCompleteInSeconds>1800</estimatedTimeToCompleteInSeconds>"
                "</initializationStatusDetails></item></volumeStatusSet>"
                "</DescribeVolumeStatusResponse>";
        Ec2VolumeStatus s;

        assert_int_equal(ec2_parse_describe_volume_status(xml, strlen(xml), VOL, &s, NULL), 0);
        assert_string_equal(s.initialization_state, "initializing");
        assert_string_equal(s.initialization_type, "provisioned-rate");
        assert_int_equal(s.progress, 42);
        assert_int_equal(s.eta_seconds, 1800);
        assert_int_equal(ec2_parse_describe_volume_status(xml, strlen(xml), "vol-other", &s, NULL),
                         -ENOENT);
}

static void test_ec2_xml_status_without_initialization(void **state) {
        const char *xml = "<DescribeVolumeStatusResponse><volumeStatusSet><item><volumeId>" VOL
                          "</volumeId><volumeStatus><status>ok</status></volumeStatus></item>"
                          "</volumeStatusSet></DescribeVolumeStatusResponse>";
        Ec2VolumeStatus s;

        assert_int_equal(ec2_parse_describe_volume_status(xml, strlen(xml), VOL, &s, NULL), 0);
        assert_string_equal(s.initialization_state, "");
        assert_int_equal(s.progress, EC2_UNKNOWN);
        assert_int_equal(s.eta_seconds, EC2_UNKNOWN);
}

static void test_ec2_xml_hostile(void **state) {
        static const char *const bad[] = {
                "",
                "not xml",
                "<DescribeVolumesResponse><volumeSet><item><volumeId>" VOL "</volumeId>", /* cut */
                "<Other/>",
                "<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;\">]>"
                "<DescribeVolumesResponse>&lol2;</DescribeVolumesResponse>",
                /* an id with a space: the findings file could not hold it */
                "<DescribeVolumesResponse><volumeSet><item><volumeId>" VOL "</volumeId>"
                "<snapshotId> snap-1 </snapshotId></item></volumeSet></DescribeVolumesResponse>",
                "<DescribeVolumesResponse><volumeSet><item><volumeId>" VOL "</volumeId><size>-1"
                "</size></item></volumeSet></DescribeVolumesResponse>",
                "<DescribeVolumesResponse><volumeSet><item><volumeId>" VOL "</volumeId><size>9x"
                "</size></item></volumeSet></DescribeVolumesResponse>",
                "<DescribeVolumesResponse><volumeSet><item><volumeId>" VOL
                "</volumeId><fastRestored>"
                "yes</fastRestored></item></volumeSet></DescribeVolumesResponse>",
                "<DescribeVolumesResponse><volumeSet><item><volumeId>" VOL "</volumeId><size>"
                "99999999999999999999999</size></item></volumeSet></DescribeVolumesResponse>",
        };
        Ec2Volume v;
        char *deep, *long_id;
        size_t n = 0;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(parse_volume(bad[i], &v), -EBADMSG);

        /* well-formed, but deeper than any answer */
        deep = malloc(40 * 7 + 64);
        deep[0] = '\0';
        strcat(deep, "<DescribeVolumesResponse>");
        for (int i = 0; i < 40; i++)
                strcat(deep, "<a>");
        for (int i = 0; i < 40; i++)
                strcat(deep, "</a>");
        strcat(deep, "</DescribeVolumesResponse>");
        assert_int_equal(parse_volume(deep, &v), -EBADMSG);
        free(deep);

        long_id = malloc(4096);
        n += (size_t)sprintf(long_id, "<DescribeVolumesResponse><volumeSet><item><volumeId>");
        memset(long_id + n, 'x', 2000);
        strcpy(long_id + n + 2000, "</volumeId></item></volumeSet></DescribeVolumesResponse>");
        assert_int_equal(parse_volume(long_id, &v), -EBADMSG);
        free(long_id);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ec2_xml_volume_from_snapshot),
                cmocka_unit_test(test_ec2_xml_volume_empty_and_fast_restored),
                cmocka_unit_test(test_ec2_xml_volume_not_ours),
                cmocka_unit_test(test_ec2_xml_error_answer),
                cmocka_unit_test(test_ec2_xml_status),
                cmocka_unit_test(test_ec2_xml_status_without_initialization),
                cmocka_unit_test(test_ec2_xml_hostile),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
