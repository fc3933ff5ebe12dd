#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The journal's MESSAGE_IDs are an interface: each one defined in src/shared/log.h is explained in
# the catalog and listed in ebs-hydrated(8), and nothing there names an id the code lacks.
# Usage: message-ids.sh SOURCE-DIR
set -euo pipefail
SRC=$1
code=$(grep -oE 'LOG_MESSAGE_[A-Z_]+ "[0-9a-f]{32}"' "$SRC/src/shared/log.h" | grep -oE '[0-9a-f]{32}' | sort)
[ "$(wc -l <<<"$code")" -ge 4 ] || { echo "FAIL: found no MESSAGE_IDs in src/shared/log.h" >&2; exit 1; }
catalog=$(grep -oE '^-- [0-9a-f]{32}$' "$SRC/units/ebs-hydrate.catalog" | cut -c4- | sort)
man=$(grep -oE '^\.B [0-9a-f]{32}$' "$SRC/man/ebs-hydrated.8" | cut -c4- | sort)
[ "$code" = "$catalog" ] || { echo "FAIL: catalog ids differ from src/shared/log.h:" >&2; diff <(echo "$code") <(echo "$catalog") >&2; exit 1; }
[ "$code" = "$man" ] || { echo "FAIL: ebs-hydrated.8 ids differ from src/shared/log.h:" >&2; diff <(echo "$code") <(echo "$man") >&2; exit 1; }
# journalctl itself must accept the catalog (skipped where there is no journalctl).
if command -v journalctl >/dev/null; then
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    mkdir -p "$root/usr/lib/systemd/catalog" "$root/var/lib/systemd/catalog"
    cp "$SRC/units/ebs-hydrate.catalog" "$root/usr/lib/systemd/catalog/"
    journalctl --root="$root" --update-catalog
    listed=$(journalctl --root="$root" --list-catalog | awk '$2 == "ebs-hydrate:" { print $1 }' | sort)
    [ "$code" = "$listed" ] || { echo "FAIL: journalctl --list-catalog shows: $listed" >&2; exit 1; }
fi
echo "PASS: $(wc -l <<<"$code") MESSAGE_IDs agree in code, catalog and man page"
