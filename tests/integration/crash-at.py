#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Start CMD and crash it at a chosen moment: after --delay seconds, or at the Nth checkpoint
# save of state KEY in DIR as seen by inotify (--event create: the temporary file appears;
# close: it was written and synced, the rename comes next; rename: the new state is in place,
# the directory sync comes next). The crash is SIGSTOP then SIGKILL; with --shutdown
# MOUNTPOINT it is a power cut first: EXT4_IOC_SHUTDOWN with EXT4_GOING_FLAGS_NOLOGFLUSH
# (nothing more reaches the disk, the journal is not flushed), then SIGKILL --after seconds
# later unless CMD ended.
# With --stat DEV, --stat-out gets "REALTIME_USEC SECTORS" lines: the sectors read from DEV
# (field 3 of /sys/block/DEV/stat, counted by the kernel as reads complete, before the reader
# learns of them) as each save of KEY lands (renamed into place), and once at the crash, when
# nothing CMD does can reach the state any more.
# Prints one line: "killed MS" (milliseconds from the start to the crash) or "exited STATUS MS"
# if CMD ended first, with " cut" at the end once the power was cut. CMD's stdout and stderr
# go to --log.
import argparse
import ctypes
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import time

IN_CREATE, IN_CLOSE_WRITE, IN_MOVED_TO = 0x100, 0x8, 0x80
EXT4_IOC_SHUTDOWN = (2 << 30) | (4 << 16) | (ord("X") << 8) | 125  # _IOR('X', 125, __u32)
EXT4_GOING_FLAGS_NOLOGFLUSH = 0x2


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--delay", type=float)
    p.add_argument("--checkpoint", type=int, help="crash at the Nth save (from 1)")
    p.add_argument("--event", choices=("create", "close", "rename"), default="rename")
    p.add_argument("--dir", help="the state directory (with --checkpoint or --stat)")
    p.add_argument("--key", help="the state key (with --checkpoint or --stat)")
    p.add_argument("--shutdown", metavar="MOUNTPOINT")
    p.add_argument("--after", type=float, default=0.0)
    p.add_argument("--stat", metavar="DEV")
    p.add_argument("--stat-out", metavar="FILE")
    p.add_argument("--log", required=True)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    if a.cmd[:1] == ["--"]:
        a.cmd = a.cmd[1:]
    if not a.cmd or (a.delay is None) == (a.checkpoint is None):
        p.error("need CMD and exactly one of --delay, --checkpoint")
    if (a.checkpoint is not None or a.stat) and not (a.dir and a.key):
        p.error("--checkpoint and --stat need --dir and --key")
    if bool(a.stat) != bool(a.stat_out):
        p.error("--stat and --stat-out go together")
    return a


class Watch:
    """The state directory under inotify, and the sector counter sampled at each save."""

    def __init__(self, a):
        self.a, self.fd, self.samples = a, None, []
        if not a.dir:
            return
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, os.fsencode(a.dir),
                                                 IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO) < 0:
            sys.exit("crash-at: inotify: %s" % os.strerror(ctypes.get_errno()))

    def sample(self):
        if self.a.stat:
            with open("/sys/block/%s/stat" % os.path.basename(self.a.stat)) as f:
                self.samples.append((time.time_ns() // 1000, int(f.read().split()[2])))

    def events(self, timeout):
        """Waits up to @timeout for events; yields their (mask, name)."""
        if self.fd is None:
            time.sleep(timeout)
            return
        if not select.select([self.fd], [], [], timeout)[0]:
            return
        buf = os.read(self.fd, 65536)
        i = 0
        while i < len(buf):
            _, mask, _, length = struct.unpack_from("iIII", buf, i)
            name = buf[i + 16:i + 16 + length].rstrip(b"\0").decode()
            i += 16 + length
            if mask & IN_MOVED_TO and name == "%s.state" % self.a.key:
                self.sample()
            yield mask, name

    def write(self):
        if self.a.stat:
            with open(self.a.stat_out, "w") as f:
                f.writelines("%d %d\n" % s for s in self.samples)


def wait_trigger(a, child, watch, start):
    """Returns True at the crash moment, False if the child exited first."""
    want = {"create": (IN_CREATE, ".%s.state.tmp" % a.key),
            "close": (IN_CLOSE_WRITE, ".%s.state.tmp" % a.key),
            "rename": (IN_MOVED_TO, "%s.state" % a.key)}[a.event]
    seen = 0
    while child.poll() is None:
        elapsed = time.monotonic() - start
        if elapsed > a.timeout:
            child.kill()
            child.wait()
            sys.exit("crash-at: no trigger within %.0f s" % a.timeout)
        if a.delay is not None and elapsed >= a.delay:
            return True
        left = 0.005 if a.delay is None else min(a.delay - elapsed, 0.005)
        for mask, name in watch.events(left):
            if a.checkpoint is not None and mask & want[0] and name == want[1]:
                seen += 1
                if seen == a.checkpoint:
                    return True
    return False


def power_cut(mountpoint):
    fd = os.open(mountpoint, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", EXT4_GOING_FLAGS_NOLOGFLUSH))
    finally:
        os.close(fd)


def crash(a, child, watch):
    if a.shutdown:
        power_cut(a.shutdown)
    else:
        child.send_signal(signal.SIGSTOP)
    for _ in watch.events(0):  # saves not seen yet get a (later, so larger) count too
        pass
    watch.sample()
    if a.shutdown:
        try:
            child.wait(timeout=a.after)
        except subprocess.TimeoutExpired:
            pass
    child.send_signal(signal.SIGKILL)
    child.wait()


def main():
    a = parse_args()
    watch = Watch(a)
    with open(a.log, "ab") as log:
        child = subprocess.Popen(a.cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    start = time.monotonic()
    if not wait_trigger(a, child, watch, start):
        watch.write()
        print("exited %d %.1f" % (child.returncode, (time.monotonic() - start) * 1000))
        return
    ms = (time.monotonic() - start) * 1000
    crash(a, child, watch)
    watch.write()
    cut = " cut" if a.shutdown else ""
    # A child that ended between the trigger and the signal was not killed (after a power cut,
    # it may have ended on its own, e.g. failing to save).
    if child.returncode != -signal.SIGKILL:
        print("exited %d %.1f%s" % (child.returncode, ms, cut))
    else:
        print("killed %.1f%s" % (ms, cut))


if __name__ == "__main__":
    main()
