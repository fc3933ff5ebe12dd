#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""blocks-decode.py FILE: a <volume>.blocks file read as include/ebs-hydrate/findings.h describes
it, with none of the project's code: its KEY=VALUE lines, then the stored blocks as ranges
"FIRST-LAST", one a line (as tests/tools/aws-list-blocks prints them). Every count is checked
against the lines; exit 1 with the reason on stderr when one does not add up."""
import sys
import zlib


def leb128(data, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("a number runs past the stream")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def decode(data):
    if len(data) < 4 or zlib.crc32(data[:-4]) != int.from_bytes(data[-4:], "little"):
        raise ValueError("the CRC-32 does not match")
    head, sep, rest = data[:-4].partition(b"\n\n")
    if not sep:
        raise ValueError("no empty line after the header")
    lines = dict(line.split("=", 1) for line in head.decode("ascii").split("\n"))
    z = zlib.decompressobj()
    stream = z.decompress(rest) + z.flush()
    if not z.eof or z.unused_data:
        raise ValueError("the zlib stream does not end where the CRC begins")
    ranges, pos, end = [], 0, 0
    while pos < len(stream):
        gap, pos = leb128(stream, pos)
        length, pos = leb128(stream, pos)
        if ranges and gap == 0:
            raise ValueError("runs touch")
        first = end + gap
        end = first + length + 1
        ranges.append((first, end - 1))
    if lines.get("EBS_HYDRATE_BLOCKS") != "1" or lines.get("BLOCK_SIZE") != "524288":
        raise ValueError(f"not version 1 in 512 KiB blocks: {lines}")
    if end > int(lines["BLOCKS"]):
        raise ValueError("a run past the end")
    if int(lines["RUNS"]) != len(ranges) or \
            int(lines["STORED"]) != sum(b - a + 1 for a, b in ranges):
        raise ValueError(f"RUNS or STORED do not add up: {lines}, {len(ranges)} runs")
    return lines, ranges


def main():
    try:
        with open(sys.argv[1], "rb") as f:
            lines, ranges = decode(f.read())
    except (OSError, ValueError, KeyError, zlib.error) as e:
        print(f"{sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    for k, v in lines.items():
        print(f"{k}={v}")
    for a, b in ranges:
        print(f"{a}-{b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
