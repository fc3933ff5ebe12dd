# SPDX-License-Identifier: MIT
"""A small QEMU driver for guest tests with a real systemd and udev (standard library only).

A Machine boots the image made by tests/vm/image.sh with the host's kernel under TCG, talks QMP
to QEMU, and runs shell commands in the guest through a backdoor shell on a virtio-serial port
(tests/vm/guest/usr/local/sbin/test-backdoor). Cold "EBS" volumes are QEMU block graphs:

    null-aio (zeroes, first-touch latency) -> [throttle] -> qcow2 overlay (512 KiB clusters)
        -> copy-on-read -> nvme device (serial volXXXXXXXXXXXXXXXXX)

so the overlay's allocated clusters are an independent record of what the guest really read.
Volumes live in QEMU, not in the guest: they survive a guest reboot, and a volume removed and
added again under the same name keeps its overlay (the same volume, attached again).

    with Machine(image) as m:
        m.add_cold_volume("v0", "vol0123456789abcdef0", 256 << 20, latency_ms=90)
        m.boot()
        print(m.succeed("udevadm info /dev/nvme0n1"))

Environment: EBS_HYDRATE_VM_KEEP=1 keeps the work directory (console log, overlays) after the
test; EBS_HYDRATE_VM_CACHE is passed on to image.sh.
"""

import base64
import ctypes
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77
CLUSTER_SIZE = 512 * 1024  # the EBS snapshot block: one overlay cluster per first touch
BACKDOOR_PORT = "org.ebshydrate.backdoor"
QEMU = "qemu-system-x86_64"


class VMError(Exception):
    """Something went wrong with QEMU, the guest or the backdoor."""


class GuestCommandError(VMError):
    """A guest command exited non-zero (raised by succeed())."""

    def __init__(self, cmd, rc, out, err):
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err
        super().__init__("guest command failed with status %d: %s\n--- stdout\n%s--- stderr\n%s"
                         % (rc, cmd, out, err))


class GuestStuck(VMError):
    """The guest's kernel said it is stuck (a soft lockup or an RCU stall on the console)."""


# What the guest's kernel prints when a CPU stops making progress. Seen in CI: under TCG a
# boot once hung with PID 1 and modprobe spinning on a code patch (int3) in
# sk_filter_trim_cap, "soft lockup - CPU#1 stuck for 398s": QEMU's software CPUs, not the guest
# test, and a fresh QEMU boots fine. A stall the kernel recovers from (a slow host can cause
# one) is not a hang: it counts only once it persists, a soft lockup reported at
# STUCK_SECONDS or more, or RCU stall reports STUCK_RCU_REPORTS times (the kernel repeats both
# while the CPU stays stuck: about every 30 and every 60 s).
SOFT_LOCKUP = re.compile(r"watchdog: BUG: soft lockup - CPU#\d+ stuck for (\d+)s")
RCU_STALL = re.compile(r"rcu: INFO: rcu_\w+ (self-)?detected stall")
STUCK_SECONDS = 60
STUCK_RCU_REPORTS = 3


def kernel_stuck_in(text):
    """The line of @text (console output) that says the kernel is stuck for good, or None."""
    stalls = 0
    for line in text.splitlines():
        m = SOFT_LOCKUP.search(line)
        if m and int(m.group(1)) >= STUCK_SECONDS:
            return line.strip()
        if RCU_STALL.search(line):
            stalls += 1
            if stalls >= STUCK_RCU_REPORTS:
                return line.strip()
    return None


class QMPError(VMError):
    """QEMU answered a QMP command with an error."""


class QMPTimeout(VMError):
    """No QMP message arrived in time."""


_detail = None  # with set_detail_log(): every line goes there, only brief ones to stdout


def set_detail_log(path):
    """From now on log() writes every line to @path, and to stdout only those marked brief.
    Keeps a long test's output short enough for a CI excerpt to show what failed."""
    global _detail
    _detail = open(path, "w", buffering=1)


def detail_log_path():
    return _detail.name if _detail else None


def log(msg, brief=False):
    line = "[%s] %s" % (time.strftime("%H:%M:%S"), msg)
    if _detail:
        _detail.write(line + "\n")
    if brief or not _detail:
        print(line, flush=True)


def log_output(title, text):
    """A block of output (a command's, a journal): to the detail log if there is one."""
    log("%s\n%s" % (title, text.rstrip()))


class Timer:
    """Wall-clock timings of named steps, printed as they end and summed up at the end."""

    def __init__(self):
        self.steps = []
        self.t0 = time.monotonic()

    def step(self, name):
        return _TimedStep(self, name)

    def summary(self):
        lines = ["timings:"]
        lines += ["  %-58s %7.1f s" % (n, s) for n, s in self.steps]
        lines.append("  %-58s %7.1f s" % ("total", time.monotonic() - self.t0))
        return "\n".join(lines)


class _TimedStep:
    def __init__(self, timer, name):
        self.timer, self.name = timer, name

    def __enter__(self):
        log("--- %s" % self.name, brief=True)
        self.start = time.monotonic()
        return self

    def __exit__(self, exc_type, exc, tb):
        secs = time.monotonic() - self.start
        self.timer.steps.append((self.name + ("" if exc_type is None else " (FAILED)"), secs))
        log("--- %s: %s in %.1f s" % (self.name, "done" if exc_type is None else "FAILED", secs),
            brief=True)
        return False


def missing_prerequisites():
    """Why guest tests cannot run here (a string), or None if they can."""
    if os.geteuid() != 0:
        return "must run as root"
    for tool in (QEMU, "qemu-img", "debootstrap", "mke2fs", "cmake"):
        if not shutil.which(tool):
            return "%s not found (scripts/deps installs it)" % tool
    if not _find_kernel():
        return "no kernel with modules and initrd in /boot (apt-get install linux-image-amd64)"
    return None


def _find_kernel():
    def version_key(v):
        return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", v)]

    versions = [f[len("vmlinuz-"):] for f in os.listdir("/boot") if f.startswith("vmlinuz-")]
    for v in sorted(versions, key=version_key, reverse=True):
        if os.path.isdir("/lib/modules/" + v) and os.access("/boot/initrd.img-" + v, os.R_OK):
            return v
    return None


def skip_unless_prerequisites():
    """Exit 77 (ctest's skip) when the machine cannot run guest tests."""
    reason = missing_prerequisites()
    if reason:
        print("SKIP: %s" % reason, flush=True)
        sys.exit(SKIP)


class Image:
    """The guest's boot files: kernel, initrd and root disk image."""

    def __init__(self, kernel, initrd, image):
        self.kernel, self.initrd, self.image = kernel, initrd, image


def build_image(output, build_dir=None, staging=None, deb=None, bare=False, size="2G"):
    """Run image.sh: a fresh root disk at @output with the project installed from @build_dir
    (a CMake build directory) or @staging (a DESTDIR tree), or not installed: its package @deb
    left in /root/packages/ for the test to install, or nothing of it (@bare). Exits 77 if
    image.sh skips."""
    cmd = [os.path.join(HERE, "image.sh"), "--output", output, "--size", size]
    if bare:
        cmd.append("--bare")
    elif deb:
        cmd += ["--deb", deb]
    else:
        cmd += ["--build-dir", build_dir] if build_dir else ["--staging", staging]
    # image.sh reports on stderr (cmake's output when it builds the guest's copy): to the
    # detail log when there is one, and in the error when it fails.
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE if _detail else None,
                          universal_newlines=True)
    if _detail and proc.stderr:
        log_output("image.sh:", proc.stderr)
    if proc.returncode == SKIP:
        sys.exit(SKIP)
    if proc.returncode != 0:
        raise VMError("image.sh failed with status %d%s" % (
            proc.returncode, ":\n" + proc.stderr[-3000:] if _detail and proc.stderr else ""))
    values = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    return Image(values["KERNEL"], values["INITRD"], values["IMAGE"])


def _die_with_parent():
    """preexec_fn: QEMU gets SIGKILL if the test process dies without cleaning up."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    os.setsid()


class Volume:
    """A cold EBS volume: QEMU nodes over an overlay file that outlives attachments."""

    def __init__(self, machine, name, serial, size, latency_ms, bps, data=None):
        if not re.match(r"^[A-Za-z][A-Za-z0-9_-]{0,15}$", name):
            raise ValueError("volume name %r: a letter, then up to 15 of [A-Za-z0-9_-]" % name)
        if size % CLUSTER_SIZE:
            raise ValueError("volume size must be a multiple of %d" % CLUSTER_SIZE)
        self.name, self.serial, self.size = name, serial, size
        self.latency_ms, self.bps = latency_ms, bps
        self.data = data  # a raw image the snapshot holds (read-only); None: zeroes
        self.throttled = bps > 0  # a throttle node, even after set_volume_rate(name, 0)
        self.overlay = os.path.join(machine.workdir, name + ".qcow2")
        self.device_id = name + "-dev"
        self.throttle_group = name + "-tg"
        self.attached = False

    def objects(self):
        if not self.throttled:
            return []
        return [{"qom-type": "throttle-group", "id": self.throttle_group,
                 "limits": {"bps-read": self.bps}}]

    def nodes(self):
        """blockdev-add arguments, bottom to top."""
        n = self.name
        if self.data:
            # No latency knob on a file: the throttle node keeps such a volume slow.
            nodes = [{"driver": "raw", "node-name": n + "-s3", "read-only": True,
                      "file": {"driver": "file", "filename": self.data, "read-only": True}}]
        else:
            nodes = [{"driver": "null-aio", "node-name": n + "-s3", "size": self.size,
                      "latency-ns": int(self.latency_ms * 1e6), "read-zeroes": True}]
        backing = n + "-s3"
        if self.throttled:
            nodes.append({"driver": "throttle", "node-name": n + "-thr",
                          "throttle-group": self.throttle_group, "file": backing})
            backing = n + "-thr"
        nodes += [
            {"driver": "file", "node-name": n + "-ovlfile", "filename": self.overlay},
            {"driver": "qcow2", "node-name": n + "-ovl", "file": n + "-ovlfile",
             "backing": backing},
            {"driver": "copy-on-read", "node-name": n, "file": n + "-ovl"},
        ]
        return nodes

    def device(self):
        return {"driver": "nvme", "id": self.device_id, "drive": self.name,
                "serial": self.serial}


class Machine:
    """One QEMU guest. Use as a context manager: QEMU is killed and the work directory removed
    on the way out, whatever happened."""

    def __init__(self, image, memory=1024, smp=2, machine="pc", cpu=None, append="",
                 qemu_args=(), workdir=None, network=None):
        """@network: None (no NIC), or {"10.0.2.100:80": PORT_FILE, ...}: a virtio NIC on a
        restricted QEMU user network (restrict=on: no packet leaves it, the host is not
        reachable) whose only peers are these guest addresses, each forwarded to the server on
        the host's 127.0.0.1 whose port PORT_FILE holds when the guest connects (host-relay.py).
        The guest configures eth0 statically (guest/etc/systemd/network)."""
        self.image = image
        self.network = dict(network or {})
        self.memory, self.smp, self.machine_type, self.append = memory, smp, machine, append
        self.cpu, self.extra_args = cpu, list(qemu_args)
        self.workdir = workdir or tempfile.mkdtemp(prefix="ebs-hydrate-vm.")
        os.makedirs(self.workdir, exist_ok=True)
        self.console_log = os.path.join(self.workdir, "console.log")
        self.qemu_log = os.path.join(self.workdir, "qemu.log")
        self.volumes = {}
        self.proc = None
        self.qmp_sock = None
        self.qmp_buf = b""
        self.events = []
        self.bd_sock = None
        self.bd_buf = b""
        self.bd_seq = 0
        self.boot_id = None
        self.boot_retries = 0  # boots tried again after the guest's kernel got stuck
        self.keep = os.environ.get("EBS_HYDRATE_VM_KEEP") == "1"
        self._old_sigterm = None

    # ---- lifecycle -----------------------------------------------------------------------

    def __enter__(self):
        # ctest kills a test that runs too long with SIGTERM: unwind so that QEMU goes too.
        self._old_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    def __exit__(self, exc_type, exc, tb):
        self.kill()
        if self._old_sigterm is not None:
            signal.signal(signal.SIGTERM, self._old_sigterm)
        if self.keep:
            log("keeping %s (EBS_HYDRATE_VM_KEEP=1)" % self.workdir)
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return False

    @staticmethod
    def _on_sigterm(signum, frame):
        raise SystemExit("terminated (SIGTERM)")

    def _qemu_args(self):
        # Modules the guest never needs but would load for QEMU's default devices and CPU.
        cmdline = ("console=ttyS0 root=/dev/vda rw init=/lib/systemd/systemd net.ifnames=0 "
                   "systemd.show_status=1 modprobe.blacklist=floppy,kvm,kvm_amd,kvm_intel "
                   + self.append)
        args = [QEMU, "-accel", "tcg", "-machine", self.machine_type,
                "-m", str(self.memory), "-smp", str(self.smp),
                "-nodefaults", "-no-user-config", "-display", "none",
                "-kernel", self.image.kernel, "-initrd", self.image.initrd,
                "-append", cmdline.strip(),
                "-drive", "file=%s,if=virtio,format=raw,cache=unsafe" % self.image.image,
                "-chardev", "file,id=console,path=%s,append=on" % self.console_log,
                "-serial", "chardev:console",
                "-qmp", "unix:%s,server=on,wait=off" % self._path("qmp.sock"),
                "-chardev", "socket,id=backdoor,path=%s,server=on,wait=off"
                % self._path("backdoor.sock"),
                "-device", "virtio-serial-pci,id=vser0",
                "-device", "virtserialport,chardev=backdoor,name=" + BACKDOOR_PORT,
                "-device", "virtio-rng-pci"]
        if self.cpu:
            args += ["-cpu", self.cpu]
        if self.network:
            args += ["-netdev", self._netdev(), "-device", "virtio-net-pci,netdev=n0"]
        args += self.extra_args
        for vol in self.volumes.values():
            if vol.attached:
                args += sum((["-object", json.dumps(o)] for o in vol.objects()), [])
                args += sum((["-blockdev", json.dumps(n)] for n in vol.nodes()), [])
                args += ["-device", json.dumps(vol.device())]
        return args

    def _path(self, name):
        return os.path.join(self.workdir, name)

    def _netdev(self):
        """QEMU's user network, restricted: no DHCP answers used, no DNS, no route out; only
        guestfwd rules, each running host-relay.py for each connection (a chardev guestfwd would
        be one connection, opened when QEMU starts)."""
        relay = os.path.join(HERE, "host-relay.py")
        opts = ["user", "id=n0", "restrict=on", "ipv6=off", "net=10.0.2.0/24"]
        for addr, port_file in sorted(self.network.items()):
            # -I -S: no site packages nor environment; a third of the start-up, once a request
            words = (sys.executable, "-I", "-S", relay, os.path.abspath(port_file))
            if any(re.search(r"[\s,'\"\\]", w) for w in words):
                raise VMError("a space, comma or quote in a guestfwd path: %r" % (words,))
            opts.append("guestfwd=tcp:%s-cmd:%s" % (addr, " ".join(words)))
        return ",".join(opts)

    def start(self):
        """Start QEMU and connect to QMP and the backdoor port; returns at once (the guest
        boots in the background, see wait_for_boot)."""
        args = self._qemu_args()
        for sock in ("qmp.sock", "backdoor.sock"):  # left by a previous QEMU (restart)
            if os.path.exists(self._path(sock)):
                os.unlink(self._path(sock))
        self.qmp_buf = self.bd_buf = b""
        self.events = []
        with open(self.qemu_log, "a") as out:
            out.write(" ".join(args) + "\n")
            out.flush()
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        self.qmp_sock = self._connect(self._path("qmp.sock"))
        greeting = self._qmp_read(time.monotonic() + 30)
        if "QMP" not in greeting:
            raise VMError("unexpected QMP greeting: %r" % greeting)
        self.qmp("qmp_capabilities")
        self.bd_sock = self._connect(self._path("backdoor.sock"))

    def _connect(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                s.setblocking(False)
                return s
            except OSError:
                s.close()
                if time.monotonic() > deadline:
                    raise VMError("QEMU did not create %s" % path)
                time.sleep(0.1)

    def _check_alive(self):
        if self.proc is None:
            raise VMError("QEMU is not running")
        rc = self.proc.poll()
        if rc is not None:
            raise VMError("QEMU exited with status %d:\n%s" % (rc, self.qemu_output()))

    def qemu_output(self):
        try:
            with open(self.qemu_log, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def console_tail(self, lines=60):
        try:
            with open(self.console_log, "rb") as f:
                data = f.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(data.replace("\r", "").splitlines()[-lines:])

    def console_size(self):
        """Where the console log ends now: what the guest prints next comes after it (the file
        is appended to, by every QEMU of this machine)."""
        try:
            return os.path.getsize(self.console_log)
        except OSError:
            return 0

    def kernel_stuck(self, since):
        """The console line, printed after offset @since, that says the guest's kernel is stuck
        for good (kernel_stuck_in()), or None."""
        try:
            with open(self.console_log, "rb") as f:
                f.seek(since)
                data = f.read().decode(errors="replace")
        except OSError:
            return None
        return kernel_stuck_in(data)

    def kill(self):
        """Stop QEMU (SIGTERM, then SIGKILL) and close the sockets; idempotent."""
        for s in (self.qmp_sock, self.bd_sock):
            if s:
                s.close()
        self.qmp_sock = self.bd_sock = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                log("QEMU did not exit 10 s after SIGTERM: SIGKILL (what it had not written of "
                    "the volumes' overlays is lost)", brief=True)
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    # ---- QMP -----------------------------------------------------------------------------

    def _qmp_read(self, deadline):
        """One QMP message; events are queued in self.events and also returned."""
        while b"\n" not in self.qmp_buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise QMPTimeout("timed out waiting for QMP")
            r, _, _ = select.select([self.qmp_sock], [], [], min(left, 1.0))
            if not r:
                self._check_alive()
                continue
            data = self.qmp_sock.recv(65536)
            if not data:
                self._check_alive()
                raise VMError("QMP connection closed")
            self.qmp_buf += data
        line, self.qmp_buf = self.qmp_buf.split(b"\n", 1)
        msg = json.loads(line)
        if "event" in msg:
            self.events.append(msg)
        return msg

    def qmp(self, command, timeout=60, **arguments):
        """Run a QMP command and return its "return" value; raise QMPError on an error."""
        req = {"execute": command}
        if arguments:
            req["arguments"] = arguments
        self.qmp_sock.sendall(json.dumps(req).encode() + b"\n")
        deadline = time.monotonic() + timeout
        while True:
            msg = self._qmp_read(deadline)
            if "return" in msg:
                return msg["return"]
            if "error" in msg:
                raise QMPError("%s: %s" % (command, msg["error"].get("desc", msg["error"])))

    def wait_event(self, name, timeout=60, **data):
        """Wait for (and consume) a QMP event named @name whose data contains @data."""
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.events:
                if ev["event"] == name and all(ev.get("data", {}).get(k) == v
                                               for k, v in data.items()):
                    self.events.remove(ev)
                    return ev
            left = deadline - time.monotonic()
            if left <= 0:
                raise VMError("timed out after %d s waiting for QMP event %s %s"
                              % (timeout, name, data))
            try:
                self._qmp_read(time.monotonic() + min(left, 1.0))
            except QMPTimeout:
                pass

    def hmp(self, command_line):
        return self.qmp("human-monitor-command", **{"command-line": command_line})

    # ---- backdoor --------------------------------------------------------------------------

    def _bd_readline(self, deadline):
        while b"\n" not in self.bd_buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.bd_sock], [], [], min(left, 1.0))
            if not r:
                self._check_alive()
                continue
            data = self.bd_sock.recv(65536)
            if not data:
                self._check_alive()
                raise VMError("backdoor connection closed")
            self.bd_buf += data
        line, self.bd_buf = self.bd_buf.split(b"\n", 1)
        return line.decode(errors="replace").strip()

    def _bd_send(self, script, limit):
        if self.bd_sock is None:
            raise VMError("QEMU is not running (no backdoor to send %r to)" % script)
        self.bd_seq += 1
        cmd_id = "%d-%d" % (os.getpid(), self.bd_seq)
        b64 = base64.b64encode(script.encode()).decode()
        # The leading newline ends any partial line a previous boot left in the port.
        self.bd_sock.sendall(("\n@@CMD %s %d %s\n" % (cmd_id, limit, b64)).encode())
        return cmd_id

    def _bd_result(self, cmd_ids, deadline):
        """(id, rc, out, err) of the first answer to one of the commands @cmd_ids, or None at
        the deadline. Other lines (answers to commands given up on, READY) are skipped."""
        while True:
            line = self._bd_readline(deadline)
            if line is None:
                return None
            parts = line.split(" ")
            if len(parts) == 5 and parts[0] == "@@RES" and parts[1] in cmd_ids:
                out = base64.b64decode(parts[3][1:]).decode(errors="replace")
                err = base64.b64decode(parts[4][1:]).decode(errors="replace")
                return parts[1], int(parts[2]), out, err

    def _sync(self, timeout):
        """Wait until the backdoor shell answers; returns the guest's boot id. Commands sent
        while the port is closed are lost, so ask again every few seconds; any of the
        questions may be the one answered (a slow guest answers late)."""
        deadline = time.monotonic() + timeout
        since = self.console_size()
        asked = set()
        while time.monotonic() < deadline:
            asked.add(self._bd_send("cat /proc/sys/kernel/random/boot_id", 10))
            res = self._bd_result(asked, min(deadline, time.monotonic() + 5))
            if res and res[1] == 0:
                return res[2].strip()
            stuck = self.kernel_stuck(since)
            if stuck:
                raise GuestStuck("the guest's kernel is stuck (%s); console:\n%s"
                                 % (stuck, self.console_tail()))
        raise VMError("the guest's backdoor shell did not answer within %d s; console:\n%s"
                      % (timeout, self.console_tail()))

    def run(self, cmd, timeout=120):
        """Run a bash script in the guest as root: (rc, stdout, stderr). A command still
        running after @timeout seconds is killed in the guest (status 124)."""
        since = self.console_size()
        cmd_id = self._bd_send(cmd, timeout)
        res = self._bd_result({cmd_id}, time.monotonic() + timeout + 30)
        if res is None:
            stuck = self.kernel_stuck(since)
            raise (GuestStuck if stuck else VMError)(
                "no answer from the guest for %r within %d s%s; console:\n%s"
                % (cmd, timeout + 30, " (its kernel is stuck: %s)" % stuck if stuck else "",
                   self.console_tail()))
        return res[1:]

    def execute(self, cmd, timeout=120):
        """(exit status, stdout) of a guest command; stderr goes to our stderr."""
        rc, out, err = self.run(cmd, timeout)
        if err:
            sys.stderr.write(err)
        return rc, out

    def succeed(self, cmd, timeout=120):
        """stdout of a guest command; GuestCommandError (with its output) if it fails."""
        rc, out, err = self.run(cmd, timeout)
        if rc != 0:
            raise GuestCommandError(cmd, rc, out, err)
        return out

    def wait_until_succeeds(self, cmd, timeout=60, interval=1):
        """Run @cmd until it exits 0; its stdout. Raises with the last output on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            rc, out, err = self.run(cmd, max(10, int(timeout)))
            if rc == 0:
                return out
            if time.monotonic() > deadline:
                raise GuestCommandError("(for %d s) %s" % (timeout, cmd), rc, out, err)
            time.sleep(interval)

    def write_file(self, path, data, mode=0o644):
        b64 = base64.b64encode(data.encode() if isinstance(data, str) else data).decode()
        self.succeed("mkdir -p \"$(dirname '%s')\" && echo %s | base64 -d > '%s' && chmod %o '%s'"
                     % (path, b64, path, mode, path))

    # ---- boot, reboot, shutdown ----------------------------------------------------------

    def boot(self, timeout=240):
        """start() and wait_for_boot(). A boot whose kernel gets stuck (GuestStuck) is tried
        once more in a new QEMU process, said in the log and counted in boot_retries: the hang
        is the emulator's, and what a test checks comes after the boot."""
        for attempt in (1, 2):
            self.start()
            try:
                return self.wait_for_boot(timeout)
            except GuestStuck as e:
                if attempt == 2:
                    raise
                log("boot %d: %s; killing QEMU and booting again"
                    % (attempt, str(e).split(";")[0]), brief=True)
                log_output("--- console of boot %d:" % attempt, self.console_tail(80))
                self.kill()
                self.boot_retries += 1

    def wait_for_boot(self, timeout=240):
        """Wait for the backdoor, then for systemd to finish booting (running or degraded).
        Returns the state; failed units are logged."""
        start = time.monotonic()
        self.boot_id = self._sync(timeout)
        left = max(30, int(timeout - (time.monotonic() - start)))
        rc, out, _ = self.run("systemctl is-system-running --wait", left)
        state = out.strip()
        if state not in ("running", "degraded"):
            raise VMError("system state after boot: %r (status %d); console:\n%s"
                          % (state, rc, self.console_tail()))
        if state == "degraded":
            log("guest is degraded; failed units:\n" + self.run("systemctl --failed")[1])
        return state

    def reboot(self, timeout=240, restart=False):
        """Reboot the guest and wait until it has booted again; every volume stays attached.
        By default the guest runs systemctl reboot and QEMU resets the machine. With
        @restart, the guest powers off and a new QEMU process boots the same disks, with the
        attached volumes cold-plugged (on the command line)."""
        old = self.boot_id or self._sync(30)
        if restart:
            self.shutdown(timeout)
            return self.boot(timeout)
        # No waiting for the answer: shutdown may stop the backdoor before it can give one.
        self._bd_send("sync; systemctl --no-block reboot", 30)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise VMError("the guest did not come back from the reboot; console:\n%s"
                              % self.console_tail())
            if self._sync(left) != old:
                break
            time.sleep(1)
        return self.wait_for_boot(max(30, deadline - time.monotonic()))

    def shutdown(self, timeout=120):
        """Power the guest off and wait for QEMU to exit."""
        self._bd_send("sync; systemctl --no-block poweroff", 30)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise VMError("QEMU still running %d s after poweroff; console:\n%s"
                          % (timeout, self.console_tail()))
        self.kill()

    # ---- cold volumes --------------------------------------------------------------------

    def add_cold_volume(self, name, serial, size, latency_ms=90, bps=0, hotplug=None, data=None):
        """Attach a cold volume as an NVMe disk with @serial. Before start() it is on the
        command line (present at boot); after, it is hot-plugged (hotplug=True is then
        implied). @data: a raw image of @size bytes the volume's snapshot holds (zeroes if
        None; then reads take @latency_ms, else only the cap @bps slows them). Adding a name again after remove_volume() re-attaches the same volume,
        overlay and all; @size and @latency_ms are then those of the first add, the cap the
        current one (see set_volume_rate)."""
        if hotplug is None:
            hotplug = self.proc is not None
        if hotplug and self.proc is None:
            raise VMError("hot-plug needs a running machine: start() first")
        if not hotplug and self.proc is not None:
            raise VMError("QEMU is running: a volume added now is hot-plugged")
        vol = self.volumes.get(name)
        if vol is None:
            vol = Volume(self, name, serial, size, latency_ms, bps, data)
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2",
                            "-o", "cluster_size=%d" % CLUSTER_SIZE, vol.overlay, str(size)],
                           check=True)
            self.volumes[name] = vol
        elif vol.attached:
            raise VMError("volume %s is attached already" % name)
        elif serial != vol.serial:
            raise VMError("volume %s has serial %s, not %s" % (name, vol.serial, serial))
        if hotplug:
            for obj in vol.objects():
                self.qmp("object-add", **obj)
            for node in vol.nodes():
                self.qmp("blockdev-add", **node)
            self.qmp("device_add", **vol.device())
        vol.attached = True
        return vol

    def remove_volume(self, name, timeout=60):
        """Detach a volume (device_del, wait for DEVICE_DELETED: the guest let go of it), then
        close its nodes; its overlay stays for a later add_cold_volume(name, ...)."""
        vol = self.volumes[name]
        if not vol.attached:
            raise VMError("volume %s is not attached" % name)
        self.qmp("device_del", id=vol.device_id)
        self.wait_event("DEVICE_DELETED", timeout, device=vol.device_id)
        for node in reversed(vol.nodes()):
            self.qmp("blockdev-del", **{"node-name": node["node-name"]})
        for obj in vol.objects():
            self.qmp("object-del", id=obj["id"])
        vol.attached = False

    def set_volume_rate(self, name, bps):
        """Change the read cap of a volume created with bps > 0 (0 lifts it), at once."""
        vol = self.volumes[name]
        if not vol.objects():
            raise VMError("volume %s has no throttle node (created with bps=0)" % name)
        if vol.attached:
            self.qmp("qom-set", path="/objects/" + vol.throttle_group, property="limits",
                     value={"bps-read": bps})
        vol.bps = bps

    def hydrated(self, name):
        """(hydrated bytes, size, percent) of a volume: the clusters allocated in its overlay,
        i.e. what copy-on-read really fetched from the slow side for the guest."""
        vol = self.volumes[name]
        if vol.attached and self.proc is not None:
            # The qcow2 node keeps its L2 tables in memory: write them out first.
            out = self.hmp('qemu-io %s-ovl "flush"' % name)
            if out.strip():
                raise VMError("flushing the overlay of %s failed: %s" % (name, out.strip()))
        proc = subprocess.run(["qemu-img", "map", "-U", "--output=json", "-f", "qcow2",
                               vol.overlay], stdout=subprocess.PIPE, check=True)
        done = sum(e["length"] for e in json.loads(proc.stdout)
                   if e.get("depth") == 0 and e.get("present", True))
        return done, vol.size, 100.0 * done / vol.size

    def block_device(self, serial, timeout=60):
        """The guest's kernel name (nvme0n1) of the NVMe namespace with @serial."""
        out = self.wait_until_succeeds(
            "for d in /sys/block/nvme*n*; do [ -e \"$d/device/serial\" ] || continue; "
            "[ \"$(tr -d ' ' < \"$d/device/serial\")\" = '%s' ] && basename \"$d\" && exit 0; "
            "done; exit 1" % serial, timeout)
        return out.split()[0]
