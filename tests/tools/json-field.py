#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""json-field: print fields of the JSON document on standard input, for shell scripts.

  json-field.py PATH...    each PATH is keys and list indices joined by dots, such as
                           partitiontable.partitions.0.start; the values are printed on one
                           line, separated by spaces: strings as they are, anything else as
                           JSON (true, false, null, numbers)

Exits 1, naming the PATH, if a field is missing.
"""
import json
import sys


def field(doc, path):
    value = doc
    for key in path.split("."):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value if isinstance(value, str) else json.dumps(value)


def main():
    doc = json.load(sys.stdin)
    out = []
    for path in sys.argv[1:]:
        try:
            out.append(field(doc, path))
        except (KeyError, IndexError, ValueError, TypeError):
            sys.exit("json-field: no %s in the document" % path)
    print(" ".join(out))


if __name__ == "__main__":
    main()
