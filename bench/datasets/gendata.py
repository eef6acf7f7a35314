"""Writes N tiny, distinct PNGs in ImageFolder layout for bench/datasets:
OUT/<class>/<n>.png, CLASSES classes, a fixed seed.

    /usr/bin/python3 gendata.py OUT N CLASSES
"""
import os
import struct
import sys
import zlib


def png(w, h, seed):
    """A w×h 8-bit grey PNG whose first pixel rows encode seed."""
    raw = b""
    for y in range(h):
        row = bytes(((seed >> (8 * ((x + y) % 4))) & 0xFF) for x in range(w))
        raw += b"\x00" + row

    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def main(out, n, classes):
    for c in range(classes):
        os.makedirs(os.path.join(out, "class%03d" % c), exist_ok=True)
    for i in range(n):
        c = i % classes
        with open(os.path.join(out, "class%03d" % c, "%06d.png" % i), "wb") as f:
            f.write(png(8 + i % 5, 8, i))
    print("wrote %d images in %d classes under %s" % (n, classes, out))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: gendata.py OUT N CLASSES")
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
