#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Our SigV4 signer (src/aws/sigv4.c, through tests/tools/aws-sign) against botocore's SigV4Auth,
byte for byte: the requests the AWS helper sends (EC2 Query API POSTs, EBS direct API GETs with
page tokens) and many generated ones with '+', '/', '=', spaces, odd paths, repeated query keys,
white space in header values and session tokens. Nothing is sent anywhere.

Usage: sigv4-botocore.py PATH-TO-aws-sign [COUNT]
"""
import datetime
import json
import os
import random
import shutil
import socket
import string
import subprocess
import sys

# Nothing here may reach a network: the host names below are only signed. As root the script
# runs itself again in a network namespace with nothing but loopback; in any case every way
# Python has to a socket's address is cut, so a mistake fails instead of sending.
if os.geteuid() == 0 and not os.environ.get("EBS_HYDRATE_NETNS") and shutil.which("unshare"):
    os.environ["EBS_HYDRATE_NETNS"] = "1"
    os.execvp("unshare", ["unshare", "--net", sys.executable] + sys.argv)


def _no_network(*args, **kwargs):
    raise SystemExit("sigv4-botocore: something tried to use the network; nothing here may")


socket.socket.connect = socket.socket.connect_ex = _no_network
socket.getaddrinfo = socket.create_connection = _no_network
from unittest import mock
from urllib.parse import quote

try:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError:
    print("sigv4-botocore: botocore is not installed (scripts/deps installs it)", file=sys.stderr)
    sys.exit(1)


def encode(s):
    return quote(s, safe="-_.~")


def query_of(pairs):
    return "&".join(f"{encode(k)}={encode(v)}" for k, v in pairs)


def fixed_requests():
    """The shapes the AWS helper sends."""
    ec2 = [("Action", "DescribeVolumes"), ("Version", "2016-11-15"),
           ("VolumeId.1", "vol-0123456789abcdef0")]
    status = [("Action", "DescribeVolumeStatus"), ("Version", "2016-11-15"),
              ("VolumeId.1", "vol-0123456789abcdef0")]
    form = [["Content-Type", "application/x-www-form-urlencoded; charset=utf-8"]]
    for host in ("ec2.us-east-1.amazonaws.com", "127.0.0.1:8080", "ec2-fips.us-gov-west-1.amazonaws.com"):
        for body in (ec2, status):
            yield dict(method="POST", host=host, path="/", query="", body=query_of(body),
                       headers=form, service="ec2")
    for token in ("", "AAAA+/bb==", "a b/c+d=e"):
        q = [("maxResults", "10000")]
        if token:
            q.append(("pageToken", token))
        q.append(("startingBlockIndex", "0"))
        yield dict(method="GET", host="ebs.eu-west-1.amazonaws.com",
                   path="/snapshots/snap-0123456789abcdef0/blocks", query=query_of(q), body="",
                   headers=[], service="ebs")


def random_text(rng, alphabet, lo, hi):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def random_request(rng):
    values = string.ascii_letters + string.digits + "+/= -_.~%&?:@!$'()*,;"
    pairs = [(random_text(rng, string.ascii_letters + "._-+= ", 1, 8), random_text(rng, values, 0, 12))
             for _ in range(rng.randint(0, 6))]
    if pairs and rng.random() < 0.3:  # a repeated key, sorted by its values
        pairs.append((pairs[0][0], random_text(rng, values, 0, 5)))
    segments = [random_text(rng, string.ascii_letters + string.digits + " -_.~%+=", 0, 6)
                for _ in range(rng.randint(0, 4))]
    segments += rng.sample([".", "..", ""], rng.randint(0, 2))
    rng.shuffle(segments)
    path = "/" + "/".join(segments) + ("/" if rng.random() < 0.3 else "")
    headers = [[rng.choice(["Content-Type", "X-Amz-Target", "x-custom", "X-Custom-Two"]),
                rng.choice(["", " "]) + random_text(rng, string.ascii_letters + "  \t;=/+", 0, 16)
                + rng.choice(["", "  "])]
               for _ in range(rng.randint(0, 3))]
    seen = set()
    headers = [h for h in headers if not (h[0].lower() in seen or seen.add(h[0].lower()))]
    if rng.random() < 0.3:
        headers.append(["User-Agent", "ebs-hydrate-aws/1"])  # never signed
    return dict(method=rng.choice(["GET", "POST"]),
                host=rng.choice(["127.0.0.1:8080", "ec2.ap-south-1.amazonaws.com", "localhost:1"]),
                path=path, query=query_of(pairs),
                body=random_text(rng, string.printable, 0, 64) if rng.random() < 0.5 else "",
                headers=headers, service=rng.choice(["ec2", "ebs"]))


def botocore_headers(req):
    url = f"https://{req['host']}{req['path']}" + (f"?{req['query']}" if req["query"] else "")
    r = AWSRequest(method=req["method"], url=url, data=req["body"].encode(),
                   headers={k: v for k, v in req["headers"]})
    creds = Credentials(req["access_key"], req["secret_key"], req["token"] or None)
    now = datetime.datetime.fromtimestamp(req["time"], datetime.timezone.utc).replace(tzinfo=None)
    with mock.patch("botocore.auth.get_current_datetime", return_value=now):
        SigV4Auth(creds, req["service"], req["region"]).add_auth(r)
    return {k: r.headers[k] for k in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")
            if k in r.headers}


def ours(tool, req):
    p = subprocess.run([tool], input=json.dumps(req), capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise SystemExit(f"aws-sign failed ({p.returncode}): {p.stderr.strip()} on {req}")
    got = json.loads(p.stdout)
    return {k: got[k] for k in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token") if k in got}


def main():
    tool = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rng = random.Random(20261126)
    requests = list(fixed_requests()) + [random_request(rng) for _ in range(count)]
    failures = 0
    for i, req in enumerate(requests):
        req.update(access_key="AKIDEXAMPLE",
                   secret_key=rng.choice(["wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "s+/=ecret"]),
                   token=rng.choice([None, "IQoJb3JpZ2luX2VjE+/==", "a b"]),
                   region=rng.choice(["us-east-1", "eu-west-1", "us-gov-west-1"]),
                   time=rng.randint(1_400_000_000, 2_000_000_000))
        want, got = botocore_headers(req), ours(tool, req)
        if want != got:
            failures += 1
            print(f"request {i} differs:\n  request  {json.dumps(req)}\n  botocore {want}\n  ours     {got}")
    print(f"sigv4-botocore: {len(requests) - failures} of {len(requests)} requests signed as botocore signs them")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
