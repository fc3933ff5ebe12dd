#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build the Debian package (packaging/build-deb: dpkg-buildpackage, then lintian, whose errors
# fail it) into OUT_DIR, and check what it holds: every file the product needs at its Debian 12
# path and nothing else, the paths the udev rule and the unit name, the dependencies, and the
# maintainer scripts' duties (service user, systemd/udev/D-Bus reloads, the replayed udev
# event for volumes attached before the install, instances stopped on removal, state removed
# on purge). tests/vm/test-systemd.py then installs the same .deb in a guest.
#
# Usage: deb.sh OUT_DIR         Exit status: 0 ok, 1 a finding, 77 tools missing.
set -euo pipefail

out=${1:?usage: deb.sh OUT_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
fail=0
bad() {
    echo "FAIL: $*" >&2
    fail=1
}

rm -f "$out"/ebs-hydrate_*.deb "$out"/ebs-hydrate-dev_*.deb
rc=0
deb=$("$src/packaging/build-deb" --out "$out" | tail -n 1) || rc=$?
[[ $rc -eq 0 ]] || exit "$rc" # 77: tools missing; 1: the build or lintian failed (said why)
echo "built $deb"
# The -dev package, beside it: the interface headers, and nothing else but its docs.
dev=$(dirname "$deb")/$(basename "$deb" | sed 's/^ebs-hydrate_\([^_]*\)_.*/ebs-hydrate-dev_\1_all.deb/')
if [[ ! -f $dev ]]; then
    bad "no $(basename "$dev") beside $(basename "$deb")"
else
    expected_dev=$(cd "$src" && find include/ebs-hydrate -name '*.h' | sed 's|^include/|./usr/include/|' | sort)
    actual_dev=$(dpkg-deb -c "$dev" | awk '{print $NF}' | grep '^\./usr/include/.*\.h$' | sort)
    [[ $actual_dev == "$expected_dev" ]] || bad "$(basename "$dev") holds $(echo $actual_dev), not $(echo $expected_dev)"
fi

work=$(mktemp -d /tmp/ebs-hydrate-debcheck.XXXXXX)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work/root"
dpkg-deb -e "$deb" "$work/control"

expected=(
    lib/systemd/system/ebs-hydrate-metrics.service
    lib/systemd/system/ebs-hydrate-metrics.timer
    lib/systemd/system/ebs-hydrate@.service
    lib/systemd/system/ebs-hydrate-aws@.service
    lib/udev/ebs-hydrate-id
    lib/udev/rules.d/90-ebs-hydrate.rules
    usr/bin/ebs-hydratectl
    usr/lib/ebs-hydrate/hydrate.conf
    usr/lib/systemd/catalog/ebs-hydrate.catalog
    usr/lib/sysusers.d/ebs-hydrate.conf
    usr/sbin/ebs-hydrated
    usr/sbin/ebs-hydrate-aws
    usr/share/bash-completion/completions/ebs-hydratectl
    usr/share/bash-completion/completions/ebs-hydrated
    usr/share/dbus-1/system.d/org.ebshydrate.Volume1.conf
    usr/share/doc/ebs-hydrate/changelog.gz
    usr/share/doc/ebs-hydrate/copyright
    usr/share/lintian/overrides/ebs-hydrate
    usr/share/man/man1/ebs-hydratectl.1.gz
    usr/share/man/man5/ebs-hydrate.conf.5.gz
    usr/share/man/man8/ebs-hydrate-aws.8.gz
    usr/share/man/man8/ebs-hydrate-id.8.gz
    usr/share/man/man8/ebs-hydrated.8.gz
)
actual=$(cd "$work/root" && find . -type f -o -type l | sed 's|^\./||' | sort)
missing=$(comm -23 <(printf '%s\n' "${expected[@]}" | sort) <(echo "$actual"))
extra=$(comm -13 <(printf '%s\n' "${expected[@]}" | sort) <(echo "$actual"))
[[ -z $missing ]] || bad "missing from the package: $(echo $missing)"
[[ -z $extra ]] || bad "unexpected in the package: $(echo $extra)"
for f in usr/sbin/ebs-hydrated usr/sbin/ebs-hydrate-aws usr/bin/ebs-hydratectl lib/udev/ebs-hydrate-id; do
    [[ -x $work/root/$f ]] || bad "$f is not executable"
done

grep -q 'IMPORT{program}="/lib/udev/ebs-hydrate-id ' "$work/root/lib/udev/rules.d/90-ebs-hydrate.rules" ||
    bad "the udev rule does not run /lib/udev/ebs-hydrate-id"
grep -q '^ExecStart=/usr/sbin/ebs-hydrated ' "$work/root/lib/systemd/system/ebs-hydrate@.service" ||
    bad "the unit's ExecStart= is not /usr/sbin/ebs-hydrated"
grep -q '^ExecStart=/usr/sbin/ebs-hydrate-aws ' "$work/root/lib/systemd/system/ebs-hydrate-aws@.service" ||
    bad "the AWS unit's ExecStart= is not /usr/sbin/ebs-hydrate-aws"
grep -q 'SYSTEMD_WANTS}+="ebs-hydrate-aws@%k.service"' "$work/root/lib/udev/rules.d/90-ebs-hydrate.rules" ||
    bad "the udev rule does not start ebs-hydrate-aws@%k.service"
grep -q '^u ebs-hydrate-aws ' "$work/root/usr/lib/sysusers.d/ebs-hydrate.conf" ||
    bad "sysusers.d creates no ebs-hydrate-aws user"
# What the postinst's systemd-sysusers will make of the file, into an empty root: a line it
# refuses (a colon in a GECOS field did) leaves both service users uncreated on the host.
if command -v systemd-sysusers >/dev/null; then
    mkdir -p "$work/sysroot/etc"
    systemd-sysusers --root="$work/sysroot" --dry-run "$work/root/usr/lib/sysusers.d/ebs-hydrate.conf" \
        >"$work/sysusers.out" 2>&1 || bad "systemd-sysusers refuses the package's sysusers.d file: $(cat "$work/sysusers.out")"
    for u in ebs-hydrate ebs-hydrate-aws; do
        grep -q "Creating user '$u'" "$work/sysusers.out" || bad "systemd-sysusers would not create $u"
    done
fi

depends=$(dpkg-deb -f "$deb" Depends)
for lib in libaio1 libsystemd0 libudev1 libinih1 libjson-c5 zlib1g libcurl4 libexpat1 libssl3 systemd udev dbus; do
    re="(^|[ ,])$lib([ ,(]|\$)"
    [[ $depends =~ $re ]] || bad "Depends: lacks $lib ($depends)"
done

# Maintainer scripts: each duty, in the script that must do it.
has() { # SCRIPT PATTERN WHAT
    if [[ ! -f $work/control/$1 ]]; then
        bad "no $1 script ($3)"
    elif ! grep -Eq -- "$2" "$work/control/$1"; then
        bad "$1 does not $3"
    fi
}
has postinst '^\s*systemd-sysusers .*ebs-hydrate\.conf' "create the service user (systemd-sysusers)"
has postinst '^\s*systemctl --system daemon-reload' "reload systemd"
has postinst '^\s*udevadm control --reload' "reload the udev rules"
has postinst '^\s*busctl call .*org\.freedesktop\.DBus ReloadConfig' "reload the D-Bus configuration"
has postinst "^\s*udevadm trigger --action=change" "replay udev events for attached volumes"
has postinst "ID_MODEL='Amazon Elastic Block Store'" "limit the replayed events to EBS volumes"
has prerm "^\s*deb-systemd-invoke stop 'ebs-hydrate@\*\.service'" "stop the running instances on removal"
has postrm '^\s*udevadm control --reload' "reload the udev rules after removal"
has postrm '^\s*systemctl --system daemon-reload' "reload systemd after removal"
has postrm '^\s*udevadm trigger --action=change' "replay udev events so device units forget the instances"
has postrm '^\s*rm -rf /var/lib/ebs-hydrate /var/lib/ebs-hydrate-aws$' "remove the state directories (checkpoints, AWS's findings) on purge"
has postrm '^\s*rm -f /var/lib/prometheus/node-exporter/ebs-hydrate\.prom$' "remove the metrics file on removal"
# The metrics timer: enabled and started by the package, stopped on removal (dh_installsystemd).
has postinst "deb-systemd-helper enable '?ebs-hydrate-metrics\.timer" "enable the metrics timer"
has postinst "deb-systemd-invoke [^ ]* .*'?ebs-hydrate-metrics\.timer" "start the metrics timer"
has prerm "deb-systemd-invoke stop .*'?ebs-hydrate-metrics\.timer" "stop the metrics timer on removal"
has prerm "^\s*deb-systemd-invoke stop .*ebs-hydrate-metrics\.service" "stop a metrics run on removal"
grep -q '^ExecStart=/usr/bin/ebs-hydratectl metrics --output=' "$work/root/lib/systemd/system/ebs-hydrate-metrics.service" ||
    bad "the metrics service's ExecStart= is not /usr/bin/ebs-hydratectl metrics --output="
# The reloads and the trigger come after the user exists: the trigger can start an instance.
if [[ -f $work/control/postinst ]]; then
    user_line=$(grep -En '^\s*systemd-sysusers' "$work/control/postinst" | head -n 1 | cut -d: -f1)
    trigger_line=$(grep -En '^\s*udevadm trigger' "$work/control/postinst" | head -n 1 | cut -d: -f1)
    [[ -n $user_line && -n $trigger_line && $user_line -lt $trigger_line ]] ||
        bad "postinst replays udev events before it creates the service user"
fi
for s in postinst prerm postrm; do
    [[ -f $work/control/$s ]] && ! sh -n "$work/control/$s" && bad "$s: syntax error"
done

if [[ $fail -eq 0 ]]; then
    echo "PASS: $(basename "$deb"): ${#expected[@]} files, lintian clean, maintainer scripts ok"
fi
exit $fail
