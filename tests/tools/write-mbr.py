#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""write-mbr: write a DOS partition table (an MBR) of Linux partitions into an image, by hand.

sfdisk refuses partitions that overlap; the tests need such tables (issue 15).

  write-mbr.py IMAGE START:SIZE...   up to four Linux (0x83) partitions, START and SIZE in MiB;
                                     the first sector of IMAGE is overwritten, nothing else
"""
import struct
import sys

SECTORS_PER_MIB = 2048


def mbr(partitions):
    sector = bytearray(512)
    sector[440:444] = b"\x12\x34\x56\x78"  # disk identifier
    for i, (start, size) in enumerate(partitions):
        sector[446 + 16 * i:462 + 16 * i] = struct.pack(
            "<B3sB3sII", 0, b"", 0x83, b"", start * SECTORS_PER_MIB, size * SECTORS_PER_MIB)
    sector[510:512] = b"\x55\xaa"
    return bytes(sector)


def main():
    if len(sys.argv) < 3 or len(sys.argv) > 6:
        sys.exit("usage: write-mbr.py IMAGE START:SIZE... (MiB, up to four)")
    partitions = [tuple(int(x) for x in arg.split(":")) for arg in sys.argv[2:]]
    with open(sys.argv[1], "r+b") as f:
        f.write(mbr(partitions))


if __name__ == "__main__":
    main()
