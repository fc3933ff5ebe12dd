#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the RPM package (packaging/rpm/build.sh: rpmbuild -bb) into OUT_DIR, then check it
# (tests/packaging/rpm-check.sh: files, scriptlets, dependencies, an install into a scratch
# root, rpmlint).
# Usage: rpm.sh OUT_DIR         Exit status: 0 ok, 1 a finding, 77 rpm tools missing.
set -euo pipefail

out=${1:?usage: rpm.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rm -f "$out"/ebs-hydrate-*.rpm
rc=0
built=$("$here/../../packaging/rpm/build.sh" --out "$out") || rc=$?
[[ $rc -eq 0 ]] || exit "$rc" # 77: rpmbuild missing; 1: the build failed (said why)
rpm_file=$(grep -E '/ebs-hydrate-[0-9][^/]*\.rpm$' <<<"$built" | tail -n 1)
devel_file=$(grep -E '/ebs-hydrate-devel-[0-9][^/]*\.rpm$' <<<"$built" | tail -n 1)
[[ -n $rpm_file ]] || { echo "FAIL: no ebs-hydrate package among: $built" >&2; exit 1; }
echo "built $rpm_file"
# The -devel package: the interface headers, and nothing else.
expected=$(cd "$here/../.." && find include/ebs-hydrate -name '*.h' | sed 's|^include/|/usr/include/|' | sort)
actual=$(rpm -qpl "$devel_file" 2>/dev/null | grep -v -e '^/usr/share/licenses/' -e '^/usr/include/ebs-hydrate$' | sort)
if [[ -z $devel_file || $actual != "$expected" ]]; then
    echo "FAIL: the -devel package (${devel_file:-none}) holds: $(echo $actual); expected: $(echo $expected)" >&2
    exit 1
fi
exec "$here/rpm-check.sh" "$rpm_file"
