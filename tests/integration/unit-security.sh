#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fails unless systemd-analyze rates the unit's exposure at or below MAX.
# Usage: unit-security.sh UNIT-FILE MAX
set -euo pipefail
unit=$1
max=$2
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze" >&2; exit 77; }
out=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1) || true
score=$(sed -n 's/^→ Overall exposure level for .*: \([0-9.]*\) .*/\1/p' <<<"$out")
[ -n "$score" ] || { echo "FAIL: no exposure score in: $out" >&2; exit 1; }
echo "exposure of $(basename "$unit"): $score (at most $max)"
awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }' || { echo "$out" >&2; exit 1; }
