#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issues 3, 6, 7 and 25, in a QEMU guest with real systemd, udev and D-Bus: the Debian package,
installed with dpkg -i, hydrates cold EBS volumes by itself: its unit, udev rule, D-Bus policy,
ebs-hydrated and ebs-hydratectl; purged, it leaves nothing running.

  i   boot with a cold volume attached and nothing installed; dpkg -i the package: its service
      user exists, its files are in place, no warning from its scripts
  a   the package's postinst replays udev's change event: udev and systemd alone start
      ebs-hydrate@<kernel name> for the volume that was attached before the install
  b1  while it runs, systemctl status shows STATUS= in the documented format
  b2  the D-Bus object's properties (root and non-root), methods root-only
  b3  Pause over D-Bus stops the reads (the rig's overlay stops growing), Resume restarts them
  b4  ebs-hydratectl status --json reports the volume; the installed bash completion offers
      it (and ebs-hydrated's its disk)
  m   the metrics timer the package enabled: without node_exporter's textfile directory each
      run of its service is skipped (condition), nothing fails, nothing is logged, and the
      timer goes on firing; once the directory exists, the timer alone writes
      ebs-hydrate.prom there, whole (no temporary file), with the running volume's series
  c1  after completion the unit is active (exited) and its STATUS says hydrated
  c2  the journal has the "hydration complete" record with VOLUME_ID= and DEVICE=
  c3  the rig's independent measure: the whole volume was read
  d1  a hot-plugged second volume gets its own instance
  d2  device_del mid-run stops that instance (inactive, not failed); its state file exists
  d3  re-attached, a new instance resumes from the checkpoint, not from 0
  d4  ... and completes, reading only what was left (the guest kernel's sector count)
  e   after a reboot both instances say "already hydrated" and read (almost) nothing
  w   (inside g) a stand-in database unit with ExecStartPre=ebs-hydratectl wait --phase=hot
      /srv/d, run as a dynamic user, started while the volume's metadata is read: it starts only
      once the hot paths are (the record it saw says so), then at once when restarted on the
      hydrated volume
  g   file-system-aware hydration under the unit's sandbox: a hot-plugged volume whose
      snapshot holds a GPT disk with ext4 (disabled by a drop-in until the partition is mounted
      read-only in the guest), restarted with Mode=used and HotPaths=: GETFSMAP on the mount
      point, the hot file found, the free space left cold, ebs-hydratectl says "completed"
  h   it gives way to other I/O on the volume under the unit's sandbox: the disk's counters are
      readable (no warning); a reader in the guest on a hot-plugged hydrating volume makes
      STATUS=, D-Bus Yielding and ebs-hydratectl say "yielding", which ends after the reader
      does; with a Yield=no drop-in and a restart the same reader changes nothing
  k   what AWS knows, over the guest's restricted network to tests/aws/aws-stub.py on the host:
      a hot-plugged volume the stub says was created empty: udev starts ebs-hydrate-aws@ under
      its shipped unit (a drop-in only names the stub), which asks IMDSv2 and EC2 (SigV4) and
      writes its findings; ebs-hydrated completes "without reading" within 5 s of the device
      appearing and reads nothing more. With Aws=no for another volume the helper asks nothing
      and that volume is hydrated as today. A third volume's snapshot stores 40 MiB of its
      1 GiB: the helper lists its blocks (ListSnapshotBlocks, signed for "ebs") into the
      .blocks file, and ebs-hydrated reads those blocks and no others
  f   dpkg --purge while a hot-plugged third volume hydrates: no instance, process, bus name,
      unit, rule, state or metrics file is left, and a new udev event on the volume starts
      nothing

Every step runs even if an earlier one failed (where it can); the summary lists each.

Usage: test-systemd.py --deb FILE [BUILD_DIR]
  FILE       the package (packaging/build-deb; ctest's packaging/deb test builds it)
  BUILD_DIR  where the detailed log goes (BUILD_DIR/Testing/vm-systemd.log)
Exit status: 0 every step passed, 1 a step failed, 77 skipped (not root, no qemu/debootstrap).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm  # noqa: E402

MIB = 1 << 20
# The fixed journal MESSAGE_IDs (src/shared/log.h, ebs-hydrated(8) JOURNAL).
MESSAGE_STARTED = "49b38269611b48e4ab0a4b2be34a7e62"
MESSAGE_COMPLETE = "fe14081e0c3c433196e76e742caf5014"
BUS_NAME = "org.ebshydrate.Volume1."  # + kernel name
BUS_PATH = "/org/ebshydrate/Volume1"
BUS_IFACE = "org.ebshydrate.Volume1"
BUS_TYPES = {"VolumeId": "s", "Device": "s", "DeviceName": "s", "State": "s",
             "SizeBytes": "t", "HydratedBytes": "t", "Percent": "d",
             "RateBytesPerSecond": "t", "EtaSeconds": "t", "ErrorCount": "t"}
STATE_DIR = "/var/lib/ebs-hydrate"
NOBODY = "setpriv --reuid=65534 --regid=65534 --clear-groups "


class Vol:
    """A test volume: rig name, NVMe serial, volume id, size, cold read cap."""

    def __init__(self, name, serial, size, bps):
        self.name, self.serial, self.size, self.bps = name, serial, size, bps
        self.volume_id = "vol-" + serial[3:]
        self.kname = None  # kernel name in the guest, once attached


# Read caps chosen so that hydration is slow enough to watch under TCG (uncapped, the daemon
# reads this rig at ~250 MiB/s); each cap is lifted once what needs watching was watched.
VOL_A = Vol("a", "vol0123456789abcdef0", 1024 * MIB, 8 * MIB)
VOL_B = Vol("b", "vol0fedcba9876543210", 256 * MIB, 12 * MIB)
VOL_C = Vol("c", "vol0c0ffee0000000001", 256 * MIB, 4 * MIB)
# Its snapshot holds a GPT disk with ext4 on partition 1 (make_ext4_image).
VOL_D = Vol("d", "vol0da7a000000000004", 256 * MIB, 16 * MIB)
# Hydrates for 2 min at its cap: long enough to watch it give way to a workload and not, then
# detached.
VOL_H = Vol("h", "vol0e1d0000000000005", 512 * MIB, 4 * MIB)
# Not EBS (no "vol" serial): no instance ever reads it, so what the guest kernel counts for it
# is what udev's probes read at boot; step e compares the hydrated volumes with it.
VOL_BASE = Vol("base", "base0000000000000000", 1024 * MIB, 0)
# Step k: created empty (the stub's DescribeVolumes has no SnapshotId); 1 GiB at 16 MiB/s, a
# minute of reading had AWS not said so. n: the same with Aws=no in a drop-in, read as today.
VOL_K = Vol("k", "vol0a5e0000000000001", 1024 * MIB, 16 * MIB)
VOL_N = Vol("n", "vol0a5e0000000000002", 1024 * MIB, 16 * MIB)
# Step k: from a snapshot that stores 40 MiB of it (blocks 0-15 and 1000-1063 of 512 KiB).
VOL_S = Vol("s", "vol0a5e0000000000003", 1024 * MIB, 16 * MIB)
SNAP_S = "snap-0a5e00003"
SNAP_S_RANGES = [[0, 16], [1000, 1064]]  # 512 KiB blocks, the end excluded
LATENCY_MS = 90
STATUS_RE = re.compile(r"^(vol-[0-9a-f]{17}): (\d+\.\d)% hydrated \(([^)]+) of ([^)]+)\), "
                       r"(\d+(\.\d+)? [KMGT]?i?B/s), about .+ left$")


class StepFailed(Exception):
    pass


def check(cond, what, detail=""):
    if not cond:
        raise StepFailed(what + (": " + detail if detail else ""))
    vm.log("ok: " + what + (" (%s)" % detail if detail else ""))


def unit_of(vol):
    return "ebs-hydrate@%s.service" % vol.kname


def unit_props(m, unit):
    out = m.succeed("systemctl show -p ActiveState,SubState,Result,StatusText,NRestarts,"
                    "ExecMainStartTimestampMonotonic %s" % unit)
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def wait_unit(m, unit, pred, what, timeout):
    """Poll the unit's properties until @pred(props) holds; the last props."""
    deadline = time.monotonic() + timeout
    while True:
        p = unit_props(m, unit)
        if pred(p):
            return p
        if time.monotonic() > deadline:
            raise StepFailed("%s: not %s after %d s: %s" % (unit, what, timeout, p))
        time.sleep(1)


def started(p):
    return p["ActiveState"] in ("active", "failed")


def finished(p):
    return p["SubState"] in ("exited", "dead", "failed") or p["ActiveState"] == "failed"


def wait_run_finished(m, kname, unit, timeout):
    """wait_unit(finished) for the run udev started for the disk now at /dev/@kname: a name
    that an earlier disk left "dead" is not this run's end (step k once read the stopped unit
    of the volume before it, 0.8 s after device_add, and its empty STATUS=)."""
    appeared = device_appeared_usec(m, kname)

    def this_run_finished(p):
        return finished(p) and int(p.get("ExecMainStartTimestampMonotonic") or 0) >= appeared

    return wait_unit(m, unit, this_run_finished, "finished (a run started after device_add)",
                     timeout)


def bus_properties(m, vol, as_nobody=False):
    """GetAll of the volume's D-Bus object: {name: (type, value)}."""
    out = m.succeed("%sbusctl --json=short call %s%s %s org.freedesktop.DBus.Properties "
                    "GetAll s %s" % (NOBODY if as_nobody else "", BUS_NAME, vol.kname,
                                     BUS_PATH, BUS_IFACE))
    data = json.loads(out)["data"][0]
    return {k: (v["type"], v["data"]) for k, v in data.items()}


def bus_get(m, vol, prop):
    out = m.succeed("busctl --json=short get-property %s%s %s %s %s"
                    % (BUS_NAME, vol.kname, BUS_PATH, BUS_IFACE, prop))
    return json.loads(out)["data"]


def bus_call(m, vol, method, as_nobody=False):
    return m.run("%sbusctl call %s%s %s %s %s" % (NOBODY if as_nobody else "", BUS_NAME,
                                                   vol.kname, BUS_PATH, BUS_IFACE, method))


def bytes_read(m, kname):
    """Bytes the guest kernel read from the disk since it appeared (/sys/block/X/stat)."""
    return int(m.succeed("cat /sys/block/%s/stat" % kname).split()[2]) * 512


def rig_settled(m, vol, timeout=20):
    """The rig's hydrated bytes once they stop changing (reads in flight have landed)."""
    last = m.hydrated(vol.name)[0]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(1.5)
        now = m.hydrated(vol.name)[0]
        if now == last:
            return now
        last = now
    raise StepFailed("the overlay of %s kept growing for %d s" % (vol.volume_id, timeout))


def journal_records(m, *matches):
    out = m.succeed("journalctl --no-pager -o json %s" % " ".join(matches))
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def wait_journal_records(m, timeout, *matches):
    """journal_records() once it has any. The daemon tells systemd it is up (READY=1) before it
    logs that it starts reading, and journald stores a line a moment after it is sent: a step
    that sees the unit active may not find the record yet (seen in CI: an older record of the
    same volume was taken for it)."""
    deadline = time.monotonic() + timeout
    while True:
        recs = journal_records(m, *matches)
        if recs or time.monotonic() > deadline:
            return recs
        time.sleep(0.5)


def invocation_of(m, unit):
    return m.succeed("systemctl show -p InvocationID --value %s" % unit).strip()


def main_pid_of(m, unit):
    return m.succeed("systemctl show -p MainPID --value %s" % unit).strip()


def attach(m, vol, hotplug):
    m.add_cold_volume(vol.name, vol.serial, vol.size, latency_ms=LATENCY_MS, bps=vol.bps,
                      hotplug=hotplug)


# ---- steps ---------------------------------------------------------------------------------

PACKAGE = "ebs-hydrate"
# What the package must put in place (Debian 12 paths: units and rules under /lib).
PACKAGE_FILES = ("/usr/sbin/ebs-hydrated", "/usr/bin/ebs-hydratectl", "/lib/udev/ebs-hydrate-id",
                 "/usr/sbin/ebs-hydrate-aws", "/lib/systemd/system/ebs-hydrate-aws@.service",
                 "/usr/share/man/man8/ebs-hydrate-aws.8.gz",
                 "/lib/udev/rules.d/90-ebs-hydrate.rules", "/lib/systemd/system/ebs-hydrate@.service",
                 "/lib/systemd/system/ebs-hydrate-metrics.service",
                 "/lib/systemd/system/ebs-hydrate-metrics.timer",
                 "/usr/share/dbus-1/system.d/org.ebshydrate.Volume1.conf",
                 "/usr/lib/ebs-hydrate/hydrate.conf", "/usr/lib/sysusers.d/ebs-hydrate.conf",
                 "/usr/lib/systemd/catalog/ebs-hydrate.catalog",
                 "/usr/share/man/man8/ebs-hydrated.8.gz", "/usr/share/man/man1/ebs-hydratectl.1.gz",
                 "/usr/share/man/man5/ebs-hydrate.conf.5.gz",
                 "/usr/share/man/man8/ebs-hydrate-id.8.gz",
                 "/usr/share/bash-completion/completions/ebs-hydratectl",
                 "/usr/share/bash-completion/completions/ebs-hydrated")


def step_i(m, deb):
    vol = VOL_A
    vol.kname = m.block_device(vol.serial)
    rc, out, _ = m.run("command -v ebs-hydrated; systemctl list-units --all --plain --no-legend "
                       "'ebs-hydrate@*'")
    check(out.strip() == "", "before the install: no ebs-hydrated, no instance", out.strip())
    m.succeed("udevadm settle", 60)
    # udev's probes at boot (blkid, partition table) fetch a few 512 KiB clusters, no more.
    before = m.hydrated(vol.name)[0]
    check(before <= 8 * MIB, "before the install: %s is cold but for udev's probes"
          % vol.volume_id, "%.0f KiB fetched" % (before / 1024))
    path = "/root/packages/" + os.path.basename(deb)
    rc, out, err = m.run("dpkg -i %s" % path, 300)
    vm.log_output("dpkg -i %s:" % path, out + err)
    check(rc == 0, "dpkg -i %s" % os.path.basename(deb), "exit %d: %s" % (rc, err.strip()))
    check("warning" not in (out + err).lower(), "no warning from dpkg or the package's scripts")
    status = m.succeed("dpkg-query -W -f='${Status} ${Version}' %s" % PACKAGE)
    check(status.startswith("install ok installed"), "dpkg: installed", status)
    user = m.succeed("id ebs-hydrate").strip()
    check("(disk)" in user, "postinst created the service user (sysusers.d), in group disk", user)
    rc, out, _ = m.run("ls -d %s" % " ".join(PACKAGE_FILES))
    check(rc == 0, "the package's files are in place", out.strip().replace("\n", " "))


def step_a(m):
    vol = VOL_A
    vol.kname = m.block_device(vol.serial)
    props = m.succeed("udevadm info --query=property --name=/dev/%s" % vol.kname)
    vm.log("udev properties of %s:\n%s" % (vol.kname, props.strip()))
    check("ID_MODEL=Amazon Elastic Block Store" in props, "udev: %s looks like EBS" % vol.kname)
    # udev's SYSTEMD_WANTS: the device unit (named by sysfs path, dev-X.device is an alias)
    # wants the instance.
    m.wait_until_succeeds("systemctl show -p WantedBy --value %s | grep -q ." % unit_of(vol), 30)
    wanted_by = m.succeed("systemctl show -p WantedBy --value %s" % unit_of(vol)).split()
    check(any(u.endswith("-%s.device" % vol.kname) for u in wanted_by),
          "%s is wanted by the device unit (udev SYSTEMD_WANTS)" % unit_of(vol),
          " ".join(wanted_by))
    p = wait_unit(m, unit_of(vol), started, "started", 60)
    check(p["ActiveState"] == "active" and p["SubState"] == "running",
          "%s is active (running), started by nobody but udev and systemd, after the "
          "install" % unit_of(vol),
          "%s/%s" % (p["ActiveState"], p["SubState"]))
    pct = m.hydrated(vol.name)[2]
    check(pct < 100, "still hydrating, so steps b can watch it", "rig %.1f%%" % pct)


def step_b1(m):
    vol = VOL_A
    deadline = time.monotonic() + 30
    while True:
        text = unit_props(m, unit_of(vol))["StatusText"]
        if STATUS_RE.match(text) or time.monotonic() > deadline:
            break
        time.sleep(1)
    mt = STATUS_RE.match(text)
    check(mt is not None, "STATUS= in the documented format", repr(text))
    check(mt.group(1) == vol.volume_id, "STATUS= begins with the volume id")
    status = m.succeed("systemctl status --no-pager %s || true" % unit_of(vol))
    vm.log("systemctl status:\n" + status.rstrip())
    line = [ln.strip() for ln in status.splitlines() if ln.strip().startswith("Status:")]
    check(line and line[0].startswith('Status: "%s: ' % vol.volume_id) and "% hydrated" in line[0],
          "systemctl status shows it", line[0] if line else "no Status: line")


def step_b2(m):
    vol = VOL_A
    percent = bus_get(m, vol, "Percent")
    check(isinstance(percent, float) and 0 <= percent <= 100,
          "busctl get-property ... Percent", repr(percent))
    props = bus_properties(m, vol)
    vm.log("D-Bus properties: %s" % {k: v[1] for k, v in props.items()})
    for name, sig in BUS_TYPES.items():
        check(name in props and props[name][0] == sig, "property %s %s" % (name, sig),
              repr(props.get(name)))
    v = {k: x[1] for k, x in props.items()}
    check(v["VolumeId"] == vol.volume_id, "VolumeId", v["VolumeId"])
    check(v["Device"] == "/dev/" + vol.kname, "Device", v["Device"])
    check(v["DeviceName"] == "", "DeviceName is empty (QEMU has no EBS mapping name)",
          repr(v["DeviceName"]))
    check(v["State"] == "hydrating", "State", v["State"])
    check(v["SizeBytes"] == vol.size, "SizeBytes", str(v["SizeBytes"]))
    check(0 < v["HydratedBytes"] < vol.size, "HydratedBytes", str(v["HydratedBytes"]))
    check(abs(v["Percent"] - 100.0 * v["HydratedBytes"] / vol.size) < 1.0,
          "Percent agrees with HydratedBytes", "%.2f" % v["Percent"])
    check(v["ErrorCount"] == 0, "ErrorCount", str(v["ErrorCount"]))
    rig = m.hydrated(vol.name)[0]
    check(v["HydratedBytes"] <= rig, "HydratedBytes <= what the rig saw fetched",
          "%d <= %d" % (v["HydratedBytes"], rig))
    props = bus_properties(m, vol, as_nobody=True)
    check(props["VolumeId"][1] == vol.volume_id, "a non-root user may read the properties")
    rc, out, err = bus_call(m, vol, "Pause", as_nobody=True)
    check(rc != 0, "a non-root user may not call Pause", err.strip())
    check(bus_get(m, vol, "State") == "hydrating", "... and the volume is still hydrating")


TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"  # Debian's prometheus-node-exporter
METRICS_UNIT = "ebs-hydrate-metrics"


def metrics_props(m, unit):
    out = m.succeed("systemctl show -p ActiveState,Result,ConditionResult,LastTriggerUSec,"
                    "NextElapseUSecRealtime,UnitFileState %s" % unit)
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def step_m(m):
    vol = VOL_A
    timer, service = METRICS_UNIT + ".timer", METRICS_UNIT + ".service"
    rc, out, _ = m.run("test -e %s" % TEXTFILE_DIR)
    check(rc != 0, "the guest has no node_exporter textfile directory yet")
    t = metrics_props(m, timer)
    check(t["UnitFileState"] == "enabled" and t["ActiveState"] == "active",
          "the package enabled and started %s" % timer, str(t))
    # The shipped timer fires every 30 s by the clock; for the test a drop-in in /run makes it
    # every 5 s (two of its ticks would be a minute under TCG), and goes once the file is written.
    cal = m.succeed("systemctl show -p TimersCalendar --value %s" % timer).strip()
    check("OnCalendar=*-*-* *:*:00/30" in cal, "the shipped %s fires at :00 and :30" % timer, cal)
    m.succeed("mkdir -p /run/systemd/system/%s.d && printf '[Timer]\\nOnCalendar=\\n"
              "OnCalendar=*:*:00/5\\n' >/run/systemd/system/%s.d/vm-test.conf && "
              "systemctl daemon-reload" % (timer, timer))
    t = metrics_props(m, timer)
    since = m.succeed("date '+%Y-%m-%d %H:%M:%S'").strip()
    # Without the directory: a start is skipped by the condition, not failed.
    m.succeed("systemctl start %s" % service)
    p = metrics_props(m, service)
    check(p["ConditionResult"] == "no" and p["Result"] == "success"
          and p["ActiveState"] == "inactive",
          "without %s, %s is skipped by its condition" % (TEXTFILE_DIR, service), str(p))
    # ... and the timer goes on firing (it counts by the clock, not from the last activation).
    last = t["LastTriggerUSec"]
    m.wait_until_succeeds("[ \"$(systemctl show -p LastTriggerUSec --value %s)\" != '%s' ]"
                          % (timer, last), 20)
    t, p = metrics_props(m, timer), metrics_props(m, service)
    check(t["ActiveState"] == "active" and t["NextElapseUSecRealtime"] not in ("", "0"),
          "%s fired while skipped, and is due again" % timer, str(t))
    check(p["ConditionResult"] == "no" and p["Result"] == "success",
          "... the run it started was skipped, and did not fail", str(p))
    failed = m.succeed("systemctl list-units --failed --plain --no-legend").strip()
    check(METRICS_UNIT not in failed, "no ebs-hydrate-metrics unit failed", failed)
    logged = m.succeed("journalctl --no-pager -q -o cat -u %s --since '%s'"
                       % (service, since)).strip()
    check(logged == "", "the skipped runs logged nothing (LogLevelMax=warning)", logged)

    # node_exporter installed: the timer alone writes the file within a tick.
    m.succeed("install -d -m 0755 %s" % TEXTFILE_DIR)
    m.wait_until_succeeds("test -s %s/ebs-hydrate.prom" % TEXTFILE_DIR, 20)
    m.succeed("rm -r /run/systemd/system/%s.d && systemctl daemon-reload" % timer)
    p = metrics_props(m, service)
    check(p["ConditionResult"] == "yes" and p["Result"] == "success",
          "%s ran once the directory existed" % service, str(p))
    listing = m.succeed("ls -A %s" % TEXTFILE_DIR).split()
    check(listing == ["ebs-hydrate.prom"], "only ebs-hydrate.prom in %s, no temporary file"
          % TEXTFILE_DIR, " ".join(listing))
    mode = m.succeed("stat -c '%%a %%U' %s/ebs-hydrate.prom" % TEXTFILE_DIR).strip()
    check(mode == "644 root", "mode 0644, readable by node_exporter's user", mode)
    text = m.succeed("cat %s/ebs-hydrate.prom" % TEXTFILE_DIR)
    vm.log("ebs-hydrate.prom:\n" + text.rstrip())
    labels = 'volume_id="%s",device="/dev/%s",device_name=""' % (vol.volume_id, vol.kname)

    def sample(name, extra=""):
        prefix = "%s{%s%s} " % (name, labels, extra)
        lines = [ln for ln in text.splitlines() if ln.startswith(prefix)]
        check(len(lines) == 1, "one sample %s%s for %s" % (name, extra, vol.volume_id),
              " / ".join(lines))
        return int(lines[0][len(prefix):])

    check(sample("ebs_hydrate_volume_size_bytes") == vol.size, "size of %s" % vol.volume_id)
    check(0 < sample("ebs_hydrate_volume_hydrated_bytes") <= vol.size,
          "hydrated bytes of %s" % vol.volume_id)
    check(sample("ebs_hydrate_volume_running") == 1, "the running instance, from the bus")
    states = {s: sample("ebs_hydrate_volume_state", ',state="%s"' % s)
              for s in ("hydrating", "paused", "completed", "failed", "stopped", "mismatched")}
    check(sum(states.values()) == 1 and (states["hydrating"] or states["completed"]),
          "one state, hydrating or completed", str(states))
    phases = {s: sample("ebs_hydrate_volume_phase", ',phase="%s"' % s)
              for s in ("metadata", "hot-paths", "used", "free", "done", "unknown")}
    check(sum(phases.values()) == 1 and not phases["unknown"],
          "one phase, the one the instance reports on the bus", str(phases))


def step_b3(m):
    vol = VOL_A
    try:
        m.succeed("busctl call %s%s %s %s Pause" % (BUS_NAME, vol.kname, BUS_PATH, BUS_IFACE))
        m.wait_until_succeeds("busctl --json=short get-property %s%s %s %s State | "
                              "grep -q '\"paused\"'" % (BUS_NAME, vol.kname, BUS_PATH,
                                                        BUS_IFACE), 10)
        vm.log("ok: State is paused; STATUS=%r" % unit_props(m, unit_of(vol))["StatusText"])
        rig1 = rig_settled(m, vol)
        hyd1 = bus_get(m, vol, "HydratedBytes")
        time.sleep(5)
        rig2, hyd2 = m.hydrated(vol.name)[0], bus_get(m, vol, "HydratedBytes")
        check(hyd2 == hyd1, "paused: HydratedBytes stays put for 5 s", "%d" % hyd1)
        check(rig2 == rig1, "paused: the rig fetched nothing for 5 s", "%d" % rig1)
        check(bus_get(m, vol, "RateBytesPerSecond") >= 0, "RateBytesPerSecond readable")
    finally:
        m.run("busctl call %s%s %s %s Resume" % (BUS_NAME, vol.kname, BUS_PATH, BUS_IFACE))
    m.wait_until_succeeds("busctl --json=short get-property %s%s %s %s State | "
                          "grep -q '\"hydrating\"'" % (BUS_NAME, vol.kname, BUS_PATH,
                                                       BUS_IFACE), 10)
    deadline = time.monotonic() + 20
    while bus_get(m, vol, "HydratedBytes") <= hyd2 and time.monotonic() < deadline:
        time.sleep(1)
    hyd3 = bus_get(m, vol, "HydratedBytes")
    check(hyd3 > hyd2, "resumed: State hydrating, HydratedBytes grows", "%d > %d" % (hyd3, hyd2))
    check(m.hydrated(vol.name)[0] > rig2, "resumed: the rig fetches again")


def step_b4(m):
    vol = VOL_A
    vm.log("ebs-hydratectl status:\n" + m.succeed("ebs-hydratectl status").rstrip())
    out = m.succeed("ebs-hydratectl status --json")
    doc = json.loads(out)
    vols = [v for v in doc.get("volumes", []) if v.get("volume_id") == vol.volume_id]
    check(len(vols) == 1, "ebs-hydratectl status --json lists %s once" % vol.volume_id, out)
    v = vols[0]
    expect = {"device": "/dev/" + vol.kname, "device_name": "", "state": "hydrating",
              "size_bytes": vol.size, "error_count": 0, "running": True}
    for key, value in expect.items():
        check(v.get(key) == value, "ctl json: %s" % key, repr(v.get(key)))
    check(0 < v.get("hydrated_bytes", -1) < vol.size, "ctl json: hydrated_bytes",
          repr(v.get("hydrated_bytes")))
    check(isinstance(v.get("percent"), float), "ctl json: percent", repr(v.get("percent")))
    for key in ("rate_bytes_per_second", "eta_seconds"):
        check(isinstance(v.get(key), int), "ctl json: %s" % key, repr(v.get(key)))
    # The bash completion the package installed, driven as bash drives it, with the real
    # ebs-hydratectl behind it: the running volume's id and kernel name, and its disk.
    m.write_file("/root/complete.sh", GUEST_COMPLETE)
    out = m.succeed("bash --norc --noprofile /root/complete.sh 'ebs-hydratectl status '")
    check(vol.volume_id in out.split() and vol.kname in out.split(),
          "bash completion of ebs-hydratectl status offers the running volume", out)
    out = m.succeed("bash --norc --noprofile /root/complete.sh 'ebs-hydrated /dev/nvme'")
    check("/dev/" + vol.kname in out.split(),
          "bash completion of ebs-hydrated offers its disk", out)


# Drives the completion installed for the command of $1 as bash does (COMP_WORDS, COMP_CWORD,
# COMP_LINE, COMP_POINT) and prints what it offers; compopt works only under readline.
GUEST_COMPLETE = r"""line=$1
read -ra COMP_WORDS <<<"$line"
[[ $line == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMP_LINE=$line COMP_POINT=${#line}
compopt() { :; }
. "/usr/share/bash-completion/completions/${COMP_WORDS[0]}" || exit 3
spec=$(complete -p "${COMP_WORDS[0]}") || exit 3
[[ $spec =~ -F\ ([^ ]+) ]] || exit 3
"${BASH_REMATCH[1]}" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
"""


def step_c1(m):
    vol = VOL_A
    m.set_volume_rate(vol.name, 0)  # watched enough: let it finish
    p = wait_unit(m, unit_of(vol), finished, "finished", 120)
    status = m.succeed("systemctl status --no-pager %s || true" % unit_of(vol))
    vm.log("systemctl status:\n" + status.rstrip())
    check(vol.volume_id in p["StatusText"] and "hydrated" in p["StatusText"],
          "the final STATUS says the volume is hydrated", repr(p["StatusText"]))
    check(p["Result"] == "success", "%s result is success" % unit_of(vol), p["Result"])
    check(p["ActiveState"] == "active" and p["SubState"] == "exited",
          "%s is active (exited) after completion" % unit_of(vol),
          "%s/%s" % (p["ActiveState"], p["SubState"]))
    check("active (exited)" in status, "systemctl status says active (exited)")


def step_c2(m):
    vol = VOL_A
    # Its only completion: the record may be sent just before the process exits, when journald
    # can no longer tell its unit, so it is matched on the volume alone.
    recs = wait_journal_records(m, 30, "MESSAGE_ID=" + MESSAGE_COMPLETE,
                                "VOLUME_ID=" + vol.volume_id)
    for r in recs:
        vm.log("journal: %s VOLUME_ID=%s DEVICE=%s" % (r.get("MESSAGE"), r.get("VOLUME_ID"),
                                                       r.get("DEVICE")))
    check(any(r.get("VOLUME_ID") == vol.volume_id and r.get("DEVICE") == "/dev/" + vol.kname
              for r in recs),
          "journal: MESSAGE_ID=%s with VOLUME_ID=%s DEVICE=/dev/%s"
          % (MESSAGE_COMPLETE, vol.volume_id, vol.kname))


def step_c3(m):
    done, size, pct = m.hydrated(VOL_A.name)
    check(done == size, "rig: %s is 100%% hydrated" % VOL_A.volume_id, "%.1f%%" % pct)


def step_d1(m):
    vol = VOL_B
    attach(m, vol, hotplug=True)
    vol.kname = m.block_device(vol.serial)
    p = wait_unit(m, unit_of(vol), started, "started", 60)
    check(p["ActiveState"] == "active" and p["SubState"] == "running",
          "hot-plugged %s: %s starts by itself" % (vol.volume_id, unit_of(vol)),
          "%s/%s" % (p["ActiveState"], p["SubState"]))


def journal_cursor(m):
    return m.succeed("journalctl -n 0 --show-cursor -q | sed -n 's/^-- cursor: //p'").strip()


def step_d2(m, record):
    vol = VOL_B
    deadline = time.monotonic() + 90
    pct = 0.0
    while time.monotonic() < deadline:
        pct = m.hydrated(vol.name)[2]
        if pct >= 30:
            break
        time.sleep(1)
    check(30 <= pct <= 75, "rig: %s is between 30%% and 75%% hydrated" % vol.volume_id,
          "%.1f%%" % pct)
    unit = unit_of(vol)
    cursor = journal_cursor(m)
    m.remove_volume(vol.name)
    m.wait_until_succeeds("! test -e /sys/block/%s" % vol.kname, 30)
    vm.log("ok: device_del: /dev/%s is gone" % vol.kname)
    # Watch the unit closely: a failure followed by an auto-restart that fails on the missing
    # device would also end "inactive" after a while.
    seen = []
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        p = unit_props(m, unit)
        state = "%s/%s/%s" % (p["ActiveState"], p["SubState"], p["Result"])
        if not seen or seen[-1] != state:
            seen.append(state)
        if p["ActiveState"] == "inactive" and p["SubState"] == "dead":
            break
        time.sleep(0.5)
    journal = m.succeed("journalctl --no-pager -o short-monotonic --after-cursor='%s' -u %s"
                        % (cursor, unit))
    vm.log("journal of %s since device_del:\n%s" % (unit, journal.rstrip()))
    vm.log("unit states seen: %s" % " -> ".join(seen))
    record["rig_before"] = m.hydrated(vol.name)[0]
    vm.log("rig: %.1f MiB hydrated when detached" % (record["rig_before"] / MIB))
    state = "%s/%s.state" % (STATE_DIR, vol.volume_id)
    check(m.execute("test -s %s" % state)[0] == 0, "state file %s exists" % state)
    check(seen[-1] == "inactive/dead/success", "%s ended inactive (dead), result success" % unit,
          seen[-1])
    check(not any(s.startswith("failed") or "auto-restart" in s for s in seen),
          "%s never failed nor waited to restart" % unit, " -> ".join(seen))
    check("Failed with result" not in journal and "Scheduled restart" not in journal,
          "the journal shows a clean stop, no failure and no restart")


def step_d3(m, record):
    vol = VOL_B
    attach(m, vol, hotplug=True)
    vol.kname = m.block_device(vol.serial)
    unit = unit_of(vol)
    p = wait_unit(m, unit, started, "started", 60)
    check(p["ActiveState"] == "active", "re-attached: %s started by itself" % unit,
          "%s/%s" % (p["ActiveState"], p["SubState"]))
    # The record of this instance (its process, which runs on: d4 lets it finish), not the
    # first attachment's, which started from 0.
    recs = wait_journal_records(m, 30, "MESSAGE_ID=" + MESSAGE_STARTED,
                                "VOLUME_ID=" + vol.volume_id, "_PID=" + main_pid_of(m, unit))
    last = recs[-1].get("MESSAGE", "") if recs else ""
    mt = re.search(r"from (\d+\.\d)%", last)
    check(mt is not None and float(mt.group(1)) > 0,
          "journal: the new instance resumed, not from 0", repr(last))
    record["resumed_at"] = float(mt.group(1))
    hydrated = bus_get(m, vol, "HydratedBytes")
    check(hydrated >= record["resumed_at"] / 100 * vol.size - MIB,
          "D-Bus: HydratedBytes right after the start is the checkpoint's or more",
          "%.1f MiB" % (hydrated / MIB))


def step_d4(m, record):
    vol = VOL_B
    m.set_volume_rate(vol.name, 0)
    p = wait_unit(m, unit_of(vol), finished, "finished", 120)
    read = bytes_read(m, vol.kname)
    left = vol.size - record.get("rig_before", 0)
    vm.log("second attachment read %.1f MiB; %.1f MiB were cold when detached"
           % (read / MIB, left / MIB))
    # Reads in flight at device_del may have reached the rig without reaching the checkpoint:
    # up to the queue depth the detached run ended with x 1 MiB (its journal says; QueueDepth=
    # auto has no bound by volume size) may be read twice; udev's probes add a little.
    ends = re.findall(r"queue depth (\d+) at the end",
                      m.succeed("journalctl --no-pager -o cat -u %s" % unit_of(vol)))
    depth = int(ends[0]) if ends else 256
    bound = left + (depth + 8) * MIB
    check(read <= bound, "the re-attached volume was not read from 0",
          "%.1f MiB read <= %.1f MiB (depth %d at the detach)" % (read / MIB, bound / MIB, depth))
    if "resumed_at" in record:
        cold = vol.size * (1 - record["resumed_at"] / 100)
        check(read <= cold + 4 * MIB, "it read what the checkpoint left cold, no more",
              "%.1f MiB read, %.1f MiB cold at %.1f%%"
              % (read / MIB, cold / MIB, record["resumed_at"]))
    done, size, pct = m.hydrated(vol.name)
    check(done == size, "rig: %s is 100%% hydrated" % vol.volume_id, "%.1f%%" % pct)
    check(p["Result"] == "success", "%s result is success" % unit_of(vol), p["Result"])
    check(p["ActiveState"] == "active" and p["SubState"] == "exited",
          "%s completed: active (exited)" % unit_of(vol),
          "%s/%s" % (p["ActiveState"], p["SubState"]))


def step_e(m, restart):
    m.reboot(restart=restart)
    base = bytes_read(m, m.block_device(VOL_BASE.serial))
    for vol in (VOL_A, VOL_B):
        if vol.name not in m.volumes or not m.volumes[vol.name].attached:
            raise StepFailed("%s is not attached (an earlier step failed)" % vol.volume_id)
        vol.kname = m.block_device(vol.serial)
        p = wait_unit(m, unit_of(vol), finished, "finished", 60)
        check(p["ActiveState"] == "active" and p["SubState"] == "exited",
              "after the reboot %s (%s) is active (exited)" % (unit_of(vol), vol.volume_id),
              "%s/%s result=%s" % (p["ActiveState"], p["SubState"], p["Result"]))
        check("already hydrated" in p["StatusText"] and vol.volume_id in p["StatusText"],
              "its STATUS says already hydrated", repr(p["StatusText"]))
        read = bytes_read(m, vol.kname)
        check(read < base + MIB, "%s was not read again" % vol.kname,
              "%.0f KiB read since boot; udev's probes read %.0f KiB of the untouched disk"
              % (read / 1024, base / 1024))
        check(m.hydrated(vol.name)[0] == vol.size, "rig: %s still 100%%" % vol.volume_id)


def make_ext4_image(path, size):
    """A raw GPT disk image of @size bytes, partition 1 from 1 MiB holding ext4 with 48 MiB of
    data files and a 4 MiB file, hot, which step g names in HotPaths=."""
    tree = path + ".d"
    os.makedirs(os.path.join(tree, "data"))
    for i in range(6):
        with open(os.path.join(tree, "data", "file-%d" % i), "wb") as f:
            f.write(os.urandom(8 * MIB))
    with open(os.path.join(tree, "hot"), "wb") as f:
        f.write(os.urandom(4 * MIB))
    with open(path, "wb") as f:
        f.truncate(size)
    subprocess.run(["sfdisk", "-q", path], input="label: gpt\nstart=2048, type=linux\n",
                      text=True, check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-d", tree, "-E", "offset=%d" % MIB, path,
                       "%dk" % ((size - 2 * MIB) // 1024)], check=True)
    shutil.rmtree(tree)


def step_g(m, data):
    vol = VOL_D
    conf = "/etc/ebs-hydrate/hydrate.conf.d/50-step-g.conf"
    m.write_file(conf, "[Match]\nVolumeId=%s\n[Hydrate]\nEnabled=no\n" % vol.volume_id)
    m.add_cold_volume(vol.name, vol.serial, vol.size, bps=vol.bps, hotplug=True, data=data)
    vol.kname = m.block_device(vol.serial)
    unit = unit_of(vol)
    p = wait_run_finished(m, vol.kname, unit, 60)
    check("disabled by configuration" in p["StatusText"],
          "%s: first disabled by a drop-in" % unit, repr(p["StatusText"]))
    m.succeed("udevadm settle && mkdir -p /srv/d && mount -o ro /dev/%sp1 /srv/d" % vol.kname)
    m.write_file(conf, "[Match]\nVolumeId=%s\n[Hydrate]\nMode=used\nHotPaths=/srv/d/hot\n"
                 % vol.volume_id)
    # Step w: a stand-in database ordered after the hot paths, started while they are read.
    # At 16 MiB/s the metadata (10 MiB) could be read before the record was; at 2 MiB/s it
    # takes 5 s, and the cap goes back up once the database has been started.
    m.set_volume_rate(vol.name, 2 * MIB)
    m.succeed("systemctl restart %s" % unit, 300)
    record = "/run/ebs-hydrate/%s.record" % vol.volume_id
    before = m.succeed("cat %s" % record)
    m.write_file("/etc/systemd/system/fake-db.service", FAKE_DB_UNIT % record)
    m.succeed("systemctl daemon-reload && systemctl start --no-block fake-db.service")
    m.set_volume_rate(vol.name, vol.bps)
    p = wait_unit(m, unit, finished, "finished", 300)
    invocation = invocation_of(m, unit)
    log = m.succeed("journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID=%s" % invocation)
    vm.log_output("journal of %s (invocation %s):" % (unit, invocation), log)
    check(p["ActiveState"] == "active" and p["SubState"] == "exited" and p["Result"] == "success",
          "restarted with Mode=used: %s completes" % unit,
          "%s/%s result=%s" % (p["ActiveState"], p["SubState"], p["Result"]))
    check(re.search(r"partition 1 \(ext4, [^)]*mounted on /srv/d\): .*\(GETFSMAP", log),
          "the mounted partition was mapped with GETFSMAP, inside the unit's sandbox")
    # With HotPaths=, the plan is logged as the file systems are mapped ("hot paths pending":
    # the metadata is read meanwhile) and again as the hot paths join it: the last one counts.
    plans = list(re.finditer(r"plan: metadata ([^,]+), hot paths ([^,]+), used ([^,]+), "
                             r"free ([^,;]+)", log))
    check(plans, "the plan line is in the journal")
    check(len(plans) == 2 and plans[0].group(2) == "pending",
          "the plan is logged when mapped (hot paths pending), then with the hot paths",
          "; ".join(p.group(0) for p in plans))
    plan = plans[-1]
    # The plan counts whole 512 KiB chunks: the 4 MiB file touches 8 or 9 of them.
    check(plan.group(1) != "0 B" and plan.group(2) in ("4.0 MiB", "4.5 MiB") and
          plan.group(4) != "0 B", "the plan has metadata, the 4 MiB hot file (FIEMAP as user "
          "ebs-hydrate) and free space", plan.group(0))
    check("free space left cold (Mode=used)" in p["StatusText"],
          "its final STATUS says free space was left cold", repr(p["StatusText"]))
    v = json.loads(m.succeed("ebs-hydratectl status --json %s" % vol.volume_id))["volumes"][0]
    check(v["state"] == "completed" and v["free_space_cold"] is True and v["percent"] < 100,
          "ebs-hydratectl: completed by Mode=used", repr(v))
    done, size, pct = m.hydrated(vol.name)
    check(pct < 50, "rig: only the used part of %s was read" % vol.volume_id,
          "%.1f%% of %d MiB in the overlay" % (pct, size // MIB))
    step_w(m, before, record)
    m.succeed("systemctl stop fake-db.service && rm /etc/systemd/system/fake-db.service && "
              "systemctl daemon-reload")
    m.succeed("umount /srv/d && rm -f %s && rmdir %s" % (conf, os.path.dirname(conf)))


# A stand-in database, ordered after hydration as ebs-hydratectl(1) says, run by an unprivileged
# dynamic user: its ExecStart keeps the volume record it saw when it was let start.
FAKE_DB_UNIT = """[Unit]
Description=stand-in database (ebs-hydrate test, step w)
RequiresMountsFor=/srv/d
[Service]
Type=oneshot
RemainAfterExit=yes
DynamicUser=yes
RuntimeDirectory=fake-db
ExecStartPre=/usr/bin/ebs-hydratectl wait --phase=hot --timeout=10min /srv/d
ExecStart=/bin/sh -c 'cat %s > /run/fake-db/saw; echo UID=$$(id -u) >> /run/fake-db/saw'
TimeoutStartSec=11min
"""


def record_field(text, key):
    m = re.search(r"^%s=(.*)$" % key, text, re.M)
    return m.group(1) if m else None


def step_w(m, before, record):
    """Step w (inside step g): the stand-in database started only once the hot paths were read,
    then at once on the hydrated volume."""
    check(record_field(before, "PHASE") == "metadata" and
          record_field(before, "STATE") == "hydrating",
          "w: when the database was started, the volume was still at its metadata", before)
    p = wait_unit(m, "fake-db.service", lambda p: p["ActiveState"] == "active", "active", 120)
    saw = m.succeed("cat /run/fake-db/saw")
    vm.log_output("what fake-db saw when it started:", saw)
    check(record_field(saw, "STATE") == "completed" or
          record_field(saw, "PHASE") in ("used", "free", "done"),
          "w: the database started only once the hot paths were read", saw)
    check(record_field(saw, "UID") not in (None, "0"),
          "w: it waited as an unprivileged dynamic user", "UID=%s" % record_field(saw, "UID"))
    t0 = time.monotonic()
    m.succeed("systemctl restart fake-db.service", 120)
    elapsed = time.monotonic() - t0
    saw = m.succeed("cat /run/fake-db/saw")
    check(record_field(saw, "STATE") == "completed",
          "w: restarted on the hydrated volume, it saw it completed", saw)
    check(elapsed < 20, "w: ... and started at once (%.1f s, under TCG)" % elapsed)


# Step h: its reads give way to a workload on the same volume (Yield=, the disk's counters).
YIELDING = "; yielding to other I/O on the volume"
LOAD_UNIT = "test-yield-load"
LOAD_SCRIPT = "/run/test-yield-load"
LOAD_COUNT = "/run/test-yield-load.mib"
LOAD_MIB = 8  # the workload re-reads this much at the start of the volume, warm by then
HYDRATING_RE = re.compile(r"^vol-[0-9a-f]{17}: \d+\.\d% hydrated \(")


def yield_view(m, vol):
    """What the three interfaces say: {"status": StatusText, "bus": the D-Bus Yielding,
    "ctl": ebs-hydratectl --json's "yielding", "state": its "state", "active": the unit's
    ActiveState/SubState}."""
    p = unit_props(m, unit_of(vol))
    v = json.loads(m.succeed("ebs-hydratectl --json status %s" % vol.kname))["volumes"][0]
    return {"status": p["StatusText"], "bus": bus_get(m, vol, "Yielding"),
            "ctl": v.get("yielding"), "state": v.get("state"),
            "active": "%s/%s" % (p["ActiveState"], p["SubState"])}


def says_yielding(view):
    return view["status"].endswith(YIELDING) and view["bus"] is True and view["ctl"] is True


def says_not_yielding(view):
    """Hydrating, and none of the three says yielding (STATUS= may say "measuring rate" right
    after a start)."""
    return (HYDRATING_RE.match(view["status"]) is not None and "yielding" not in view["status"]
            and view["bus"] is False and view["ctl"] is False and view["state"] == "hydrating"
            and view["active"] == "active/running")


def wait_view(m, vol, pred, timeout):
    """Poll yield_view() until @pred holds: (seconds it took, the view), or (None, last view)."""
    t0 = time.monotonic()
    while True:
        view = yield_view(m, vol)
        if pred(view):
            return time.monotonic() - t0, view
        if time.monotonic() - t0 > timeout:
            return None, view
        time.sleep(0.5)


def start_load(m, vol):
    """The workload: as root, outside the unit, direct reads of the first LOAD_MIB MiB of the
    volume, again and again with a short pause (about 40 MiB/s here), in a transient unit (so
    that it surely stops); it counts the MiB it read in LOAD_COUNT. Returns once its first
    pass is done."""
    m.write_file(LOAD_SCRIPT, "n=0\nwhile :; do\n"
                 "    dd if=/dev/%s of=/dev/null bs=256k count=%d iflag=direct status=none "
                 "|| exit 1\n"
                 "    n=$((n + %d)); echo $n > %s; sleep 0.1\ndone\n"
                 % (vol.kname, LOAD_MIB * 4, LOAD_MIB, LOAD_COUNT))
    # bash runs the script: the initramfs mounts /run noexec.
    m.succeed("rm -f {c}; systemd-run --quiet --collect --unit={u} /bin/bash {s} || exit 1; "
              "for i in $(seq 50); do [ -s {c} ] && exit 0; sleep 0.1; done; "
              "systemctl status --no-pager {u}; exit 1".format(c=LOAD_COUNT, u=LOAD_UNIT,
                                                             s=LOAD_SCRIPT))
    return time.monotonic()


def load_read(m):
    """MiB the workload has read so far."""
    rc, out, _ = m.run("cat %s" % LOAD_COUNT)
    return int(out) if rc == 0 and out.strip().isdigit() else 0


def stop_load(m, t0):
    """Stop the workload: (MiB it read, MiB/s)."""
    m.run("systemctl stop %s.service" % LOAD_UNIT)
    secs = time.monotonic() - t0
    mib = load_read(m)
    return mib, mib / secs


def instance_log(m, unit):
    invocation = invocation_of(m, unit)
    return m.succeed("journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID=%s" % invocation)


def step_h(m):
    vol = VOL_H
    conf = "/etc/ebs-hydrate/hydrate.conf.d/50-step-h.conf"
    attach(m, vol, hotplug=True)
    try:
        vol.kname = m.block_device(vol.serial)
        unit = unit_of(vol)
        p = wait_unit(m, unit, started, "started", 60)
        check(p["ActiveState"] == "active" and p["SubState"] == "running",
              "hot-plugged %s: %s hydrates" % (vol.volume_id, unit),
              "%s/%s" % (p["ActiveState"], p["SubState"]))
        # 1. The shipped unit, no drop-in, and the disk's counters readable in its sandbox.
        show = m.succeed("systemctl show -p User,ProcSubset,ProtectProc,DevicePolicy,"
                         "DropInPaths %s" % unit)
        vm.log("unit: " + " ".join(show.split()))
        check("User=ebs-hydrate\n" in show and "ProcSubset=pid\n" in show and
              "DevicePolicy=closed\n" in show and "DropInPaths=\n" in show,
              "%s runs under the shipped unit (user ebs-hydrate, ProcSubset=pid, "
              "DevicePolicy=closed), no drop-in" % unit)
        # Wait for the workload's region to be hydrated (offset order here). D-Bus, not the
        # rig: hydrated() flushes the overlay, which waits for the reads queued at the cap.
        deadline = time.monotonic() + 30
        while bus_get(m, vol, "HydratedBytes") < 2 * LOAD_MIB * MIB and \
                time.monotonic() < deadline:
            time.sleep(1)
        log = instance_log(m, unit)
        vm.log_output("journal of %s:" % unit, log)
        check("Cannot read /sys/block" not in log and "without yielding" not in log,
              "its journal has no \"Cannot read /sys/block/%s/stat\" warning" % vol.kname)
        check(re.search(r"^Hydrating /dev/%s .*KiB reads$" % vol.kname, log, re.M),
              "its start record does not say Yield=no")
        took, view = wait_view(m, vol, says_not_yielding, 15)
        check(took is not None, "before the workload: hydrating, not yielding", repr(view))
        # 2. A workload on the device: it gives way, and takes back when the workload ends.
        t0 = start_load(m, vol)
        try:
            took, view = wait_view(m, vol, says_yielding, 20)
            vm.log("yielding view: %r" % view)
            check(took is not None, "with a workload reading /dev/%s: StatusText ends \"%s\", "
                  "D-Bus Yielding true, ebs-hydratectl \"yielding\": true"
                  % (vol.kname, YIELDING[2:]),
                  "%.1f s after it started" % (time.monotonic() - t0) if took is not None
                  else "not after 20 s: %r; the workload read %d MiB" % (view, load_read(m)))
            check(view["state"] == "hydrating", "ebs-hydratectl --json: state stays hydrating",
                  view["state"])
            table = m.succeed("ebs-hydratectl status %s" % vol.kname)
            vm.log("ebs-hydratectl status:\n" + table.rstrip())
            check(re.search(r"\byielding\b", table.splitlines()[-1]),
                  "ebs-hydratectl status: STATE yielding", table.splitlines()[-1])
        finally:
            mib, rate = stop_load(m, t0)
        vm.log("the workload read %d MiB (%.1f MiB/s)" % (mib, rate))
        log = instance_log(m, unit)
        mt = re.search(r"other I/O on the device \(([\d.]+) MiB/s\): yielding to it", log)
        check(mt is not None, "journal: \"other I/O on the device (X MiB/s): yielding to it\"",
              mt.group(0) if mt else "")
        check("Cannot read /sys/block" not in log, "... and still no \"Cannot read\" warning")
        # It looks back 5 s for their reads, then waits 5 s of quiet; STATUS= every 2 s.
        t_stop = time.monotonic()
        took, view = wait_view(m, vol, says_not_yielding, 20)
        check(took is not None, "workload stopped: Yielding false, StatusText and "
              "ebs-hydratectl no longer say yielding, still hydrating",
              "%.1f s after it stopped" % (time.monotonic() - t_stop) if took is not None
              else "not after 20 s: %r" % view)
        # 3. Yield=no: the same workload is not given way to.
        m.write_file(conf, "[Match]\nVolumeId=%s\n[Hydrate]\nYield=no\n" % vol.volume_id)
        m.succeed("systemctl restart %s" % unit, 60)
        p = wait_unit(m, unit, started, "started", 60)
        check(p["ActiveState"] == "active" and p["SubState"] == "running",
              "with a Yield=no drop-in, restarted: %s hydrates" % unit,
              "%s/%s" % (p["ActiveState"], p["SubState"]))
        m.wait_until_succeeds("busctl get-property %s%s %s %s State" % (BUS_NAME, vol.kname,
                                                                         BUS_PATH, BUS_IFACE),
                              30)
        log = instance_log(m, unit)
        check(re.search(r"^Hydrating /dev/%s .*, Yield=no$" % vol.kname, log, re.M),
              "its start record says Yield=no")
        # Watched for 10 s at least, and until the workload read what was given way to above.
        t0 = start_load(m, vol)
        seen = []
        try:
            while True:
                view = yield_view(m, vol)
                if not says_not_yielding(view):
                    seen.append(view)
                secs = time.monotonic() - t0
                if secs >= 25 or (secs >= 10 and load_read(m) >= mib):
                    break
                time.sleep(0.5)
        finally:
            mib2, rate2 = stop_load(m, t0)
        vm.log("the workload read %d MiB (%.1f MiB/s)" % (mib2, rate2))
        check(mib2 >= mib, "the same workload ran, and read as much as what was yielded to",
              "%d MiB in %.1f s" % (mib2, mib2 / rate2 if rate2 else 0))
        check(not seen, "Yield=no: while it ran, never yielding, still hydrating",
              repr(seen[0]) if seen else "")
        log = instance_log(m, unit)
        vm.log_output("journal of %s:" % unit, log)
        check("yielding to it" not in log, "journal: no \"yielding to it\" with Yield=no")
        pct = bus_get(m, vol, "Percent")
        check(pct < 100, "%s is still hydrating: all this was watched while it read"
              % vol.volume_id, "%.1f%%" % pct)
    finally:
        m.run("systemctl stop %s.service; rm -f %s %s %s; rmdir %s 2>/dev/null"
              % (LOAD_UNIT, LOAD_SCRIPT, LOAD_COUNT, conf, os.path.dirname(conf)))
        # Detached: its instance stops. Without the cap first, the reads queued at it (tens of
        # MiB at 4 MiB/s) would hold the detach up.
        m.set_volume_rate(vol.name, 0)
        m.remove_volume(vol.name)


# ---- step k: what AWS knows (ebs-hydrate-aws under its unit, the host's stub) --------------

AWS_STUB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "aws", "aws-stub.py")
# The guest's only network peer: QEMU forwards it to the stub on the host's 127.0.0.1
# (vm.Machine(network=...), a restricted user network). IMDS and EC2 both, as the stub serves.
STUB_GUEST_ADDR = "10.0.2.100:80"
STUB_URL = "http://10.0.2.100"
AWS_DIR = "/var/lib/ebs-hydrate-aws"
AWS_DROPIN = "/etc/systemd/system/ebs-hydrate-aws@.service.d/stub.conf"
# On EC2, ebs-hydrate-id reads the volume id from the NVMe identify data and the shipped rule
# starts ebs-hydrate-aws@ only then (EBS_VOLUME_ID=vol-...). QEMU's identify data is not EBS's:
# for this step's two volumes only, this rule says what ebs-hydrate-id says on EC2.
AWS_RULE = "/etc/udev/rules.d/89-ebs-hydrate-test-aws.rules"
AWS_CONF = "/etc/ebs-hydrate/hydrate.conf.d/50-step-k.conf"


class Stub:
    """tests/aws/aws-stub.py on the host's 127.0.0.1: its port goes to the file the guest's
    forward reads (host-relay.py), one JSON line per request to its log."""

    def __init__(self, workdir):
        self.port_file = os.path.join(workdir, "aws-stub.port")
        self.log = os.path.join(workdir, "aws-stub.log")
        self.scenario = os.path.join(workdir, "aws-stub.json")
        self.proc = None

    def start(self, scenario):
        with open(self.scenario, "w") as f:
            json.dump(scenario, f)
        for path in (self.port_file, self.log):
            if os.path.exists(path):
                os.unlink(path)
        open(self.log, "w").close()
        self.proc = subprocess.Popen([sys.executable, AWS_STUB, self.scenario, self.port_file,
                                      self.log], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     preexec_fn=vm._die_with_parent)
        deadline = time.monotonic() + 20
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = self.proc.stdout.read().decode(errors="replace") if self.proc.poll() \
                    is not None else "no port after 20 s"
                raise StepFailed("the AWS stub did not start: " + out.strip()[-500:])
            time.sleep(0.1)
        with open(self.port_file) as f:
            self.port = int(f.read())
        vm.log("AWS stub on 127.0.0.1:%d (guest: %s)" % (self.port, STUB_URL))

    def requests(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f if line.strip()]

    def stop(self):
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)  # the guest's forward reaches nothing any more
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def unit_show(m, unit, *props):
    out = m.succeed("systemctl show -p %s %s" % (",".join(props), unit))
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def helper_ran(m, unit, timeout=60):
    """The helper unit's properties once its process exited (nothing to follow: it answers once)."""
    deadline = time.monotonic() + timeout
    props = ("ActiveState", "SubState", "Result", "ExecMainStatus",
             "ExecMainExitTimestampMonotonic", "InvocationID", "User", "DropInPaths",
             "PrivateDevices", "RestrictAddressFamilies")
    while True:
        p = unit_show(m, unit, *props)
        if p["ExecMainExitTimestampMonotonic"] not in ("", "0") and \
                p["ActiveState"] != "activating":
            return p
        if time.monotonic() > deadline:
            raise StepFailed("%s did not run within %d s: %s" % (unit, timeout, p))
        time.sleep(0.5)


def device_appeared_usec(m, kname):
    """When udev first saw the disk (USEC_INITIALIZED: CLOCK_MONOTONIC, as systemd's stamps)."""
    out = m.succeed("udevadm info --query=property --name=/dev/%s" % kname)
    return int(re.search(r"^USEC_INITIALIZED=(\d+)$", out, re.M).group(1))


def guest_now_usec(m):
    return int(float(m.succeed("cut -d' ' -f1 /proc/uptime")) * 1e6)


def step_k(m, stub):
    vol, off, snap = VOL_K, VOL_N, VOL_S
    stub.start({"volumes": {vol.volume_id: {"size": 1},
                            off.volume_id: {"size": 1, "snapshot": "snap-0a5e00001"},
                            snap.volume_id: {"size": 1, "snapshot": SNAP_S}},
                "snapshots": {SNAP_S: {"volume_size": 1, "ranges": SNAP_S_RANGES}}})
    try:
        m.write_file(AWS_RULE, "".join(
            'SUBSYSTEM=="block", KERNEL=="nvme*n*", ENV{DEVTYPE}=="disk", '
            'ENV{ID_SERIAL_SHORT}=="%s", ENV{EBS_VOLUME_ID}="%s"\n' % (v.serial, v.volume_id)
            for v in (vol, off, snap)))
        m.write_file(AWS_DROPIN, "[Service]\nEnvironment=AWS_ENDPOINT_URL=%s\n"
                     "Environment=AWS_EC2_METADATA_SERVICE_ENDPOINT=%s\n" % (STUB_URL, STUB_URL))
        m.succeed("udevadm control --reload && systemctl daemon-reload")
        _step_k_empty(m, stub, vol)
        _step_k_aws_off(m, stub, off, vol)
        _step_k_blocks(m, stub, snap)
    finally:
        stub.stop()
        m.run("rm -rf %s %s %s; rmdir %s 2>/dev/null; udevadm control --reload; "
              "systemctl daemon-reload" % (AWS_RULE, os.path.dirname(AWS_DROPIN), AWS_CONF,
                                           os.path.dirname(AWS_CONF)))


def _step_k_empty(m, stub, vol):
    # The network is the forward and nothing else: the host's own address is not reachable.
    connect = "timeout 3 bash -c 'exec 3<>/dev/tcp/%s/%d'"
    rc, _, err = m.run(connect % ("10.0.2.100", 80))
    check(rc == 0, "the guest reaches the stub at %s" % STUB_URL, err.strip())
    rc, _, _ = m.run(connect % ("10.0.2.2", stub.port))
    check(rc != 0, "restricted network: the guest cannot reach the host (10.0.2.2:%d)"
          % stub.port)
    attach(m, vol, hotplug=True)
    t0 = time.monotonic()
    vol.kname = m.block_device(vol.serial)
    unit, helper = unit_of(vol), "ebs-hydrate-aws@%s.service" % vol.kname
    p = wait_run_finished(m, vol.kname, unit, 60)
    vm.log("%s finished %.1f s after device_add (host clock, 1 s polls)"
           % (unit, time.monotonic() - t0))
    read = bytes_read(m, vol.kname)
    t_read = time.monotonic()
    h = helper_ran(m, helper)
    log = m.succeed("journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID=%s" % h["InvocationID"])
    vm.log_output("journal of %s and %s:" % (helper, unit), m.succeed(
        "journalctl --no-pager -o short-monotonic -u %s -u %s" % (helper, unit)))
    vm.log("%s: %s" % (helper, h))
    check(h["Result"] == "success" and h["ExecMainStatus"] == "0",
          "%s ran, started by udev, exit 0" % helper,
          "result %s, exit %s" % (h["Result"], h["ExecMainStatus"]))
    check(h["User"] == "ebs-hydrate-aws" and h["PrivateDevices"] == "yes" and
          h["DropInPaths"] == AWS_DROPIN,
          "... under its shipped unit (user ebs-hydrate-aws, PrivateDevices=yes), the only "
          "drop-in the stub's address", "%s; %s" % (h["User"], h["DropInPaths"]))
    check(re.search(r"^SOURCE=empty$", log, re.M) and re.search(
        r"^VOLUME_ID=%s$" % vol.volume_id, log, re.M),
          "its journal has the findings: VOLUME_ID=%s, SOURCE=empty" % vol.volume_id)
    path = "%s/%s.aws" % (AWS_DIR, vol.volume_id)
    owner, text = m.succeed("stat -c '%%U %%a' %s && cat %s" % (path, path)).split("\n", 1)
    check(owner.split()[0] == "ebs-hydrate-aws" and "SOURCE=empty\n" in text,
          "%s exists, owned by ebs-hydrate-aws, says SOURCE=empty" % path, owner)
    ec2 = [r for r in stub.requests() if r.get("action")]
    vm.log("stub requests: %s" % json.dumps(stub.requests()))
    check(any(r["action"] == "DescribeVolumes" and r["volume"] == vol.volume_id and
              r["signature_ok"] and r["token"] for r in ec2) and
          all(r["signature_ok"] for r in ec2),
          "the stub saw DescribeVolumes for %s, SigV4-signed with the role's credentials from "
          "IMDSv2 (all %d EC2 requests signed right)" % (vol.volume_id, len(ec2)))
    check(p["ActiveState"] == "active" and p["SubState"] == "exited" and p["Result"] == "success",
          "%s: active (exited)" % unit, "%s/%s %s" % (p["ActiveState"], p["SubState"],
                                                      p["Result"]))
    check("complete without reading" in p["StatusText"] and "created empty" in p["StatusText"]
          and "(AWS)" in p["StatusText"] and vol.volume_id in p["StatusText"],
          "STATUS says complete without reading, created empty (AWS)", repr(p["StatusText"]))
    v = json.loads(m.succeed("ebs-hydratectl status --json %s" % vol.volume_id))["volumes"][0]
    vm.log("ebs-hydratectl: %r" % v)
    check(v["state"] == "completed", "ebs-hydratectl says completed", v["state"])
    appeared = device_appeared_usec(m, vol.kname)
    d = unit_show(m, unit, "ExecMainStartTimestampMonotonic", "ExecMainExitTimestampMonotonic")
    hs = unit_show(m, helper, "ExecMainStartTimestampMonotonic")
    at = [(int(t) - appeared) / 1e6 for t in (
        d["ExecMainStartTimestampMonotonic"], hs["ExecMainStartTimestampMonotonic"],
        h["ExecMainExitTimestampMonotonic"], d["ExecMainExitTimestampMonotonic"])]
    vm.log("after the device appeared: ebs-hydrated started at %.2f s, ebs-hydrate-aws at %.2f s, "
           "which exited at %.2f s; ebs-hydrated exited at %.2f s" % tuple(at))
    secs = vol.completed_after = at[3]
    check(0 < secs <= 5, "completed (ebs-hydrated exited) %.2f s after the device appeared "
          "(udev's USEC_INITIALIZED; the helper had answered at %.2f s)" % (secs, at[2]),
          "target 5 s")
    # At least 3 s after the first count (the checks since took most of them).
    time.sleep(max(0.0, 3 - (time.monotonic() - t_read)))
    again = bytes_read(m, vol.kname)
    check(again == read, "nothing read after completion", "%d then %d bytes" % (read, again))
    vol.read = read
    rig = m.hydrated(vol.name)[0]
    vm.log("%s: %.1f MiB read by the guest, %.1f MiB fetched by the rig"
           % (vol.volume_id, read / MIB, rig / MIB))
    check(read <= vol.size // 16, "only what was read before AWS's word: %.1f MiB of %d MiB"
          % (read / MIB, vol.size // MIB), "rig %.1f MiB" % (rig / MIB))


def _step_k_aws_off(m, stub, vol, ref):
    m.write_file(AWS_CONF, "[Match]\nVolumeId=%s\n[Hydrate]\nAws=no\n" % vol.volume_id)
    asked = len(stub.requests())
    attach(m, vol, hotplug=True)
    try:
        vol.kname = m.block_device(vol.serial)
        unit, helper = unit_of(vol), "ebs-hydrate-aws@%s.service" % vol.kname
        # What a run that AWS does not stop reads in as long as the empty one took.
        appeared = device_appeared_usec(m, vol.kname)
        while guest_now_usec(m) < appeared + ref.completed_after * 1e6:
            time.sleep(0.2)
        normal = bytes_read(m, vol.kname)
        vm.log("without AWS's word %s read %.1f MiB in its first %.2f s (the empty one %.1f MiB)"
               % (vol.volume_id, normal / MIB, ref.completed_after, ref.read / MIB))
        h = helper_ran(m, helper)
        log = m.succeed("journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID=%s"
                        % h["InvocationID"])
        vm.log_output("journal of %s:" % helper, log)
        check(h["Result"] == "success" and "Aws=no in the configuration: not asking AWS" in log,
              "Aws=no: %s says it does not ask AWS" % helper, "result %s" % h["Result"])
        check(len(stub.requests()) == asked, "... and the stub got no request",
              "%d new" % (len(stub.requests()) - asked))
        rc, _, _ = m.run("test -e %s/%s.aws" % (AWS_DIR, vol.volume_id))
        check(rc != 0, "... and wrote no findings")
        p = unit_props(m, unit)
        check(p["SubState"] == "running" and "% hydrated" in p["StatusText"],
              "%s hydrates as without AWS" % unit, repr(p["StatusText"]))
        # +16 MiB: the reads in flight when the empty one completed (1 s at the cap).
        check(ref.read <= normal + 16 * MIB, "the empty volume read no more than this run did "
              "in as long (+16 MiB): AWS's word only stopped the reading",
              "%.1f MiB, here %.1f MiB" % (ref.read / MIB, normal / MIB))
    finally:
        m.set_volume_rate(vol.name, 0)
        m.remove_volume(vol.name)


def _step_k_blocks(m, stub, vol):
    stored = sum(end - first for first, end in SNAP_S_RANGES) * 512 * 1024
    attach(m, vol, hotplug=True)
    try:
        t0 = time.monotonic()
        vol.kname = m.block_device(vol.serial)
        unit, helper = unit_of(vol), "ebs-hydrate-aws@%s.service" % vol.kname
        p = wait_run_finished(m, vol.kname, unit, 60)
        vm.log("%s finished %.1f s after device_add" % (unit, time.monotonic() - t0))
        read = bytes_read(m, vol.kname)
        vm.log_output("journal of %s and %s:" % (helper, unit), m.succeed(
            "journalctl --no-pager -o short-monotonic -u %s -u %s" % (helper, unit)))
        h = helper_ran(m, helper)
        check(h["Result"] == "success" and h["ExecMainStatus"] == "0",
              "%s listed the snapshot's blocks, exit 0" % helper,
              "result %s, exit %s" % (h["Result"], h["ExecMainStatus"]))
        path = "%s/%s" % (AWS_DIR, vol.volume_id)
        owner, text = m.succeed("stat -c '%%U %%a' %s.blocks && cat %s.aws"
                                % (path, path)).split("\n", 1)
        check(owner.split() == ["ebs-hydrate-aws", "644"] and
              "\nBLOCKS_STORED=%d\n" % (stored // (512 * 1024)) in text,
              "%s.blocks written by ebs-hydrate-aws, the findings vouch for its %d blocks"
              % (path, stored // (512 * 1024)), "%s; %r" % (owner, text))
        ebs = [r for r in stub.requests() if r.get("action") == "ListSnapshotBlocks"]
        check(ebs and all(r["signature_ok"] and r["service"] == "ebs" and
                          r["snapshot"] == SNAP_S for r in ebs),
              "the stub saw ListSnapshotBlocks for %s, signed for ebs (%d requests)"
              % (SNAP_S, len(ebs)))
        check(p["ActiveState"] == "active" and p["SubState"] == "exited" and
              p["Result"] == "success" and "stored in the snapshot" in p["StatusText"],
              "%s: hydrated, STATUS says what the snapshot stores" % unit, repr(p["StatusText"]))
        rig = m.hydrated(vol.name)[0]
        vm.log("%s: the snapshot stores %.1f MiB; the guest read %.1f MiB, the rig fetched "
               "%.1f MiB" % (vol.volume_id, stored / MIB, read / MIB, rig / MIB))
        # every stored block, and besides them no more than udev's and the mapping's probes
        check(stored <= read <= stored + 8 * MIB,
              "the guest read the stored blocks and no others: %.1f MiB for %.1f MiB stored "
              "(+ 8 MiB of probes at most) of %d MiB" % (read / MIB, stored / MIB,
                                                        vol.size // MIB))
    finally:
        m.set_volume_rate(vol.name, 0)
        m.remove_volume(vol.name)


def step_f(m):
    vol = VOL_C
    attach(m, vol, hotplug=True)
    vol.kname = m.block_device(vol.serial)
    p = wait_unit(m, unit_of(vol), started, "started", 60)
    check(p["ActiveState"] == "active" and p["SubState"] == "running",
          "hot-plugged %s: %s hydrates" % (vol.volume_id, unit_of(vol)),
          "%s/%s" % (p["ActiveState"], p["SubState"]))
    rc, out, err = m.run("dpkg --purge %s" % PACKAGE, 300)
    vm.log_output("dpkg --purge %s:" % PACKAGE, out + err)
    check(rc == 0, "dpkg --purge %s" % PACKAGE, "exit %d: %s" % (rc, err.strip()))
    check("warning" not in (out + err).lower(), "no warning from dpkg or the package's scripts")
    rc, out, _ = m.run("dpkg-query -W -f='${Status}' %s" % PACKAGE)
    check(rc != 0 or "not-installed" in out, "dpkg: not installed", out.strip())
    rc, out, _ = m.run("pgrep -a ebs-hydrate")
    check(rc == 1 and out.strip() == "", "no ebs-hydrate process is left", out.strip())
    units = m.succeed("systemctl list-units --plain --no-legend --state=active,activating,"
                      "deactivating,reloading,failed 'ebs-hydrate@*'").strip()
    check(units == "", "no ebs-hydrate@ unit is active or failed", units)
    # The postrm's udev event makes the device units let go of the instances; systemd then
    # unloads them.
    rc, _, _ = m.run("for i in $(seq 20); do [ -z \"$(systemctl list-units --all --plain "
                     "--no-legend 'ebs-hydrate@*')\" ] && exit 0; sleep 0.5; done; exit 1")
    units = m.succeed("systemctl list-units --all --plain --no-legend 'ebs-hydrate@*'").strip()
    check(rc == 0 and units == "", "no ebs-hydrate@ unit is even loaded", units)
    # The rule is gone from udev too: a new event for the volume starts nothing (looked at
    # 3 s after it; the checks below run meanwhile).
    m.succeed("udevadm trigger --action=change --settle /dev/%s" % vol.kname)
    t_event = time.monotonic()
    names = m.succeed("busctl list --no-legend --acquired | awk '{print $1}'")
    check("org.ebshydrate" not in names, "no org.ebshydrate name is on the bus")
    rc, out, _ = m.run("ls -d %s %s %s %s/ebs-hydrate.prom 2>/dev/null"
                       % (" ".join(PACKAGE_FILES), STATE_DIR, AWS_DIR, TEXTFILE_DIR))
    check(out.strip() == "", "no file of the package, no state directory (the hydrator's, "
          "ebs-hydrate-aws's) and no metrics file is left", out.strip().replace("\n", " "))
    time.sleep(max(0.0, 3 - (time.monotonic() - t_event)))
    units = m.succeed("systemctl list-units --all --plain --no-legend 'ebs-hydrate@*'").strip()
    check(units == "", "a change event on %s after the purge starts nothing" % vol.kname, units)


# ---- driver --------------------------------------------------------------------------------

class Runner:
    def __init__(self, m, timer):
        self.m, self.timer, self.results = m, timer, []
        self.gone = None  # the step after which the guest no longer answered

    def step(self, name, fn, *args):
        """Run a step; a failure is recorded (with the guest's view) and the test goes on,
        unless the guest no longer answers: then the steps left fail at once (each would
        wait out its timeouts, 25 minutes in all when a guest once hung in CI)."""
        if self.gone:
            self.results.append((name, "FAIL", "not run: the guest stopped answering in "
                                 "step %s" % self.gone))
            vm.log("FAIL: %s: not run, the guest stopped answering in step %s"
                   % (name, self.gone), brief=True)
            return False
        try:
            with self.timer.step(name):
                fn(self.m, *args)
            self.results.append((name, "PASS", ""))
            return True
        except (StepFailed, vm.VMError, AssertionError, KeyError, ValueError) as e:
            self.results.append((name, "FAIL", str(e).splitlines()[0]))
            vm.log("FAIL: %s: %s" % (name, e), brief=True)
            if not self.dump():
                self.gone = name.split(":")[0]
            return False

    def dump(self):
        """The guest's units and journal into the log; False if the guest does not answer."""
        try:
            rc, out, err = self.m.run("systemctl list-units --all --no-pager 'ebs-hydrate@*'; "
                                      "journalctl --no-pager -u 'ebs-hydrate@*'", 60)
            vm.log_output("--- guest: ebs-hydrate units and journal", out + err)
            return True
        except vm.VMError as e:
            vm.log_output("--- guest unreachable: %s\n--- console:" % e, self.m.console_tail())
            return False

    def summary(self):
        lines = ["results:"]
        lines += ["  %-4s %-60s %s" % (r, n, why) for n, r, why in self.results]
        if self.m.boot_retries:
            lines.append("  note: %d boot(s) tried again after the guest's kernel got stuck "
                         "(the log has their console)" % self.m.boot_retries)
        return "\n".join(lines)


def run(m, timer, restart, deb, data, stub):
    r = Runner(m, timer)
    attach(m, VOL_A, hotplug=False)
    m.add_cold_volume(VOL_BASE.name, VOL_BASE.serial, VOL_BASE.size, latency_ms=0)
    with timer.step("boot"):
        m.boot()
    if not r.step("i: dpkg -i the package", step_i, deb):
        return r
    if not r.step("a: udev + systemd start the instance after the install", step_a):
        return r
    r.step("b1: systemctl status shows STATUS=", step_b1)
    r.step("b2: D-Bus properties and access", step_b2)
    r.step("b3: D-Bus Pause and Resume", step_b3)
    r.step("b4: ebs-hydratectl status --json", step_b4)
    r.step("m: metrics timer: skipped without node_exporter, then writes", step_m)
    r.step("c1: completed: active (exited), final STATUS", step_c1)
    r.step("c2: journal MESSAGE_ID of completion", step_c2)
    r.step("c3: rig: volume fully read", step_c3)
    record = {}
    if r.step("d1: hot-plug: its own instance starts", step_d1):
        r.step("d2: device_del mid-run: stopped, state saved", step_d2, record)
        if not m.volumes[VOL_B.name].attached:
            r.step("d3: re-attached: a new instance resumes", step_d3, record)
        if m.volumes[VOL_B.name].attached:
            r.step("d4: ... completes, reading only what was left", step_d4, record)
    r.step("e: reboot: already hydrated, nothing read", step_e, restart)
    r.step("g: Mode=used, GETFSMAP and HotPaths= under the unit", step_g, data)
    r.step("h: yields to a workload on the volume; Yield=no does not", step_h)
    r.step("k: created empty: AWS's word (helper, stub on the host) completes it", step_k, stub)
    r.step("f: dpkg --purge while hydrating: nothing left", step_f)
    return r


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", nargs="?", default=".",
                        help="where the detailed log goes (BUILD_DIR/Testing); default: .")
    parser.add_argument("--deb", required=True, help="the Debian package to install")
    parser.add_argument("--verbose", action="store_true",
                        help="print every line (default: step lines and failures; the rest goes "
                        "to BUILD_DIR/Testing/vm-systemd.log, printed in full after a failure)")
    parser.add_argument("--reboot", choices=("restart", "reset"), default="restart",
                        help="step e: power off and boot a new QEMU process (default, faster), "
                        "or systemctl reboot in the same QEMU")
    args = parser.parse_args()
    vm.skip_unless_prerequisites()
    if not os.path.isfile(args.deb):
        parser.error("%s: no such file (packaging/build-deb builds it)" % args.deb)
    if not args.verbose:
        logdir = os.path.join(os.path.abspath(args.build_dir), "Testing")
        os.makedirs(logdir, exist_ok=True)
        vm.set_detail_log(os.path.join(logdir, "vm-systemd.log"))
    timer = vm.Timer()
    workdir = tempfile.mkdtemp(prefix="ebs-hydrate-vm-systemd.", dir="/var/tmp")
    runner = None
    try:
        with timer.step("image build"):
            image = vm.build_image(os.path.join(workdir, "root.img"),
                                   deb=os.path.abspath(args.deb))
            data = os.path.join(workdir, "vol-d.img")
            make_ext4_image(data, VOL_D.size)
        stub = Stub(workdir)
        with vm.Machine(image, workdir=os.path.join(workdir, "machine"),
                        network={STUB_GUEST_ADDR: stub.port_file}) as m:
            try:
                runner = run(m, timer, args.reboot == "restart", args.deb, data, stub)
            except BaseException:
                print("--- guest console (last lines)\n" + m.console_tail(80), flush=True)
                raise
            finally:
                stub.stop()
    finally:
        if runner:
            print(runner.summary(), flush=True)
        print(timer.summary(), flush=True)
        if os.environ.get("EBS_HYDRATE_VM_KEEP") != "1":
            vm.shutil.rmtree(workdir, ignore_errors=True)
    ok = runner is not None and all(r == "PASS" for _, r, _ in runner.results)
    detail = vm.detail_log_path()
    if detail and not ok:
        with open(detail) as f:
            print("--- the detailed log (%s)\n%s" % (detail, f.read().rstrip()), flush=True)
    elif detail:
        print("detailed log: %s" % detail, flush=True)
    print("PASS" if ok else "FAIL", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
