"""The container layout of an ``.ncu-rep`` file, read independently of kprof (to place cuts and flips).

``NVR\\0``, u32 size + protobuf file header, then blocks: u32 size + protobuf block header (field 1:
source entries, 2: result entries, 5: payload bytes) + payload of u32-size-prefixed entries.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    start: int
    header_size: int
    sources: int
    results: int
    payload_start: int
    payload_size: int
    entries: tuple[tuple[int, int, str], ...]
    """(offset of the entry's bytes, size, "source" | "result")."""


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    r = s = 0
    while True:
        c = buf[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return r, i


def _ints(buf: bytes) -> dict[int, int]:
    i, out = 0, {}
    while i < len(buf):
        k, i = _varint(buf, i)
        f, w = k >> 3, k & 7
        if w == 0:
            out[f], i = _varint(buf, i)
        elif w == 1:
            i += 8
        elif w == 5:
            i += 4
        else:
            n, i = _varint(buf, i)
            i += n
    return out


def blocks(data: bytes) -> list[Block]:
    assert data[:4] == b"NVR\0"
    (n,) = struct.unpack_from("<I", data, 4)
    pos, out = 8 + n, []
    while pos < len(data):
        start = pos
        (hs,) = struct.unpack_from("<I", data, pos)
        h = _ints(data[pos + 4 : pos + 4 + hs])
        pos += 4 + hs
        ns, nr, size = h.get(1, 0), h.get(2, 0), h.get(5, 0)
        entries, p = [], pos
        for k in range(ns + nr):
            (m,) = struct.unpack_from("<I", data, p)
            entries.append((p + 4, m, "source" if k < ns else "result"))
            p += 4 + m
        out.append(Block(start, hs, ns, nr, pos, size, tuple(entries)))
        pos += size
    assert pos == len(data)
    return out


def cut_points(data: bytes) -> list[int]:
    """Cuts inside the signature and file header, at and around every block's boundaries and inside
    its header and payload, and at fractions of the file: every place a copy can stop."""
    pts = {1, 3, 4, 6, 8, 9}
    for b in blocks(data):
        pts |= {b.start, b.start + 2, b.start + 4, b.start + 4 + b.header_size // 2, b.payload_start}
        if b.payload_size:
            pts |= {
                b.payload_start + 2,
                b.payload_start + b.payload_size // 2,
                b.payload_start + b.payload_size - 1,
            }
    pts |= {int(len(data) * f) for f in (0.001, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999)}
    pts |= {len(data) - 1}
    return sorted(p for p in pts if 0 < p < len(data))


def flip_offsets(data: bytes) -> list[int]:
    """Bytes to flip: the size fields and headers of the framing, and spots spread over each payload."""
    offs = {4, 5, 8, 9}
    for b in blocks(data):
        offs |= {b.start, b.start + 1, b.start + 4, b.start + 5, b.start + 4 + b.header_size - 1}
        for off, size, _ in b.entries:
            offs |= {off - 4, off - 2, off, off + size // 3, off + size - 1}
    return sorted(o for o in offs if 0 <= o < len(data))


def smash_cubin_section(data: bytes, seed: int = 1) -> bytes:
    """64 random bytes (from ``random.Random(seed)``) at a random place in the first source entry (the
    profiled binary: its cubin and SASS). Seed 1 on the uncoalesced_global_access sample lands in the
    cubin's tables and crashed ncu_report 2026.3.1 (SIGSEGV in IAction.sass_by_pc), measured."""
    off, size, _ = next(e for b in blocks(data) for e in b.entries if e[2] == "source")
    rng = random.Random(seed)
    o = off + rng.randrange(size - 64)
    out = bytearray(data)
    out[o : o + 64] = rng.randbytes(64)
    return bytes(out)
