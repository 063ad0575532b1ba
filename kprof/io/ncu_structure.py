"""The structure of an ``.ncu-rep``, checked before NVIDIA's native module sees the file, and the
version of the Nsight Compute that wrote it (see :mod:`kprof.io.ncu`, "Bad files", layer 1)."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import IO

from kprof.errors import KprofInputError, printable

NCU_REP_MAGIC = b"NVR\x00"
"""First four bytes of every ``.ncu-rep`` (seen in reports of ncu 2023.1 and 2025.3)."""


def _check_magic(path: str) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(len(NCU_REP_MAGIC))
    except OSError as exc:
        raise KprofInputError(path, f"cannot read: {exc.strerror}") from exc
    if head != NCU_REP_MAGIC:
        raise _not_a_report(path, head)


def _not_a_report(path: str, head: bytes) -> KprofInputError:
    if head and NCU_REP_MAGIC.startswith(head):
        return KprofInputError(
            path,
            f"the report is truncated and holds no profiled ranges: the file holds only {len(head)} bytes",
        )
    return KprofInputError(
        path, "not an Nsight Compute report (the file does not start with ncu's 'NVR' signature)"
    )


@dataclass(frozen=True, slots=True)
class ReportStructure:
    """What :func:`check_report_structure` read: the container's blocks and their entries."""

    size: int
    """File size, bytes."""
    blocks: int
    sources: int
    """Source entries (the profiled binaries, with their SASS)."""
    results: int
    """Result entries: one per profiled range (launch)."""


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def _protobuf_ints(buf: bytes) -> dict[int, int]:
    """The integer (varint) fields of one protobuf message; ValueError unless it is well formed."""
    out: dict[int, int] = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire == 0:
            out[field], i = _varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = _varint(buf, i)
            i += n
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(buf):
            raise ValueError("field runs past the message")
    return out


def _read_exact(f: IO[bytes], n: int) -> bytes:
    data = f.read(n)
    return data if len(data) == n else b""


def check_report_structure(path: str | os.PathLike[str]) -> ReportStructure:
    """Check an ``.ncu-rep`` file's container framing before ``ncu_report`` reads it.

    Reads only the headers (seeking over payloads), so it costs milliseconds even for a large
    report. It catches truncation and damaged framing; damage inside a payload (a flipped bit
    in a metric value or in the embedded cubin) is invisible here.

    Raises
    ------
    KprofInputError
        Not an ncu report, truncated, or corrupt; the reason gives the byte offset.

    Examples
    --------
    >>> check_report_structure("small_grid.ncu-rep")  # gunzip -k data/samples/ncu/small_grid.ncu-rep.gz  # doctest: +SKIP
    ReportStructure(size=1411817, blocks=10, sources=1, results=1)
    """
    p = os.fspath(path)
    try:
        size = os.path.getsize(p)
        with open(p, "rb") as f:
            return _walk_blocks(p, f, size)
    except OSError as exc:
        raise KprofInputError(p, f"cannot read: {exc.strerror}") from exc


def _walk_blocks(p: str, f: IO[bytes], size: int) -> ReportStructure:
    blocks = sources = results = 0

    def bad(what: str, *, truncated: bool = False) -> KprofInputError:
        kind = "truncated" if truncated else "corrupt"
        where = (
            " and holds no profiled ranges"
            if results == 0
            else f" after {results} complete profiled range{'s' if results != 1 else ''}"
        )
        again = "copy it again (an interrupted copy or download?)" if truncated else "copy it again"
        return KprofInputError(
            p, f"the report is {kind}{where}: {what} (file size {size:,} bytes); {again} or profile again"
        )

    head = f.read(len(NCU_REP_MAGIC))
    if head != NCU_REP_MAGIC:
        raise _not_a_report(p, head)
    raw = _read_exact(f, 4)
    if not raw:
        raise bad("it ends inside the file header", truncated=True)
    (n,) = struct.unpack("<I", raw)
    pos = 8
    if pos + n > size:
        raise bad(f"the file header at byte 8 declares {n:,} bytes, past the end", truncated=True)
    try:
        _protobuf_ints(_read_exact(f, n))
    except ValueError:
        raise bad("the file header at byte 8 is not readable") from None
    pos += n
    while pos < size:
        start = pos
        raw = _read_exact(f, 4)
        if not raw:
            raise bad(f"it ends inside the size of block {blocks} at byte {start:,}", truncated=True)
        (n,) = struct.unpack("<I", raw)
        pos += 4
        if n == 0 or pos + n > size:
            truncated = 0 < n <= 1 << 24  # a plausible header size: the file was cut, not damaged
            raise bad(
                f"block {blocks} at byte {start:,} declares a {n:,}-byte header"
                + (", past the end" if n else ""),
                truncated=truncated,
            )
        try:
            fields = _protobuf_ints(_read_exact(f, n))
        except ValueError:
            raise bad(f"the header of block {blocks} at byte {start:,} is not readable") from None
        pos += n
        n_src, n_res, payload = fields.get(1, 0), fields.get(2, 0), fields.get(5, 0)
        end = pos + payload
        if n_src + n_res > payload // 4:
            raise bad(
                f"the header of block {blocks} at byte {start:,} counts more entries than its payload holds"
            )
        if end > size:
            raise bad(
                f"block {blocks} at byte {start:,} declares a {payload:,}-byte payload; "
                f"the file ends {size - pos:,} bytes into it",
                truncated=payload <= 1 << 40,
            )
        for k in range(n_src + n_res):
            f.seek(pos)
            raw = _read_exact(f, 4)
            if not raw or pos + 4 > end:
                raise bad(f"entry {k} of block {blocks} lies past the block's payload")
            (m,) = struct.unpack("<I", raw)
            pos += 4 + m
            if pos > end:
                raise bad(
                    f"entry {k} of block {blocks} at byte {pos - 4 - m:,} runs past the block's payload"
                )
        if pos != end:
            raise bad(f"the entries of block {blocks} at byte {start:,} do not fill its declared payload")
        f.seek(end)
        blocks += 1
        sources += n_src
        results += n_res
    if results == 0:
        raise KprofInputError(
            p,
            "the report holds no profiled ranges (its blocks hold no results): it is truncated, "
            "corrupt or not written by ncu",
        )
    return ReportStructure(size=size, blocks=blocks, sources=sources, results=results)


_TARGET_KEY = b"Nsight Compute Target"


def capture_version(path: str | os.PathLike[str]) -> str | None:
    """The version of the Nsight Compute that wrote the report (``Nsight Compute 2025.3.1.0 (build 36398880)``).

    ncu records its session's properties as key/value strings (protobuf fields 1 and 2 of a
    small message) near the end of the report; the key ``Nsight Compute Target`` holds its
    version. ``ncu_report.get_version()`` is the version of the reading module instead, which
    says nothing about the capture. Returns None when the key is not in the file.
    """
    import mmap

    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            i = m.rfind(b"\x0a" + bytes([len(_TARGET_KEY)]) + _TARGET_KEY + b"\x12")
            if i < 0:
                return None
            j = i + 2 + len(_TARGET_KEY) + 1
            n, shift = 0, 0  # the value's length, a protobuf varint
            while j < len(m) and shift < 28:
                b = m[j]
                j += 1
                n |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            raw = m[j : j + min(n, 200)]
    except (OSError, ValueError):
        return None
    text = printable(" ".join(raw.decode("utf-8", "replace").split()))
    text = text.replace(" (public-release)", "")
    return f"Nsight Compute {text}" if text else None
