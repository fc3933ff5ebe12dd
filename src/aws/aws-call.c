/* SPDX-License-Identifier: MIT */
/* One signed AWS API call with deadlines, retries, backoff and jitter (aws-call.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "aws-call.h"
#include "time-util.h"
#include "util.h"

static const char *const retryable_codes[] = {
        "RequestLimitExceeded",    "Throttling",    "ThrottlingException",
        "RequestThrottled",        "InternalError", "InternalFailure",
        "ServiceUnavailable",      "Unavailable",   "RequestThrottledException",
        "InternalServerException",
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
static int attempt(AwsConfig *c, const AwsCall *call, AwsHttpResponse *ret, AwsError *ret_error,
                   long *ret_status, char **ret_why) {
        AwsRequest r = {.method = call->method,
                        .host = call->endpoint->host,
                        .path = call->path,
                        .query = call->query,
                        .body = call->body,
                        .body_size = call->body ? strlen(call->body) : 0};
        AwsHttpOptions o = {.timeout_usec = AWS_REQUEST_TIMEOUT_USEC};
        _cleanup_free_ char *error_text = NULL;
        int k;

        *ret_status = 0;
        k = aws_config_refresh_credentials(c, now_usec(CLOCK_REALTIME), ret_why);
        if (k < 0)
                return k;
        if (call->content_type)
                k = aws_request_add_header(&r, "Content-Type", call->content_type);
        if (k >= 0) {
                k = sigv4_sign(&r, &c->credentials, c->region, call->service, time(NULL));
                if (k == -EINVAL)
                        aws_why(ret_why, k,
                                "the credentials cannot be signed with: an access key id that is "
                                "not letters and digits, or a newline in the secret or token");
        }
        if (k >= 0) {
                k = aws_http_send(call->endpoint, &r, &o, ret, &error_text);
                if (k < 0)
                        aws_why(ret_why, k, "%s at %s %s", call->name, call->endpoint->url,
                                strempty(error_text));
        }
        aws_request_done(&r);
        if (k < 0)
                return k;
        *ret_status = ret->status;
        if (ret->status == 200)
                return 0;
        if (call->parse_error(ret->body, ret->size, ret->status, ret_error) < 0 &&
            !ret_error->code[0])
                *ret_error = (AwsError){};
        k = aws_why(ret_why, -EPROTO, "%s answered HTTP %ld%s%s%s%s", call->name, ret->status,
                    ret_error->code[0] ? ": " : "", ret_error->code,
                    ret_error->message[0] ? ": " : "", ret_error->message);
        aws_http_response_done(ret);
        return k;
}

int aws_call(AwsConfig *c, const AwsCall *call, AwsHttpResponse *ret, AwsError *ret_error,
             char **ret_why) {
        int k = -EIO;

        for (unsigned i = 0; i < AWS_ATTEMPTS_MAX; i++) {
                long status;

                if (i > 0)
                        backoff(i);
                *ret_error = (AwsError){};
                k = attempt(c, call, ret, ret_error, &status, ret_why);
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
