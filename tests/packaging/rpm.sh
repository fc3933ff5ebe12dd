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
rpm_file=$("$here/../../packaging/rpm/build.sh" --out "$out" | tail -n 1) || rc=$?
[[ $rc -eq 0 ]] || exit "$rc" # 77: rpmbuild missing; 1: the build failed (said why)
echo "built $rpm_file"
exec "$here/rpm-check.sh" "$rpm_file"
