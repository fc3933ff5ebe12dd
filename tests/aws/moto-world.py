#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""moto (pinned in scripts/deps) as EC2 and the EBS direct APIs on 127.0.0.1, with a small world
made through boto3, for tests/aws/moto.sh. Run it in a network namespace with only loopback up.

Usage: moto-world.py DIR

The world: a volume created from an EC2 snapshot, a volume created empty, and a snapshot written
block by block through the EBS direct APIs (StartSnapshot, PutSnapshotBlock, CompleteSnapshot).
Once it is made, DIR/world holds KEY=VALUE lines (URL, the ids, what moto answered about the
empty volume) and DIR/expected-blocks what aws-list-blocks must print for that snapshot,
computed here from the blocks put and the BlockSize moto gives; from then on DIR/log gets one
JSON line per request the programs under test send (action, HTTP status, the signature's
service and region). It serves until it is killed or its parent goes away.
"""
import base64
import hashlib
import io
import json
import os
import sys
import threading
import time
from urllib.parse import parse_qs

# boto3 must find nothing of the machine's own: no profile, no file, no metadata service.
for name in [n for n in os.environ if n.startswith("AWS_")]:
    del os.environ[name]
os.environ.update(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull,
                  AWS_EC2_METADATA_DISABLED="true")

import boto3  # noqa: E402
from moto.server import DomainDispatcherApplication, create_backend_app  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

REGION = "us-east-1"
EBS_BLOCK = 512 * 1024  # what our client counts in, whatever BlockSize the server says
VOLUME_GIB = 1
# Indexes in the snapshot's own blocks, put in this order: unsorted, one put twice, two in the
# same 512 KiB, the volume's last block and one past its end (moto takes any index).
PUT_ORDER = [5000, 1, 0, 1024, 1, 1023, 2097151, 2097152, 40960]


class Recorder:
    """The moto application, with each request's action and status logged once `on` is set."""

    def __init__(self, app, log):
        self.app, self.log, self.on = app, log, False
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        environ["wsgi.input"] = io.BytesIO(body)
        form = parse_qs(body.decode("latin-1")) if environ["REQUEST_METHOD"] == "POST" else {}
        action = form.get("Action", [f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}"])[0]
        scope = environ.get("HTTP_AUTHORIZATION", "").partition("Credential=")[2].split(",")[0]
        parts = scope.split("/")

        def record(status, headers, exc_info=None):
            self.write(action, int(status.split()[0]), parts)
            return start_response(status, headers, exc_info)

        try:
            return self.app(environ, record)
        except Exception:
            self.write(action, 500, parts)  # what the server answers in its stead
            raise

    def write(self, action, status, scope):
        if not self.on:
            return
        line = json.dumps({"action": action, "status": status,
                           "region": scope[2] if len(scope) == 5 else None,
                           "service": scope[3] if len(scope) == 5 else None})
        with self.lock:
            self.log.write(line + "\n")
            self.log.flush()


def sha256_b64(data):
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def expected_listing(indexes, block_size, volume_gib):
    """What aws-list-blocks prints: each stored block marks every 512 KiB block its bytes
    touch; one that starts past the volume's end is counted apart."""
    size = volume_gib << 30
    n_blocks = size // EBS_BLOCK
    stored, past_end = set(), 0
    for i in set(indexes):
        first_byte, last_byte = i * block_size, (i + 1) * block_size - 1
        if first_byte >= size:
            past_end += 1
            continue
        stored.update(range(first_byte // EBS_BLOCK, min(last_byte, size - 1) // EBS_BLOCK + 1))
    lines = [f"pages=1 restarts=0 block_size={block_size} volume_gib={volume_gib} "
             f"blocks={n_blocks} stored={len(stored)} past_end={past_end}"]
    run = None
    for b in sorted(stored) + [None]:
        if run and b == run[1] + 1:
            run[1] = b
            continue
        if run:
            lines.append(f"{run[0]}-{run[1]}")
        run = [b, b] if b is not None else None
    return "\n".join(lines) + "\n"


def make_world(url):
    kw = dict(endpoint_url=url, region_name=REGION, aws_access_key_id="AKIDMOTOWORLD",
              aws_secret_access_key="moto-world")
    ec2, ebs = boto3.client("ec2", **kw), boto3.client("ebs", **kw)
    zone = f"{REGION}a"
    world = {"URL": url}

    base = ec2.create_volume(Size=VOLUME_GIB, AvailabilityZone=zone)["VolumeId"]
    world["SNAPSHOT"] = ec2.create_snapshot(VolumeId=base)["SnapshotId"]
    world["VOLUME_FROM_SNAPSHOT"] = ec2.create_volume(SnapshotId=world["SNAPSHOT"],
                                                      AvailabilityZone=zone)["VolumeId"]
    world["VOLUME_EMPTY"] = ec2.create_volume(Size=2, AvailabilityZone=zone)["VolumeId"]
    empty = ec2.describe_volumes(VolumeIds=[world["VOLUME_EMPTY"]])["Volumes"][0]
    # EC2 sends <snapshotId/> for an empty volume; moto 5.2.1 leaves the element out.
    world["EMPTY_SNAPSHOT_ID_SENT"] = "yes" if "SnapshotId" in empty else "no"

    started = ebs.start_snapshot(VolumeSize=VOLUME_GIB)
    snap, block_size = started["SnapshotId"], started["BlockSize"]
    for i in PUT_ORDER:
        data = i.to_bytes(8, "little") * (block_size // 8)
        ebs.put_snapshot_block(SnapshotId=snap, BlockIndex=i, BlockData=data,
                               DataLength=len(data), Checksum=sha256_b64(data),
                               ChecksumAlgorithm="SHA256")
    ebs.complete_snapshot(SnapshotId=snap, ChangedBlocksCount=len(set(PUT_ORDER)))
    world["EBS_SNAPSHOT"] = snap
    world["EBS_BLOCK_SIZE"] = str(block_size)
    return world, expected_listing(PUT_ORDER, block_size, VOLUME_GIB)


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def main():
    out = sys.argv[1]
    parent = os.getppid()
    log = open(f"{out}/log", "a")
    app = Recorder(DomainDispatcherApplication(create_backend_app), log)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    world, expected = make_world(f"http://127.0.0.1:{server.server_port}")
    write(f"{out}/expected-blocks", expected)
    app.on = True
    write(f"{out}/world", "".join(f"{k}={v}\n" for k, v in world.items()))
    while os.getppid() == parent:
        time.sleep(0.5)


if __name__ == "__main__":
    main()
