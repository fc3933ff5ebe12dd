#!/bin/bash
# SPDX-License-Identifier: MIT
# Check a binary RPM of ebs-hydrate (packaging/rpm/build.sh makes one): its file list, its
# scriptlets (read, and run against stub commands), its dependencies, the paths inside the
# udev rule and the unit, an install into a throwaway root, and rpmlint when it is installed.
# Every problem is reported, naming what is wrong; the exit status is 1 if there was one.
#
#   tests/packaging/rpm-check.sh RPMFILE
#
# Exit status: 0 all good, 1 problems found, 2 bad usage, 77 rpm tools missing (skip).
set -euo pipefail

if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: $0 RPMFILE" >&2
    exit 2
fi
rpmfile=$1
for tool in rpm rpm2cpio cpio; do
    if ! command -v "$tool" >/dev/null; then
        echo "rpm-check: skipped: $tool is not installed" >&2
        exit 77
    fi
done
[ -f "$rpmfile" ] || { echo "rpm-check: no such file: $rpmfile" >&2; exit 2; }
rpmfile=$(cd "$(dirname "$rpmfile")" && pwd)/$(basename "$rpmfile")
rpm -qp "$rpmfile" >/dev/null 2>&1 || { echo "rpm-check: not an RPM package: $rpmfile" >&2; exit 1; }

spec=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/packaging/rpm/ebs-hydrate.spec
tmp=$(mktemp -d /tmp/rpm-check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'echo "rpm-check: internal error: a command failed at line $LINENO" >&2' ERR

problems=0
fail() {
    echo "FAIL: $*"
    problems=$((problems + 1))
}
ok() {
    echo "ok:   $*"
}

# --- the file list ----------------------------------------------------------------------------
files=(
    /usr/bin/ebs-hydratectl
    /usr/sbin/ebs-hydrated
    /usr/sbin/ebs-hydrate-aws
    /usr/lib/udev/ebs-hydrate-id
    /usr/lib/udev/rules.d/90-ebs-hydrate.rules
    /usr/lib/systemd/system/ebs-hydrate@.service
    /usr/lib/systemd/system/ebs-hydrate-aws@.service
    /usr/lib/systemd/system/ebs-hydrate-metrics.service
    /usr/lib/systemd/system/ebs-hydrate-metrics.timer
    /usr/lib/systemd/system-preset/50-ebs-hydrate.preset
    /usr/lib/systemd/catalog/ebs-hydrate.catalog
    /usr/lib/sysusers.d/ebs-hydrate.conf
    /usr/share/dbus-1/system.d/org.ebshydrate.Volume1.conf
    /usr/share/bash-completion/completions/ebs-hydratectl
    /usr/share/bash-completion/completions/ebs-hydrated
    /usr/lib/ebs-hydrate/hydrate.conf
)
man_pages=(man1/ebs-hydratectl.1 man5/ebs-hydrate.conf.5 man8/ebs-hydrated.8 man8/ebs-hydrate-id.8
    man8/ebs-hydrate-aws.8)
man_re() { printf '^/usr/share/man/%s(\\.(gz|xz|bz2|zst))?$' "${1//./\\.}"; }
listed() { # PATH: is it one of $files?
    local f
    for f in "${files[@]}"; do [ "$f" = "$1" ] && return 0; done
    return 1
}

rpm -qpl "$rpmfile" >"$tmp/list"
missing=0
for f in "${files[@]}"; do
    grep -Fxq "$f" "$tmp/list" || { fail "the package lacks $f"; missing=1; }
done
for page in "${man_pages[@]}"; do
    grep -Eq "$(man_re "$page")" "$tmp/list" ||
        { fail "the package lacks the man page /usr/share/man/$page"; missing=1; }
done
grep -Eq '^/usr/share/licenses/ebs-hydrate[^/]*/LICENSE$' "$tmp/list" ||
    { fail "the package lacks its licence text /usr/share/licenses/ebs-hydrate/LICENSE"; missing=1; }
[ "$missing" = 1 ] || ok "the package has all ${#files[@]} files, ${#man_pages[@]} man pages and the licence"

# Besides those: the directory of the vendor config, the documentation and licence directories,
# and rpm's /usr/lib/.build-id links to the ELF files (in every Fedora binary package too).
extra=0
while IFS= read -r f; do
    listed "$f" && continue
    case "$f" in
    /usr/lib/ebs-hydrate | /usr/share/doc/ebs-hydrate* | /usr/share/licenses/ebs-hydrate*) continue ;;
    /usr/lib/.build-id | /usr/lib/.build-id/*) continue ;;
    esac
    for page in "${man_pages[@]}"; do
        [[ "$f" =~ $(man_re "$page") ]] && continue 2
    done
    fail "unexpected file in the package: $f"
    extra=1
done <"$tmp/list"
[ "$extra" = 1 ] || ok "no file outside that list"

# --- the scriptlets, as text ------------------------------------------------------------------
scriptlet() { # TAG: the scriptlet's text, continuation lines joined
    rpm -qp --qf "%{$1}" "$rpmfile" | sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}'
}
for tag in PREIN POSTIN PREUN POSTUN; do
    scriptlet "$tag" >"$tmp/$tag"
    if [ "$(cat "$tmp/$tag")" = "(none)" ]; then
        fail "the package has no $tag scriptlet"
    elif [ "$(rpm -qp --qf "%{${tag}PROG}" "$rpmfile")" != /bin/sh ]; then
        fail "the $tag scriptlet does not run with /bin/sh"
    elif ! sh -n "$tmp/$tag" 2>"$tmp/$tag.err"; then
        fail "the $tag scriptlet is not valid sh: $(cat "$tmp/$tag.err")"
    fi
done

expect_script() { # TAG ERE WHAT
    if grep -Eq -- "$2" "$tmp/$1"; then ok "$1: $3"; else fail "$1 scriptlet lacks $3 (no match for /$2/)"; fi
}
expect_script PREIN 'useradd .*ebs-hydrate|systemd-sysusers' "the creation of user ebs-hydrate"
expect_script POSTIN '(preset|install-system-units) +ebs-hydrate@\.service' "%systemd_post ebs-hydrate@.service"
expect_script POSTIN '(preset|install-system-units) +.*ebs-hydrate-metrics\.timer' "%systemd_post ebs-hydrate-metrics.timer"
expect_script POSTIN '\[ -d /run/systemd/system \]' "the check that systemd is running"
expect_script POSTIN 'udevadm control --reload' "udevadm control --reload"
expect_script POSTIN 'ReloadConfig|reload dbus' "the D-Bus configuration reload"
expect_script POSTIN 'udevadm trigger .*--action=change.*ID_MODEL="?Amazon Elastic Block Store' \
    "udevadm trigger --action=change of the EBS disks"
expect_script PREUN "systemctl stop '?ebs-hydrate@\\*\\.service" "systemctl stop 'ebs-hydrate@*.service'"
expect_script PREUN '(disable|remove-system-units).*ebs-hydrate@\.service' "%systemd_preun ebs-hydrate@.service"
expect_script PREUN '(disable|remove-system-units).*ebs-hydrate-metrics\.timer' "%systemd_preun ebs-hydrate-metrics.timer"
expect_script POSTUN 'rm -f /var/lib/prometheus/node-exporter/ebs-hydrate\.prom' "the removal of the metrics file on erase"
expect_script POSTUN 'systemctl daemon-reload|systemd-update-helper' "systemctl daemon-reload"
expect_script POSTUN "try-restart '?ebs-hydrate@\\*\\.service" "the restart of running instances on upgrade"
expect_script POSTUN 'udevadm control --reload' "udevadm control --reload on erase"

# --- the scriptlets, run against stub commands -----------------------------------------------
# systemctl, udevadm, busctl and the user tools are stubs that log their arguments and exit
# with $STUB_RC; /run/systemd/system is replaced by a directory of ours that exists, or not.
sandbox=$tmp/sandbox
mkdir -p "$sandbox/bin" "$sandbox/systemd-running"
for cmd in systemctl udevadm busctl useradd groupadd usermod systemd-sysusers \
    systemd-update-helper; do
    # shellcheck disable=SC2016 # $* and $STUB_* belong to the stub
    printf '#!/bin/sh\necho "%s $*" >>"$STUB_LOG"\nexit "$STUB_RC"\n' "$cmd" >"$sandbox/bin/$cmd"
done
# getent knows the users and groups that the stubs of useradd and groupadd "created".
cat >"$sandbox/bin/getent" <<'EOF'
#!/bin/sh
echo "getent $*" >>"$STUB_LOG"
case "$1" in
passwd) grep -q "^useradd .* $2\$" "$STUB_LOG" ;;
group) grep -q "^groupadd .* $2\$" "$STUB_LOG" ;;
*) exit 2 ;;
esac || exit 2
EOF
chmod +x "$sandbox/bin/"*
if grep -Eq '/(usr/)?s?bin/(systemctl|udevadm|busctl|useradd|groupadd|usermod|getent)\b' \
    "$tmp/PREIN" "$tmp/POSTIN" "$tmp/PREUN" "$tmp/POSTUN"; then
    fail "a scriptlet names a system command by absolute path: not run against stubs"
    sandboxed=0
else
    sandboxed=1
fi

run_scriptlet() { # TAG ARG STUB_RC SYSTEMD(yes|no) -> $rc, $tmp/calls, $tmp/stderr
    local running=$sandbox/systemd-running
    [ "$4" = yes ] || running=$sandbox/no-such-dir
    mkdir -p "$sandbox/textfile"
    sed -e "s|/run/systemd/system|$running|g" \
        -e "s|/var/lib/prometheus/node-exporter|$sandbox/textfile|g" \
        -e "s|/usr/lib/systemd/systemd-update-helper|$sandbox/bin/systemd-update-helper|g" \
        "$tmp/$1" >"$sandbox/script"
    : >"$tmp/calls"
    rc=0
    env PATH="$sandbox/bin:$PATH" STUB_LOG="$tmp/calls" STUB_RC="$3" \
        sh "$sandbox/script" "$2" >/dev/null 2>"$tmp/stderr" || rc=$?
}
called() { grep -Eq -- "$1" "$tmp/calls"; }
line_of() { grep -En -- "$1" "$tmp/calls" | head -n 1 | cut -d: -f1 || true; }

if [ "$sandboxed" = 1 ]; then
    run_scriptlet PREIN 1 0 yes
    if [ $rc -eq 0 ] && called '^useradd .*ebs-hydrate' && called '^usermod .*disk.*ebs-hydrate'; then
        ok "run: PREIN creates user ebs-hydrate and adds it to group disk"
    elif ! grep -q systemd-sysusers "$tmp/PREIN"; then
        fail "run: PREIN did not create user ebs-hydrate in group disk (exit $rc; calls: $(tr '\n' ';' <"$tmp/calls"))"
    fi

    run_scriptlet POSTIN 1 0 yes
    reload=$(line_of '^udevadm control --reload')
    trigger=$(line_of '^udevadm trigger .*--action=change')
    if [ $rc -ne 0 ]; then
        fail "run: POSTIN (install) exited $rc"
    elif [ -z "$reload" ] || [ -z "$trigger" ] || ! called '^busctl .*ReloadConfig|^systemctl .*reload dbus'; then
        fail "run: POSTIN (install) did not reload udev and D-Bus and trigger (calls: $(tr '\n' ';' <"$tmp/calls"))"
    elif [ "$reload" -gt "$trigger" ]; then
        fail "run: POSTIN (install) triggers the EBS disks before reloading the udev rules"
    elif [ -s "$tmp/stderr" ]; then
        fail "run: POSTIN (install) printed although every step succeeded: $(cat "$tmp/stderr")"
    else
        ok "run: POSTIN (install) reloads udev and D-Bus, then triggers the EBS disks"
    fi
    if called '^systemctl start ebs-hydrate-metrics\.timer'; then
        ok "run: POSTIN (install) starts the metrics timer that the preset enabled"
    else
        fail "run: POSTIN (install) did not start the metrics timer (calls: $(tr '\n' ';' <"$tmp/calls"))"
    fi

    run_scriptlet POSTIN 1 1 yes
    if [ $rc -ne 0 ]; then
        fail "run: POSTIN (install) fails the transaction (exit $rc) when its steps fail"
    elif ! grep -q warning "$tmp/stderr"; then
        fail "run: POSTIN (install) says nothing when its steps fail"
    else
        ok "run: POSTIN (install) with failing steps warns and exits 0"
    fi

    run_scriptlet POSTIN 2 0 yes
    if [ $rc -ne 0 ] || called '^udevadm trigger' || ! called '^udevadm control --reload'; then
        fail "run: POSTIN (upgrade) should reload udev but not trigger (exit $rc; calls: $(tr '\n' ';' <"$tmp/calls"))"
    else
        ok "run: POSTIN (upgrade) reloads, without a trigger"
    fi

    run_scriptlet POSTIN 1 0 no
    if [ $rc -ne 0 ] || called '^(udevadm|busctl)'; then
        fail "run: POSTIN without a running systemd should not call udevadm or busctl (exit $rc)"
    else
        ok "run: POSTIN without a running systemd leaves udev and D-Bus alone"
    fi

    run_scriptlet PREUN 0 0 yes
    if [ $rc -ne 0 ] || ! called "^systemctl stop ebs-hydrate@\\*\\.service"; then
        fail "run: PREUN (erase) did not stop 'ebs-hydrate@*.service' (exit $rc; calls: $(tr '\n' ';' <"$tmp/calls"))"
    else
        ok "run: PREUN (erase) stops every ebs-hydrate@ instance"
    fi
    run_scriptlet PREUN 0 1 yes
    [ $rc -eq 0 ] || fail "run: PREUN (erase) fails the transaction (exit $rc) when systemctl fails"
    run_scriptlet PREUN 1 0 yes
    if [ $rc -ne 0 ] || called '^systemctl (stop|.*disable)'; then
        fail "run: PREUN (upgrade) should stop nothing (exit $rc; calls: $(tr '\n' ';' <"$tmp/calls"))"
    else
        ok "run: PREUN (upgrade) stops nothing"
    fi

    run_scriptlet POSTUN 1 0 yes
    if [ $rc -ne 0 ] || ! called '^systemctl daemon-reload' ||
        ! called "^systemctl try-restart ebs-hydrate@\\*\\.service"; then
        fail "run: POSTUN (upgrade) did not daemon-reload and try-restart the instances (exit $rc)"
    else
        ok "run: POSTUN (upgrade) reloads systemd and restarts running instances"
    fi
    echo stale >"$sandbox/textfile/ebs-hydrate.prom"
    run_scriptlet POSTUN 1 0 yes
    [ -e "$sandbox/textfile/ebs-hydrate.prom" ] || fail "run: POSTUN (upgrade) removed the metrics file"
    run_scriptlet POSTUN 0 1 yes
    [ ! -e "$sandbox/textfile/ebs-hydrate.prom" ] || fail "run: POSTUN (erase) left the metrics file"
    if [ $rc -ne 0 ] || ! called '^udevadm control --reload'; then
        fail "run: POSTUN (erase) with failing steps: exit $rc, calls: $(tr '\n' ';' <"$tmp/calls")"
    else
        ok "run: POSTUN (erase) reloads udev, and exits 0 when that fails"
    fi
fi

# --- dependencies -----------------------------------------------------------------------------
before=$problems
mkdir "$tmp/x" # the payload, for this section and the next
(cd "$tmp/x" && rpm2cpio "$rpmfile" | cpio -idm --quiet)
rpm -qp --requires "$rpmfile" >"$tmp/requires"
rpm -qp --qf '[%{REQUIREFLAGS:deptype} %{REQUIRENAME}\n]' "$rpmfile" >"$tmp/deptypes"
for lib in 'libsystemd\.so\.0' 'libudev\.so\.1' 'libaio\.so\.1' 'libinih\.so\.[0-9]+' \
    'libz\.so\.1' 'libjson-c\.so\.[0-9]+'; do
    grep -Eq "^$lib\(" "$tmp/requires" || fail "requires no ${lib//\\/} (automatic ELF dependency)"
done
# ... and every library that one of the ELF files links (read from the files themselves).
if command -v readelf >/dev/null; then
    for f in usr/bin/ebs-hydratectl usr/sbin/ebs-hydrated usr/sbin/ebs-hydrate-aws \
        usr/lib/udev/ebs-hydrate-id; do
        [ -f "$tmp/x/$f" ] || continue
        for lib in $(readelf -d "$tmp/x/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            grep -Fq "$lib(" "$tmp/requires" || fail "/$f links $lib, which the package does not require"
        done
    done
fi
grep -Eq '^pre.* shadow-utils$' "$tmp/deptypes" || fail "no Requires(pre): shadow-utils (useradd in %pre)"
grep -Fxq systemd "$tmp/requires" || fail "does not require systemd"
grep -Fxq systemd-udev "$tmp/requires" || fail "does not require systemd-udev"
[ "$problems" -gt "$before" ] ||
    ok "requires the libraries its ELF files link, shadow-utils (pre), systemd and systemd-udev"

# --- contents ---------------------------------------------------------------------------------
rule=$tmp/x/usr/lib/udev/rules.d/90-ebs-hydrate.rules
unit=$tmp/x/usr/lib/systemd/system/ebs-hydrate@.service
if [ ! -f "$rule" ]; then
    fail "cannot read the udev rule: not in the package"
elif ! grep -Fq 'IMPORT{program}="/usr/lib/udev/ebs-hydrate-id ' "$rule"; then
    fail "the udev rule does not run /usr/lib/udev/ebs-hydrate-id: $(grep -F 'IMPORT{program}' "$rule" || echo 'no IMPORT{program}')"
elif ! grep -Fq 'ENV{SYSTEMD_WANTS}+="ebs-hydrate@%k.service"' "$rule"; then
    fail "the udev rule does not start ebs-hydrate@%k.service"
else
    ok "the udev rule runs /usr/lib/udev/ebs-hydrate-id and starts ebs-hydrate@%k.service"
fi
if [ ! -f "$unit" ]; then
    fail "cannot read the unit: not in the package"
elif ! grep -Eq '^ExecStart=/usr/sbin/ebs-hydrated( |$)' "$unit"; then
    fail "the unit's ExecStart does not run /usr/sbin/ebs-hydrated: $(grep '^ExecStart=' "$unit" || echo 'no ExecStart=')"
else
    ok "the unit's ExecStart runs /usr/sbin/ebs-hydrated"
fi
# The paths compiled into the daemon (build-config.h): state, vendor and admin configuration.
daemon=$tmp/x/usr/sbin/ebs-hydrated
if [ -f "$daemon" ]; then
    for path in /var/lib/ebs-hydrate /usr/lib/ebs-hydrate /etc/ebs-hydrate; do
        grep -aFq "$path" "$daemon" || fail "ebs-hydrated was not built with $path (see its build-config.h)"
    done
fi
if [ -f "$unit" ] && [ -f "$tmp/x/usr/lib/sysusers.d/ebs-hydrate.conf" ]; then
    grep -Fxq 'User=ebs-hydrate' "$unit" || fail "the unit does not run as User=ebs-hydrate"
    grep -Eq '^u ebs-hydrate ' "$tmp/x/usr/lib/sysusers.d/ebs-hydrate.conf" ||
        fail "the sysusers file does not create user ebs-hydrate"
fi

# --- install into a throwaway root ------------------------------------------------------------
root=$tmp/root
mkdir "$root"
if ! rpm --root "$root" --dbpath /var/lib/rpm -i --nodeps --noscripts "$rpmfile" >"$tmp/install" 2>&1; then
    fail "rpm -i into a throwaway root failed: $(cat "$tmp/install")"
else
    absent=0
    for f in "${files[@]}"; do
        [ -f "$root$f" ] || { fail "installed tree lacks $f"; absent=1; }
    done
    for f in /usr/bin/ebs-hydratectl /usr/sbin/ebs-hydrated /usr/lib/udev/ebs-hydrate-id; do
        [ -x "$root$f" ] || { fail "installed $f is not executable"; absent=1; }
    done
    for page in "${man_pages[@]}"; do
        compgen -G "$root/usr/share/man/$page*" >/dev/null || { fail "installed tree lacks man page $page"; absent=1; }
    done
    if ! rpm --root "$root" --dbpath /var/lib/rpm -V --nodeps ebs-hydrate >"$tmp/verify" 2>&1; then
        fail "rpm -V in the throwaway root: $(cat "$tmp/verify")"
        absent=1
    fi
    [ "$absent" = 1 ] || ok "installs into a throwaway root, and rpm -V finds it intact"
fi

# --- rpmlint ----------------------------------------------------------------------------------
# Errors fail the check, warnings do not. Filtered out, by name, are the errors that only this
# host's rpmlint reports: without Fedora's configuration (rpmlint's configs/Fedora/fedora.toml,
# which Fedora's rpmlint package installs) it applies openSUSE-style defaults, and Fedora's
# configuration filters exactly these: no-signature (packages are signed when published),
# no-packager-tag and no-group-tag (tags Fedora does not use), hardcoded-library-path (here the
# arch-independent /usr/lib/ebs-hydrate, where %{_libdir} would be wrong).
# One more, not host-specific: rpmlint's DBusPolicyCheck knows send_destination but not
# send_destination_prefix, which our policy needs (one bus name per instance); only rules that
# name our own prefix are filtered.
if command -v rpmlint >/dev/null; then
    lint_args=("$rpmfile")
    [ -f "$spec" ] && lint_args+=("$spec")
    rpmlint "${lint_args[@]}" >"$tmp/rpmlint" 2>&1 || true
    grep -E ': E: ' "$tmp/rpmlint" |
        grep -Ev ': E: (no-signature|no-packager-tag|no-group-tag|hardcoded-library-path)( |$)' |
        grep -Ev ': E: dbus-policy-allow-without-destination <allow send_destination_prefix="org\.ebshydrate\.Volume1"' \
            >"$tmp/lint-errors" || true
    summary=$(grep -E 'checked;' "$tmp/rpmlint" | sed 's/^ *//' || true)
    if [ -s "$tmp/lint-errors" ]; then
        while IFS= read -r line; do fail "rpmlint: $line"; done <"$tmp/lint-errors"
    elif [ -z "$summary" ]; then
        fail "rpmlint printed no summary: $(tail -n 5 "$tmp/rpmlint")"
    else
        filtered=$(grep -Eo ': E: [a-z-]+' "$tmp/rpmlint" | sed 's/^: E: //' | sort | uniq -c |
            awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }' || true)
        ok "rpmlint: no error left after filtering (${filtered:-none}); ${summary%%;*}, $(grep -c ': W: ' "$tmp/rpmlint" || true) warnings"
    fi
else
    echo "note: rpmlint is not installed (apt-get install rpmlint): not run"
fi

if [ "$problems" -gt 0 ]; then
    echo "rpm-check: $problems problem(s) in $rpmfile"
    exit 1
fi
echo "rpm-check: $rpmfile is good"
