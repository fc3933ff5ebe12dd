#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run a command with its stdout or stderr on a pipe that is full and never read, and report
how it ended within a time limit. The shape of a `| less` left paused, or of a wrapper that
stopped reading: a program that writes there with a blocking write hangs for good.

Usage: full-pipe.py stdout|stderr SECONDS COMMAND [ARGS...]
Prints "exit N" (or "signal N"), or "timeout" after SECONDS (the command is then killed with
SIGKILL), and copies the other stream to our stdout.
"""
import fcntl
import os
import subprocess
import sys


def main():
    stream, seconds, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass  # full
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    kw = {"stdout": w, "stderr": subprocess.PIPE} if stream == "stdout" else \
        {"stderr": w, "stdout": subprocess.PIPE}
    p = subprocess.Popen(argv, **kw)
    os.close(w)
    try:
        out, err = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        sys.stdout.write((out or err or b"").decode(errors="replace"))
        print("timeout")
        return
    sys.stdout.write((out or err or b"").decode(errors="replace"))
    print(f"signal {-p.returncode}" if p.returncode < 0 else f"exit {p.returncode}")
    os.close(r)


main()
