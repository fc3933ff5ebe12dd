#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Relay one connection of the guest to a server on the host's 127.0.0.1 (standard library only).

QEMU's user network runs this once for each TCP connection the guest opens to a guestfwd address
(vm.Machine(network=...): guestfwd=tcp:ADDR:PORT-cmd:host-relay.py PORT-FILE), with the
connection as stdin and stdout. It reads the server's port from PORT-FILE at that moment (the
server may start after QEMU), connects to 127.0.0.1 only, and copies bytes both ways until both
sides are done. Nothing is printed: stderr is the guest's connection too.
"""
import os
import select
import socket
import sys


def main():
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    guest = socket.socket(fileno=os.dup(0))
    try:
        with open(sys.argv[1], encoding="ascii") as f:
            port = int(f.read().strip())
        server = socket.create_connection(("127.0.0.1", port), timeout=5)
    except (OSError, ValueError):
        return 1  # the guest sees its connection closed
    server.settimeout(None)
    peers = {guest: server, server: guest}
    open_ends = {guest, server}
    while open_ends:
        ready = select.select(list(open_ends), [], [], 60)[0]
        if not ready:
            return 1  # idle for a minute: give up on it
        for s in ready:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data:
                peers[s].sendall(data)
                continue
            open_ends.discard(s)  # EOF: pass it on
            try:
                peers[s].shutdown(socket.SHUT_WR)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
