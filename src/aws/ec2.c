/* SPDX-License-Identifier: MIT */
/* DescribeVolumes and DescribeVolumeStatus for one volume, with retries (ec2.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ec2.h"
#include "time-util.h"
#include "util.h"

static const char *const retryable_codes[] = {
        "RequestLimitExceeded", "Throttling",      "ThrottlingException", "RequestThrottled",
        "InternalError",        "InternalFailure", "ServiceUnavailable",  "Unavailable",
};

bool aws_error_retryable(const char *code, long status) {
        if (status >= 500 || status == 429)
                return true;
        for (size_t i = 0; code && i < ELEMENTSOF(retryable_codes); i++)
                if (streq(code, retryable_codes[i]))
                        return true;
        return false;
}

/* Full jitter: a random wait up to base × 2^attempt, capped. */
static void backoff(unsigned attempt) {
        uint64_t ceiling = MIN(AWS_BACKOFF_CAP_USEC, AWS_BACKOFF_BASE_USEC << MIN(attempt, 16u));
        uint64_t r = 0;

        if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
                r = (uint64_t)now_usec(CLOCK_MONOTONIC);
        (void)usleep((useconds_t)(r % (ceiling + 1)));
}

/* One attempt: 0 with a 200's body; -EPROTO with the error; a transport -errno. */
static int attempt(AwsConfig *c, const char *body, AwsHttpResponse *ret, AwsError *ret_error,
                   long *ret_status, char **ret_why) {
        AwsRequest r = {.method = "POST",
                        .host = c->ec2.host,
                        .path = "/",
                        .query = "",
                        .body = body,
                        .body_size = strlen(body)};
        AwsHttpOptions o = {.timeout_usec = AWS_REQUEST_TIMEOUT_USEC};
        _cleanup_free_ char *error_text = NULL;
        int k;

        *ret_status = 0;
        k = aws_config_refresh_credentials(c, now_usec(CLOCK_REALTIME), ret_why);
        if (k < 0)
                return k;
        k = aws_request_add_header(&r, "Content-Type",
                                   "application/x-www-form-urlencoded; charset=utf-8");
        if (k >= 0) {
                k = sigv4_sign(&r, &c->credentials, c->region, "ec2", time(NULL));
                if (k == -EINVAL)
                        aws_why(ret_why, k,
                                "the credentials cannot be signed with: an access key id that is "
                                "not letters and digits, or a newline in the secret or token");
        }
        if (k >= 0) {
                k = aws_http_send(&c->ec2, &r, &o, ret, &error_text);
                if (k < 0)
                        aws_why(ret_why, k, "EC2 at %s %s", c->ec2.url, strempty(error_text));
        }
        aws_request_done(&r);
        if (k < 0)
                return k;
        *ret_status = ret->status;
        if (ret->status == 200)
                return 0;
        if (aws_parse_error(ret->body, ret->size, ret_error) < 0)
                *ret_error = (AwsError){};
        k = aws_why(ret_why, -EPROTO, "EC2 answered HTTP %ld%s%s%s%s", ret->status,
                    ret_error->code[0] ? ": " : "", ret_error->code,
                    ret_error->message[0] ? ": " : "", ret_error->message);
        aws_http_response_done(ret);
        return k;
}

static int call(AwsConfig *c, const char *action, const char *volume_id, AwsHttpResponse *ret,
                AwsError *ret_error, char **ret_why) {
        _cleanup_free_ char *id = aws_uri_encode(volume_id, false), *body = NULL;
        int k = -EIO;

        if (!id ||
            asprintf(&body, "Action=%s&Version=" EC2_API_VERSION "&VolumeId.1=%s", action, id) < 0)
                return -ENOMEM;
        for (unsigned i = 0; i < AWS_ATTEMPTS_MAX; i++) {
                long status;

                if (i > 0)
                        backoff(i);
                *ret_error = (AwsError){};
                k = attempt(c, body, ret, ret_error, &status, ret_why);
                if (k >= 0)
                        return 0;
                if (k == -EPROTO && !aws_error_retryable(ret_error->code, status))
                        return k;
                if (k != -EPROTO && k != -ETIMEDOUT && k != -ECONNREFUSED && k != -EIO)
                        return k; /* no credentials, no memory, a body too large */
        }
        if (ret_why && *ret_why) {
                _cleanup_free_ char *last = TAKE_PTR(*ret_why);

                aws_why(ret_why, k, "%s (%u attempts; giving up)", last, AWS_ATTEMPTS_MAX);
        }
        return k;
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
