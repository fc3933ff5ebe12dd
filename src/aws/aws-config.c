/* SPDX-License-Identifier: MIT */
/* Region, endpoints and credentials from the environment and IMDSv2 (aws-config.h). */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "aws-config.h"
#include "parse.h"
#include "time-util.h"
#include "util.h"

#define IMDS_TOKEN_PATH "/latest/api/token"
#define IMDS_ROLE_PATH "/latest/meta-data/iam/security-credentials/"
#define IMDS_IDENTITY_PATH "/latest/dynamic/instance-identity/document"
#define REGION_MAX 32

void aws_config_done(AwsConfig *c) {
        free(c->region);
        aws_endpoint_done(&c->ec2);
        aws_endpoint_done(&c->ebs);
        aws_endpoint_done(&c->imds);
        aws_credentials_done(&c->credentials);
        free(c->imds_token);
        *c = (AwsConfig){};
}

int aws_why(char **ret_why, int r, const char *format, ...) {
        va_list ap;

        if (ret_why) {
                free(*ret_why);
                va_start(ap, format);
                if (vasprintf(ret_why, format, ap) < 0)
                        *ret_why = NULL;
                va_end(ap);
        }
        return r;
}

static const char *env(const char *name) {
        const char *v = getenv(name);

        return isempty(v) ? NULL : v;
}

int aws_parse_iso8601(const char *s, uint64_t *ret_usec) {
        struct tm tm = {};
        const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
        time_t t;

        if (!end)
                return -EINVAL;
        if (*end == '.') /* fractions of a second: dropped */
                end += 1 + strspn(end + 1, "0123456789");
        if (!streq(end, "Z") && !streq(end, "+00:00"))
                return -EINVAL;
        t = timegm(&tm);
        if (t < 0)
                return -EINVAL;
        *ret_usec = (uint64_t)t * USEC_PER_SEC;
        return 0;
}

static const char *json_string(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

int imds_parse_credentials(const char *text, AwsCredentials *ret) {
        json_object *o = json_tokener_parse(text);
        const char *code, *id, *secret, *token, *expiration;
        AwsCredentials c = {};
        int r = -EBADMSG;

        if (!o || !json_object_is_type(o, json_type_object))
                goto out;
        code = json_string(o, "Code");
        id = json_string(o, "AccessKeyId");
        secret = json_string(o, "SecretAccessKey");
        token = json_string(o, "Token");
        expiration = json_string(o, "Expiration");
        if (!streq_ptr(code, "Success") || isempty(id) || isempty(secret) || isempty(token) ||
            aws_parse_iso8601(expiration, &c.expiration_usec) < 0)
                goto out;
        r = -ENOMEM;
        c.access_key_id = strdup(id);
        c.secret_access_key = strdup(secret);
        c.session_token = strdup(token);
        if (!c.access_key_id || !c.secret_access_key || !c.session_token) {
                aws_credentials_done(&c);
                goto out;
        }
        aws_credentials_done(ret);
        *ret = c;
        r = 0;
out:
        json_object_put(o);
        return r;
}

/* One IMDS request: 0 with the body of a 200; -ENOENT for 404, -EACCES for 401/403. */
static int imds_request(AwsConfig *c, const char *method, const char *path, char **ret_body,
                        char **ret_why) {
        AwsRequest r = {.method = method, .host = c->imds.host, .path = path, .query = ""};
        AwsHttpOptions o = {.timeout_usec = IMDS_TIMEOUT_USEC, .no_proxy = true};
        _cleanup_free_ char *error_text = NULL;
        AwsHttpResponse a = {};
        int k;

        if (streq(method, "PUT"))
                k = aws_request_add_header(&r, "X-aws-ec2-metadata-token-ttl-seconds",
                                           STRINGIFY(IMDS_TOKEN_TTL_SEC));
        else
                k = aws_request_add_header(&r, "X-aws-ec2-metadata-token", strempty(c->imds_token));
        if (k < 0)
                return k;
        k = aws_http_send(&c->imds, &r, &o, &a, &error_text);
        aws_request_done(&r);
        if (k < 0)
                return aws_why(ret_why, k, "the instance metadata service at %s %s", c->imds.url,
                               strempty(error_text));
        if (a.status != 200) {
                k = a.status == 404 ? -ENOENT : a.status == 401 || a.status == 403 ? -EACCES : -EIO;
                aws_why(ret_why, k, "the instance metadata service answered %s%s with HTTP %ld",
                        c->imds.url, path, a.status);
                aws_http_response_done(&a);
                return k;
        }
        *ret_body = TAKE_PTR(a.body);
        aws_http_response_done(&a);
        return 0;
}

static int imds_token(AwsConfig *c, char **ret_why) {
        int r;

        if (c->imds_disabled)
                return aws_why(ret_why, -ENXIO,
                               "the instance metadata service is off (AWS_EC2_METADATA_DISABLED)");
        free(c->imds_token);
        c->imds_token = NULL;
        r = imds_request(c, "PUT", IMDS_TOKEN_PATH, &c->imds_token, ret_why);
        if (r < 0)
                return r;
        /* It goes into a header as it is. */
        for (const char *p = c->imds_token; *p; p++)
                if (*p <= ' ' || *p > '~') {
                        c->imds_token[0] = '\0';
                        return aws_why(ret_why, -EBADMSG,
                                       "the instance metadata service's session token is not one");
                }
        return isempty(c->imds_token)
                       ? aws_why(ret_why, -EBADMSG,
                                 "the instance metadata service sent no session token")
                       : 0;
}

static int imds_credentials(AwsConfig *c, char **ret_why) {
        _cleanup_free_ char *roles = NULL, *path = NULL, *body = NULL;
        size_t len;
        int r;

        r = imds_request(c, "GET", IMDS_ROLE_PATH, &roles, ret_why);
        if (r == -ENOENT)
                return aws_why(ret_why, -ENOKEY,
                               "the instance has no IAM role (no instance profile)");
        if (r < 0)
                return r;
        len = strcspn(roles, "\r\n");
        if (len == 0 || strcspn(roles, "/?#%") < len)
                return aws_why(ret_why, -EBADMSG,
                               "the instance metadata service named no valid role");
        if (asprintf(&path, IMDS_ROLE_PATH "%.*s", (int)len, roles) < 0)
                return -ENOMEM;
        r = imds_request(c, "GET", path, &body, ret_why);
        if (r < 0)
                return r;
        r = imds_parse_credentials(body, &c->credentials);
        if (r < 0)
                return aws_why(ret_why, r, "the instance role's credentials at %s are not valid",
                               path);
        return 0;
}

static bool region_valid(const char *s) {
        return !isempty(s) && strlen(s) < REGION_MAX &&
               strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(s);
}

static int imds_region(AwsConfig *c, char **ret_why) {
        _cleanup_free_ char *body = NULL;
        json_object *o;
        const char *region;
        int r = imds_request(c, "GET", IMDS_IDENTITY_PATH, &body, ret_why);

        if (r < 0)
                return r;
        o = json_tokener_parse(body);
        region = o ? json_string(o, "region") : NULL;
        if (region_valid(region))
                c->region = strdup(region);
        json_object_put(o);
        if (!c->region)
                return aws_why(ret_why, -EBADMSG, "the instance identity document names no region");
        return 0;
}

/* The service's endpoint: AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL, or AWS's own. */
static int service_endpoint(AwsConfig *c, const char *service, const char *variable,
                            AwsEndpoint *ret, char **ret_why) {
        const char *url = env(variable), *from = variable;
        _cleanup_free_ char *standard = NULL;
        int r;

        if (!url) {
                url = env("AWS_ENDPOINT_URL");
                from = "AWS_ENDPOINT_URL";
        }
        if (!url) {
                if (asprintf(&standard, "https://%s.%s.%s", service, c->region,
                             strncmp(c->region, "cn-", 3) == 0 ? "amazonaws.com.cn"
                                                               : "amazonaws.com") < 0)
                        return -ENOMEM;
                url = standard;
                from = NULL;
        }
        r = aws_endpoint_parse(url, ret);
        if (r < 0)
                return aws_why(ret_why, r, "%s%s'%s' is not an http or https endpoint",
                               strempty(from), from ? "=" : "", url);
        return 0;
}

int aws_config_load(AwsConfig *c, char **ret_why) {
        const char *imds = env("AWS_EC2_METADATA_SERVICE_ENDPOINT"),
                   *disabled = env("AWS_EC2_METADATA_DISABLED"), *id = env("AWS_ACCESS_KEY_ID"),
                   *secret = env("AWS_SECRET_ACCESS_KEY"),
                   *region = env("AWS_REGION") ?: env("AWS_DEFAULT_REGION");
        int r;

        *c = (AwsConfig){.imds_disabled = disabled && strcasecmp(disabled, "true") == 0};
        r = aws_endpoint_parse(imds ?: IMDS_DEFAULT_ENDPOINT, &c->imds);
        if (r < 0)
                return aws_why(ret_why, r,
                               "AWS_EC2_METADATA_SERVICE_ENDPOINT='%s' is not an http endpoint",
                               imds);
        if (region && !region_valid(region))
                return aws_why(ret_why, -EINVAL, "%s='%s' is not a region name",
                               env("AWS_REGION") ? "AWS_REGION" : "AWS_DEFAULT_REGION",
                               CESCAPE(region, SIZE_MAX, 64));
        if (!id != !secret)
                return aws_why(ret_why, -EINVAL,
                               "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together");
        if (id) {
                const char *token = env("AWS_SESSION_TOKEN");

                c->credentials_fixed = true;
                c->credentials.access_key_id = strdup(id);
                c->credentials.secret_access_key = strdup(secret);
                c->credentials.session_token = token ? strdup(token) : NULL;
                if (!c->credentials.access_key_id || !c->credentials.secret_access_key ||
                    (token && !c->credentials.session_token))
                        return -ENOMEM;
        }
        if (!id || !region) {
                r = imds_token(c, ret_why);
                if (r < 0)
                        return r;
        }
        if (!id) {
                r = imds_credentials(c, ret_why);
                if (r < 0)
                        return r;
        }
        if (region) {
                c->region = strdup(region);
                if (!c->region)
                        return -ENOMEM;
        } else {
                r = imds_region(c, ret_why);
                if (r < 0)
                        return r;
        }
        r = service_endpoint(c, "ec2", "AWS_ENDPOINT_URL_EC2", &c->ec2, ret_why);
        if (r < 0)
                return r;
        return service_endpoint(c, "ebs", "AWS_ENDPOINT_URL_EBS", &c->ebs, ret_why);
}

int aws_config_refresh_credentials(AwsConfig *c, uint64_t now_usec, char **ret_why) {
        int r;

        if (c->credentials_fixed || c->credentials.expiration_usec == 0 ||
            c->credentials.expiration_usec > now_usec + AWS_CREDENTIALS_REFRESH_USEC)
                return 0;
        r = imds_credentials(c, ret_why);
        if (r == -EACCES) { /* the session token expired: a new one, once */
                r = imds_token(c, ret_why);
                if (r >= 0)
                        r = imds_credentials(c, ret_why);
        }
        return r;
}
