"""A PNG reader of the standard library (zlib, struct) for the screenshots the tests take: 8-bit
RGB or RGBA, not interlaced (what Chromium writes). No Pillow in the controller's venv."""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _add(a, b, mask_low, mask_high):
    """Bytewise a + b (mod 256) of two rows held as integers (no carry from one byte to the next)."""
    return ((a & mask_low) + (b & mask_low)) ^ ((a ^ b) & mask_high)


def _unfilter_slow(kind, line, prev, channels):
    """Average (3) and Paeth (4): byte by byte."""
    for i in range(len(line)):
        left = line[i - channels] if i >= channels else 0
        up = prev[i]
        if kind == 3:
            line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
        else:
            upleft = prev[i - channels] if i >= channels else 0
            line[i] = (line[i] + _paeth(left, up, upleft)) & 0xFF
    return line


def _chunks(data):
    """The IHDR fields and the IDAT bodies of a PNG."""
    if data[:8] != SIGNATURE:
        raise ValueError("not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("no IHDR chunk")
    return header, idat


def read_png(data):
    """``(width, height, rows)``: ``rows[y]`` a bytes of ``width`` RGB triples (alpha dropped).

    None, Sub and Up rows are undone on whole rows at once (a row as one integer, bytewise adds);
    Average and Paeth rows byte by byte, except a Paeth row of zeros under a single-colour row
    (a white margin), which is that row again.
    """
    header, idat = _chunks(data)
    width, height, depth, color, _compression, _filter, interlace = header
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError("unsupported PNG: depth %d, colour type %d, interlace %d" % (depth, color, interlace))
    channels = 3 if color == 2 else 4
    stride = width * channels
    low = int.from_bytes(b"\x7f" * stride, "big")
    high = int.from_bytes(b"\x80" * stride, "big")
    raw = zlib.decompress(b"".join(idat))
    rows, prev = [], bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1 : start + 1 + stride]
        if kind == 2:
            line = _add(int.from_bytes(line, "big"), int.from_bytes(prev, "big"), low, high).to_bytes(stride, "big")
        elif kind == 1:
            # A prefix sum per channel: log2(width) rounds of adding the row shifted by 1, 2, 4 ... pixels.
            value, shift = int.from_bytes(line, "big"), channels
            while shift < stride:
                value = _add(value, value >> (8 * shift), low, high)
                shift *= 2
            line = value.to_bytes(stride, "big")
        elif kind == 4 and not any(line) and prev.count(prev[:channels]) * channels == stride:
            line = prev
        elif kind in (3, 4):
            line = bytes(_unfilter_slow(kind, bytearray(line), prev, channels))
        elif kind != 0:
            raise ValueError("bad filter type %d in row %d" % (kind, y))
        prev = line
        rows.append(line if channels == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3))
    return width, height, rows


def write_png(path, width, rows):
    """Write 8-bit RGB ``rows`` (bytes of ``width`` triples each) as a PNG (filter 0, zlib level 9)."""

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, len(rows), 8, 2, 0, 0, 0)
    raw = b"".join(b"\x00" + row for row in rows)
    with open(path, "wb") as handle:
        handle.write(SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
