#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Smoke test of the guest rig alone (no project in the image): systemd is PID 1 and udev
runs; a hot-plugged cold volume looks like EBS to udev; reading it in the guest hydrates the
overlay and nothing else does; device_del really removes the disk; a re-added volume keeps its
overlay; files under /var/lib and attached volumes survive a reboot.

Usage: smoke.py [--image-dir DIR]      (root; exit 77 when qemu, debootstrap or a kernel is missing)
"""

import argparse
import os
import sys
import tempfile
import uuid

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm  # noqa: E402

MIB = 1 << 20
SERIAL = "vol0123456789abcdef0"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    vm.log("ok: " + what)


def udev_properties(m, dev):
    out = m.succeed("udevadm info --query=property --name=/dev/%s" % dev)
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def run(m, timer):
    with timer.step("boot"):
        state = m.boot()
    check(state == "running", "system state is 'running' (not degraded)")
    pid1 = m.succeed("readlink /proc/1/exe").strip()
    check(pid1.endswith("/systemd"), "PID 1 is systemd (%s)" % pid1)
    for unit in ("systemd-udevd", "dbus"):
        check(m.execute("systemctl is-active --quiet %s" % unit)[0] == 0, "%s is active" % unit)

    with timer.step("hot-add a cold volume"):
        m.add_cold_volume("v0", SERIAL, 64 * MIB, latency_ms=90)
        dev = m.block_device(SERIAL)
        m.succeed("udevadm settle --timeout=60")
    props = udev_properties(m, dev)
    check(props.get("ID_SERIAL_SHORT") == SERIAL, "%s: ID_SERIAL_SHORT=%s" % (dev, SERIAL))
    check(props.get("ID_MODEL") == "Amazon Elastic Block Store",
          "%s: ID_MODEL=Amazon Elastic Block Store (test rule 89)" % dev)

    with timer.step("read 8 MiB in the guest"):
        before = m.hydrated("v0")[0]
        m.succeed("dd if=/dev/%s of=/dev/null bs=1M count=8 skip=16 iflag=direct status=none"
                  % dev)
        after = m.hydrated("v0")[0]
    vm.log("overlay: %d bytes before dd (udev's probes), %d after" % (before, after))
    check(after - before >= 8 * MIB, "dd of 8 MiB hydrated at least 8 MiB more of the overlay")
    check(after < 32 * MIB, "nothing else read the volume (%d MiB hydrated)" % (after // MIB))

    with timer.step("device_del"):
        m.remove_volume("v0")
        m.wait_until_succeeds("! test -e /sys/block/%s" % dev, 30)
    vm.log("ok: /dev/%s is gone from the guest" % dev)
    check(m.hydrated("v0")[0] == after, "the detached volume keeps its overlay")

    with timer.step("re-add the same volume"):
        m.add_cold_volume("v0", SERIAL, 64 * MIB)
        dev = m.block_device(SERIAL)
        m.succeed("dd if=/dev/%s of=/dev/null bs=1M count=8 skip=16 iflag=direct status=none"
                  % dev)
    check(m.hydrated("v0")[0] - after < 4 * MIB,
          "re-added volume: the 8 MiB read before are still hydrated")

    hydrated = m.hydrated("v0")[0]
    for how, restart in (("systemctl reboot, QEMU resets", False),
                         ("poweroff, new QEMU process", True)):
        token = uuid.uuid4().hex
        m.succeed("mkdir -p /var/lib/smoke && echo %s > /var/lib/smoke/token" % token)
        with timer.step("reboot (%s)" % how):
            old_boot = m.boot_id
            m.reboot(restart=restart)
        check(m.boot_id != old_boot, "the guest rebooted (new boot id)")
        check(m.succeed("cat /var/lib/smoke/token").strip() == token,
              "/var/lib/smoke/token survived the reboot")
        dev = m.block_device(SERIAL)
        check(udev_properties(m, dev).get("ID_SERIAL_SHORT") == SERIAL,
              "the volume is attached after the reboot (%s)" % dev)
        m.succeed("udevadm settle --timeout=60")
        now = m.hydrated("v0")[0]
        check(now - hydrated < 8 * MIB, "the volume kept its overlay (%.1f MiB hydrated, "
              "udev probes included)" % (now / MIB))
    with timer.step("poweroff"):
        m.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image-dir", help="where to put the image (default: a temporary "
                        "directory under /var/tmp)")
    args = parser.parse_args()
    vm.skip_unless_prerequisites()
    timer = vm.Timer()
    workdir = tempfile.mkdtemp(prefix="ebs-hydrate-vm-smoke.", dir=args.image_dir or "/var/tmp")
    ok = False
    try:
        with timer.step("image build (bare)"):
            image = vm.build_image(os.path.join(workdir, "root.img"), bare=True)
        with vm.Machine(image, workdir=os.path.join(workdir, "machine")) as m:
            try:
                run(m, timer)
                ok = True
            except BaseException:
                print("--- guest console (last lines)\n" + m.console_tail(80), flush=True)
                raise
    finally:
        print(timer.summary(), flush=True)
        if os.environ.get("EBS_HYDRATE_VM_KEEP") != "1":
            vm.shutil.rmtree(workdir, ignore_errors=True)
    print("PASS" if ok else "FAIL", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
