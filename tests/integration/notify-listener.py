#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A stand-in for systemd's notify socket: binds an AF_UNIX datagram socket at PATH and appends
# every message to LOG, one line per datagram (newlines inside become " | "), until SIGTERM or
# SECONDS have passed. Usage: notify-listener.py PATH LOG SECONDS
import os
import signal
import socket
import sys
import time

path, log, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
sock.settimeout(0.2)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
deadline = time.monotonic() + seconds
with open(log, "a", buffering=1) as out:
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        out.write(data.decode("utf-8", "replace").strip().replace("\n", " | ") + "\n")
os.unlink(path)
