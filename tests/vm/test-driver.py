#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The guest test's driver without a guest: a kernel that says it is stuck for good is told
from one that stalled and recovered, and only what it printed during the wait counts; a boot
stuck once is tried once more, a second time is an error; and once the guest stops answering,
the steps left fail at once instead of each waiting out its timeouts, while a step that fails
with the guest still answering does not stop the test."""

import importlib.util
import os
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vm  # noqa: E402

spec = importlib.util.spec_from_file_location("test_systemd",
                                              os.path.join(HERE, "test-systemd.py"))
ts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ts)

failures = 0


def check(cond, what, detail=""):
    global failures
    print("%s: %s%s" % ("ok" if cond else "FAIL", what, " (%s)" % (detail,) if detail else ""))
    failures += 0 if cond else 1


def lockup(secs):
    return ("[  448.587070] watchdog: BUG: soft lockup - CPU#1 stuck for %ds! [modprobe:202]\n"
            % secs)


RCU = "[  231.579185] rcu: INFO: rcu_sched self-detected stall on CPU\n"


def stuck_lines():
    check(vm.kernel_stuck_in(lockup(398)) is not None, "a soft lockup of 398 s is stuck")
    check(vm.kernel_stuck_in(lockup(22) + lockup(48)) is None,
          "soft lockups of 22 and 48 s are not (yet): the kernel may recover")
    check(vm.kernel_stuck_in(RCU * 2) is None, "two RCU stall reports are not")
    check(vm.kernel_stuck_in(RCU * 3) is not None, "three are")
    check(vm.kernel_stuck_in("[ 1.0] Linux version 6.1.0\n") is None, "a quiet console is not")


def append(m, text):
    with open(m.console_log, "a") as f:
        f.write(text)


class Mute(vm.Machine):
    """A guest that never answers; while it is asked, its kernel prints @printed once."""

    def __init__(self, workdir, printed):
        super().__init__("unused.img", workdir=workdir)
        self.printed, self.bd_sock = printed, object()

    def _bd_send(self, script, limit):
        return "1"

    def _bd_result(self, cmd_ids, deadline):
        if self.printed:
            append(self, self.printed)
            self.printed = None
        time.sleep(0.05)
        return None


def outcome(fn):
    """How @fn ended: "answered", "stuck" (GuestStuck) or "error" (another VMError: a wait
    that timed out, no QEMU), with the first line of the error. Anything else is raised."""
    try:
        fn()
        return "answered", ""
    except vm.GuestStuck as e:
        return "stuck", str(e).splitlines()[0]
    except vm.VMError as e:
        return "error", str(e).splitlines()[0]


def stuck_waits(workdir):
    # An earlier QEMU (or an earlier moment of this one) stuck for good: not this wait's.
    m = Mute(os.path.join(workdir, "old"), printed=None)
    append(m, lockup(398))
    got = outcome(lambda: m._sync(1))
    check(got[0] == "error", "a lockup printed before the wait is not this wait's", got)
    # Printed during the wait: the boot's wait ends at once, GuestStuck.
    m = Mute(os.path.join(workdir, "new"), printed=lockup(22) + lockup(75))
    t0 = time.monotonic()
    got = outcome(lambda: m._sync(30))
    check(got[0] == "stuck" and time.monotonic() - t0 < 10,
          "a lockup printed during the wait ends it at once: GuestStuck", got)
    # A stall it recovered from, during the wait: a plain timeout.
    m = Mute(os.path.join(workdir, "recovered"), printed=lockup(22))
    got = outcome(lambda: m._sync(1))
    check(got[0] == "error", "a stall of 22 s is not a stuck kernel", got)
    # A command that gets no answer, the kernel stuck meanwhile.
    m = Mute(os.path.join(workdir, "run"), printed=RCU * 3)
    got = outcome(lambda: m.run("true", timeout=0))
    check(got[0] == "stuck" and "its kernel is stuck" in got[1],
          "no answer, kernel stuck: GuestStuck", got)
    # No QEMU at all (a start that failed): an error the test's steps catch.
    m = vm.Machine("unused.img", workdir=os.path.join(workdir, "none"))
    got = outcome(lambda: m.run("true"))
    check(got[0] == "error", "no QEMU: VMError, not AttributeError", got)


class FakeBoots(vm.Machine):
    """start() counts; wait_for_boot() says stuck for the first @stuck boots."""

    def __init__(self, workdir, stuck):
        super().__init__("unused.img", workdir=workdir)
        self.stuck, self.starts, self.kills = stuck, 0, 0

    def start(self):
        self.starts += 1

    def kill(self):
        self.kills += 1

    def wait_for_boot(self, timeout=240):
        if self.starts <= self.stuck:
            raise vm.GuestStuck("the guest's kernel is stuck (soft lockup); console:\n...")
        return "running"


def boot_retry(workdir):
    m = FakeBoots(workdir, stuck=1)
    state = m.boot()
    check(state == "running" and m.starts == 2 and m.kills == 1 and m.boot_retries == 1,
          "stuck once: QEMU killed and booted again, and counted",
          "starts %d kills %d retries %d" % (m.starts, m.kills, m.boot_retries))
    m = FakeBoots(workdir, stuck=2)
    try:
        m.boot()
        check(False, "stuck twice: an error")
    except vm.GuestStuck:
        check(m.starts == 2, "stuck twice: GuestStuck after two boots, no third",
              "starts %d" % m.starts)
    m = FakeBoots(workdir, stuck=0)
    check(m.boot() == "running" and m.starts == 1 and m.kills == 0, "a good boot is one boot")


class Silent:
    """A machine whose guest no longer answers."""
    boot_retries = 0

    def run(self, cmd, timeout=120):
        raise vm.VMError("no answer from the guest for %r" % cmd)

    def console_tail(self, lines=60):
        return ""


class Answers(Silent):
    """A machine whose guest answers."""

    def run(self, cmd, timeout=120):
        return 0, "", ""


def runner_goes_on(workdir):
    ran = []

    def failing(m):
        ran.append("b3")
        raise ts.StepFailed("Pause did not pause")

    def later(m):
        ran.append("b4")

    r = ts.Runner(Answers(), vm.Timer())
    r.step("b3: D-Bus Pause and Resume", failing)
    r.step("b4: ebs-hydratectl status --json", later)
    check(ran == ["b3", "b4"], "a step that fails with the guest answering: the next one runs",
          ran)
    check([res for _, res, _ in r.results] == ["FAIL", "PASS"], "and is judged on its own",
          r.results)


def runner_stops(workdir):
    ran = []

    def failing(m):
        ran.append("e")
        m.run("true")

    def later(m):
        ran.append("g")

    r = ts.Runner(Silent(), vm.Timer())
    r.step("e: reboot", failing)
    r.step("g: Mode=used", later)
    results = {n: res for n, res, _ in r.results}
    check(ran == ["e"], "after the guest stopped answering the next step is not run", ran)
    check(results == {"e: reboot": "FAIL", "g: Mode=used": "FAIL"},
          "and both are failures", results)
    check("step e" in r.results[-1][2], "the skipped step names where the guest went",
          r.results[-1][2])


def main():
    with tempfile.TemporaryDirectory(prefix="ebs-hydrate-vm-driver.") as d:
        stuck_lines()
        stuck_waits(os.path.join(d, "a"))
        boot_retry(os.path.join(d, "b"))
        runner_goes_on(os.path.join(d, "c"))
        runner_stops(os.path.join(d, "d"))
    print("PASS" if failures == 0 else "FAIL: %d check(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
