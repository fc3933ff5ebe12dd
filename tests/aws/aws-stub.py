#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stand-in for IMDSv2 and the EC2 Query API on 127.0.0.1, scripted per test case.

Usage: aws-stub.py SCENARIO.json PORT-FILE LOG-FILE

It listens on an ephemeral port of 127.0.0.1 only, writes the port to PORT-FILE, and logs one
JSON line per request to LOG-FILE. Every EC2 request's SigV4 signature is checked with
botocore's signer over the headers the request says it signed (as AWS checks it); a bad one
gets AWS's SignatureDoesNotMatch. The scenario (JSON) may hold:
  imds: false                 no IMDS at all (404 everywhere under /latest)
  role, region                the instance's role and region (default "ebs-hydrate", "us-east-1")
  credentials_ttl             seconds the role's credentials live (default 3600)
  volumes: {id: {snapshot, source_volume, fast_restored, init_rate, init_state, init_type,
                 progress, eta, progress_step, status_lag}}
                              progress_step: each DescribeVolumeStatus after the first adds this
                              to progress (eta shrinks in step); at 100 init_state is "completed"
  deny: [Action, ...]         these actions answer UnauthorizedOperation (with deny_message);
                              ListSnapshotBlocks answers AccessDeniedException
  throttle: N                 the first N EC2 requests answer 503 RequestLimitExceeded
  fail500: N                  the first N EC2 requests answer 500 InternalError
  slow: seconds               every EC2 request waits this long first
  redirect: true              EC2 answers 307 to another address
  huge: true                  EC2 answers a body larger than any answer may be
  wrong_volume: true          DescribeVolumes answers for another volume
  snapshots: {id: {volume_size, block_size, blocks: [i, ...] | ranges: [[first, end), ...],
                   page_size, index_as_string, shuffle, expire_after_pages, throttle_pages,
                   kms_denied, slow_pages}}
                              ListSnapshotBlocks (GET /snapshots/ID/blocks, REST-JSON): pages of
                              at most page_size (default: the request's maxResults) blocks; the
                              token of page expire_after_pages (and later ones) is refused once
                              as INVALID_PAGE_TOKEN, as an expired token is; the first
                              throttle_pages requests answer RequestThrottledException;
                              kms_denied: every request answers AccessDeniedException
                              DEPENDENCY_ACCESS_DENIED (an encrypted snapshot whose KMS key the
                              caller may not use); slow_pages: seconds each page waits first
Every request is logged with the service its signature names (the client must sign EC2's as
"ec2", the EBS direct APIs' as "ebs"); a signature for another service is refused as bad.
"""
import datetime
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock
from urllib.parse import parse_qs

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

NS = 'xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"'
ENV_KEY = ("AKIDSTUBENV", "stub/env+secret=")  # what the tests export as AWS_* variables
scenario = {}
lock = threading.Lock()
counters = {"ec2": 0, "credentials": 0}
issued = {}  # access key id -> (secret, token)


def error_xml(code, message):
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{code}"
            f"</Code><Message>{message}</Message></Error></Errors><RequestID>{uuid.uuid4()}"
            "</RequestID></Response>")


def volume_xml(vid, v):
    snap = f"<snapshotId>{v['snapshot']}</snapshotId>" if v.get("snapshot") else "<snapshotId/>"
    extra = ""
    if "fast_restored" in v:
        extra += f"<fastRestored>{'true' if v['fast_restored'] else 'false'}</fastRestored>"
    if v.get("source_volume"):
        extra += f"<sourceVolumeId>{v['source_volume']}</sourceVolumeId>"
    if "init_rate" in v:
        extra += f"<volumeInitializationRate>{v['init_rate']}</volumeInitializationRate>"
    return (f"<item><volumeId>{vid}</volumeId><size>{v.get('size', 8)}</size>{snap}"
            "<availabilityZone>us-east-1a</availabilityZone><status>in-use</status>"
            f"<createTime>2026-11-26T10:00:00.000Z</createTime><attachmentSet><item><volumeId>{vid}"
            "</volumeId><instanceId>i-0123</instanceId><device>/dev/sdf</device><status>attached"
            f"</status></item></attachmentSet><volumeType>gp3</volumeType>{extra}</item>")


def advance(v):
    """AWS's initialization moves on by progress_step at each ask after the first; with
    status_lag N the first N asks do not show it at all (DescribeVolumeStatus lags)."""
    with lock:
        v["asked"] = v.get("asked", 0) + 1
    if "progress_step" not in v or v.get("init_state") != "initializing":
        return
    with lock:
        if v["asked"] == 1:
            return
        before = v.get("progress", 0)
        v["progress"] = min(100, before + v["progress_step"])
        if "eta" in v and before < 100:
            v["eta"] = int(v["eta"] * (100 - v["progress"]) / (100 - before))
        if v["progress"] >= 100:
            v["init_state"] = "completed"
            v.pop("eta", None)


def status_xml(vid, v):
    details = "<item><name>io-enabled</name><status>passed</status></item>"
    if v.get("status_lag", 0) >= v.get("asked", 1):  # AWS has not shown it yet
        v = {k: x for k, x in v.items() if k not in ("init_state", "init_type")}
    if v.get("init_state"):
        details += f"<item><name>initialization-state</name><status>{v['init_state']}</status></item>"
    init = ""
    if v.get("init_type"):
        init = f"<initializationStatusDetails><initializationType>{v['init_type']}</initializationType>"
        if "progress" in v:
            init += f"<progress>{v['progress']}</progress>"
        if "eta" in v:
            init += f"<estimatedTimeToCompleteInSeconds>{v['eta']}</estimatedTimeToCompleteInSeconds>"
        init += "</initializationStatusDetails>"
    return (f"<item><volumeId>{vid}</volumeId><availabilityZone>us-east-1a</availabilityZone>"
            f"<volumeStatus><status>ok</status><details>{details}</details></volumeStatus>"
            f"<eventsSet/><actionsSet/>{init}</item>")


def signed_service(handler):
    """The service the request's credential scope names, or None."""
    try:
        return handler.headers.get("Authorization", "").split("Credential=")[1].split(",")[0] \
            .split("/")[3]
    except IndexError:
        return None


def signature_ok(handler, body, want_service):
    """Recompute the signature over the headers the request signed, with the secret we know."""
    auth = handler.headers.get("Authorization", "")
    try:
        cred = auth.split("Credential=")[1].split(",")[0]
        akid, day, region, service, _ = cred.split("/")
        signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
        amz_date = handler.headers["X-Amz-Date"]
    except (IndexError, KeyError, ValueError):
        return False
    if service != want_service:
        return False
    if akid == ENV_KEY[0]:
        secret, token = ENV_KEY[1], None
    elif akid in issued:
        secret, token = issued[akid]
    else:
        return False
    if token is not None and handler.headers.get("X-Amz-Security-Token") != token:
        return False
    headers = {k: handler.headers[k] for k in handler.headers.keys() if k.lower() in signed}
    headers.pop("X-Amz-Date", None)
    headers.pop("X-Amz-Security-Token", None)
    req = AWSRequest(method=handler.command, url=f"http://{handler.headers['Host']}{handler.path}",
                     data=body, headers=headers)
    now = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    with mock.patch("botocore.auth.get_current_datetime", return_value=now):
        SigV4Auth(Credentials(akid, secret, token), service, region).add_auth(req)
    return req.headers["Authorization"] == auth and day == amz_date[:8]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="text/xml;charset=UTF-8", extra=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def record(self, **kw):
        with open(sys.argv[3], "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(method=self.command, path=self.path, **kw)) + "\n")

    def imds(self):
        token = scenario.setdefault("_token", str(uuid.uuid4()))
        if not scenario.get("imds", True):
            return self.send(404, "", "text/plain")
        if self.command == "PUT" and self.path == "/latest/api/token":
            if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return self.send(400, "", "text/plain")
            return self.send(200, token, "text/plain")
        if self.headers.get("X-aws-ec2-metadata-token") != token:
            return self.send(401, "", "text/plain")
        role = scenario.get("role", "ebs-hydrate")
        if self.path == "/latest/meta-data/iam/security-credentials/":
            return self.send(200, role + "\n", "text/plain")
        if self.path == "/latest/meta-data/iam/security-credentials/" + role:
            with lock:
                counters["credentials"] += 1
                n = counters["credentials"]
            akid, secret, stoken = f"ASIASTUB{n:04d}", f"secret/{n}+=", f"token{n}+/="
            issued[akid] = (secret, stoken)
            expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
                seconds=scenario.get("credentials_ttl", 3600))
            return self.send(200, json.dumps({
                "Code": "Success", "LastUpdated": "2026-11-26T10:00:00Z", "Type": "AWS-HMAC",
                "AccessKeyId": akid, "SecretAccessKey": secret, "Token": stoken,
                "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}), "text/plain")
        if self.path == "/latest/dynamic/instance-identity/document":
            return self.send(200, json.dumps({"region": scenario.get("region", "us-east-1"),
                                              "instanceId": "i-0123"}), "text/plain")
        return self.send(404, "", "text/plain")

    def ec2(self, body):
        form = {k: v[0] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
        ok = signature_ok(self, body, "ec2")
        self.record(action=form.get("Action"), volume=form.get("VolumeId.1"), signature_ok=ok,
                    service=signed_service(self), token=self.headers.get("X-Amz-Security-Token"))
        with lock:
            counters["ec2"] += 1
            n = counters["ec2"]
        if scenario.get("slow"):
            time.sleep(scenario["slow"])
        if not ok:
            return self.send(403, error_xml("SignatureDoesNotMatch", "The request signature we "
                                            "calculated does not match the signature you provided."))
        if n <= scenario.get("throttle", 0):
            return self.send(503, error_xml("RequestLimitExceeded", "Request limit exceeded."))
        if n <= scenario.get("fail500", 0):
            return self.send(500, error_xml("InternalError", "An internal error has occurred."))
        if scenario.get("redirect"):
            return self.send(307, "", extra={"Location": "http://127.0.0.2/"})
        if scenario.get("huge"):
            return self.send(200, "<DescribeVolumesResponse>" + "x" * (5 << 20))
        action, vid = form.get("Action"), form.get("VolumeId.1")
        if form.get("Version") != "2016-11-15":
            return self.send(400, error_xml("InvalidParameterValue", "Bad Version."))
        if action in scenario.get("deny", []):
            return self.send(403, error_xml("UnauthorizedOperation", scenario.get(
                "deny_message", "You are not authorized to perform this operation.")))
        volumes = scenario.get("volumes", {})
        if vid not in volumes:
            return self.send(400, error_xml("InvalidVolume.NotFound",
                                            f"The volume '{vid}' does not exist."))
        shown = "vol-0ffffffffffffffff" if scenario.get("wrong_volume") else vid
        if action == "DescribeVolumes":
            return self.send(200, f"<DescribeVolumesResponse {NS}><requestId>{uuid.uuid4()}"
                             f"</requestId><volumeSet>{volume_xml(shown, volumes[vid])}</volumeSet>"
                             "</DescribeVolumesResponse>")
        if action == "DescribeVolumeStatus":
            advance(volumes[vid])
            return self.send(200, f"<DescribeVolumeStatusResponse {NS}><requestId>{uuid.uuid4()}"
                             f"</requestId><volumeStatusSet>{status_xml(shown, volumes[vid])}"
                             "</volumeStatusSet></DescribeVolumeStatusResponse>")
        return self.send(400, error_xml("InvalidAction", "Unknown action."))

    def ebs(self, body):
        """ListSnapshotBlocks: the blocks of a scripted snapshot, page by page."""
        import base64
        from urllib.parse import urlsplit
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        ok = signature_ok(self, body, "ebs")
        sid = url.path.split("/")[2]
        self.record(action="ListSnapshotBlocks", snapshot=sid, token=query.get("pageToken"),
                    max_results=query.get("maxResults"), signature_ok=ok,
                    service=signed_service(self))
        with lock:
            counters["ebs"] = counters.get("ebs", 0) + 1
            n = counters["ebs"]
        if not ok:
            return self.send(403, json.dumps({"message": "The request signature we calculated "
                                              "does not match the signature you provided."}),
                             "application/json")
        if "ListSnapshotBlocks" in scenario.get("deny", []):
            return self.send(403, json.dumps({"Message": "User is not authorized to perform "
                                              "ebs:ListSnapshotBlocks.",
                                              "Reason": "UNAUTHORIZED_ACCOUNT"}), "application/json")
        snap = scenario.get("snapshots", {}).get(sid)
        if snap and snap.get("kms_denied"):
            return self.send(403, json.dumps({"Message": "Access to the KMS key is denied.",
                                              "Reason": "DEPENDENCY_ACCESS_DENIED"}),
                             "application/json")
        if snap and snap.get("slow_pages"):
            time.sleep(snap["slow_pages"])
        if snap is None:
            return self.send(404, json.dumps({"Message": f"The snapshot '{sid}' does not exist.",
                                              "Reason": "SNAPSHOT_NOT_FOUND"}), "application/json")
        if n <= snap.get("throttle_pages", 0):
            return self.send(400, json.dumps({"Message": "Rate exceeded",
                                              "Reason": "ACCOUNT_THROTTLED"}), "application/json")
        blocks = list(snap.get("blocks", []))
        for first, end in snap.get("ranges", []):
            blocks.extend(range(first, end))
        if snap.get("shuffle"):
            import random
            random.Random(7).shuffle(blocks)
        size = int(snap.get("page_size") or query.get("maxResults", 10000))
        offset, gen = 0, 0
        if query.get("pageToken"):
            try:
                offset, gen = map(int, base64.b64decode(query["pageToken"]).decode().split(":"))
            except ValueError:
                offset = -1
            expire = snap.get("expire_after_pages")
            with lock:
                expired = expire is not None and offset >= expire * size and not snap.get("expired")
                if expired:
                    snap["expired"] = True
            if offset < 0 or expired:
                return self.send(400, json.dumps({"Message": "The pagination token is invalid.",
                                                  "Reason": "INVALID_PAGE_TOKEN"}),
                                 "application/json")
        page = blocks[offset:offset + size]
        answer = {"Blocks": [{"BlockIndex": str(b) if snap.get("index_as_string") else b,
                              "BlockToken": "AAE="} for b in page],
                  "ExpiryTime": time.time() + 3600, "VolumeSize": snap.get("volume_size", 1),
                  "BlockSize": snap.get("block_size", 524288)}
        if offset + size < len(blocks):
            answer["NextToken"] = base64.b64encode(f"{offset + size}:{gen}".encode()).decode()
        return self.send(200, json.dumps(answer), "application/json")

    def handle_any(self):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length) if length else b""
        if self.path.startswith("/latest/"):
            self.record()
            return self.imds()
        if self.command == "POST" and self.path == "/":
            return self.ec2(body)
        if self.command == "GET" and self.path.startswith("/snapshots/"):
            return self.ebs(body)
        return self.send(404, "")

    do_GET = do_PUT = do_POST = handle_any


def main():
    global scenario
    with open(sys.argv[1], encoding="utf-8") as f:
        scenario = json.load(f)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[2] + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    server.serve_forever()


if __name__ == "__main__":
    main()
