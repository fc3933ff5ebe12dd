/* SPDX-License-Identifier: MIT */
/* DescribeVolumes and DescribeVolumeStatus for one volume (ec2.h), made by aws_call(). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws-call.h"
#include "ec2.h"
#include "time-util.h"
#include "util.h"

/* EC2's errors come as <Response><Errors>, whatever the status. */
static int parse_error(const char *body, size_t size, long status, AwsError *ret) {
        (void)status;
        return aws_parse_error(body, size, ret);
}

static int call(AwsConfig *c, const char *action, const char *volume_id, AwsHttpResponse *ret,
                AwsError *ret_error, char **ret_why) {
        _cleanup_free_ char *id = aws_uri_encode(volume_id, false), *body = NULL;

        if (!id ||
            asprintf(&body, "Action=%s&Version=" EC2_API_VERSION "&VolumeId.1=%s", action, id) < 0)
                return -ENOMEM;
        return aws_call(
                c,
                &(AwsCall){.service = "ec2",
                           .name = "EC2",
                           .endpoint = &c->ec2,
                           .method = "POST",
                           .path = "/",
                           .query = "",
                           .body = body,
                           .content_type = "application/x-www-form-urlencoded; charset=utf-8",
                           .parse_error = parse_error},
                ret, ret_error, ret_why);
}

/* An answer's verdict in words: -ENOENT (another volume's), -EPROTO (an error), -EBADMSG. */
static int answer_why(int k, const char *action, const char *volume_id, const AwsError *e,
                      char **ret_why) {
        if (k == -ENOENT)
                return aws_why(ret_why, k, "EC2's %s answer does not hold %s", action, volume_id);
        if (k == -EPROTO)
                return aws_why(ret_why, k, "EC2 answered with an error: %s: %s", e->code,
                               e->message);
        return aws_why(ret_why, k, "EC2's %s answer is not valid", action);
}

int ec2_describe_volume(AwsConfig *c, const char *volume_id, Ec2Volume *ret, AwsError *ret_error,
                        char **ret_why) {
        AwsHttpResponse a = {};
        int k = call(c, "DescribeVolumes", volume_id, &a, ret_error, ret_why);

        if (k < 0)
                return k;
        k = ec2_parse_describe_volumes(a.body, a.size, volume_id, ret, ret_error);
        aws_http_response_done(&a);
        return k < 0 ? answer_why(k, "DescribeVolumes", volume_id, ret_error, ret_why) : 0;
}

int ec2_describe_volume_status(AwsConfig *c, const char *volume_id, Ec2VolumeStatus *ret,
                               AwsError *ret_error, char **ret_why) {
        AwsHttpResponse a = {};
        int k = call(c, "DescribeVolumeStatus", volume_id, &a, ret_error, ret_why);

        if (k < 0)
                return k;
        k = ec2_parse_describe_volume_status(a.body, a.size, volume_id, ret, ret_error);
        aws_http_response_done(&a);
        return k < 0 ? answer_why(k, "DescribeVolumeStatus", volume_id, ret_error, ret_why) : 0;
}
