#!/usr/bin/env python3
"""make-test-png.py PATH: the install checks' test image, a 300x200 RGB PNG
(x, y, 128 gradients) written with zlib alone, so a consumer's output
("256x171 ...") can be checked without any image tool installed."""
import struct
import sys
import zlib

w, h = 300, 200
raw = b"".join(b"\0" + bytes(v for x in range(w) for v in (x % 256, y % 256, 128)) for y in range(h))


def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))


png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + \
    chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
