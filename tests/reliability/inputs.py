"""Bad inputs for the reliability suite, built in a temporary folder from the shipped samples.

Nothing here writes under ``data/samples`` or the corpus: every builder reads a sample and
writes a damaged copy into the folder it is given. Each :class:`Case` says what a correct
kprof does with it:

- ``"bad"``: refuse it: exit 2 and one line naming the file (CLI), a :class:`KprofError` (library);
- ``"any"``: either diagnose it (exit 0) or refuse it as above; never a traceback, a crash or a hang
  (used where the damage may be undetectable, e.g. a CSV cut exactly at a row boundary, or where
  odd values are legal);
- ``"ok"``: diagnose it (exit 0).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples"
CORPUS = (REPO.parent / "shared" / "corpus").resolve()

NSYS_SQLITE = SAMPLES / "timeline" / "transfer_bound.sqlite"
NSYS_REP = SAMPLES / "timeline" / "transfer_bound.nsys-rep"
KINETO_GZ = SAMPLES / "timeline" / "transfer_bound.json.gz"
# The sample reports are stored gzip-compressed: NCU_REP is one as shipped (kprof decompresses it), and
# ncu_rep_bytes() its plain .ncu-rep, which the builders copy, cut and flip as a user's report.
NCU_REP = SAMPLES / "ncu" / "uncoalesced_global_access.ncu-rep.gz"
NCU_RAW_CSV = SAMPLES / "ncu" / "uncoalesced_global_access.raw.csv"
NCU_DETAILS_CSV = SAMPLES / "ncu" / "uncoalesced_global_access.details.csv"

EXTENSIONS = (".nsys-rep", ".sqlite", ".json", ".json.gz", ".ncu-rep", ".csv")
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Case:
    """One input: ``build(folder)`` writes it and returns the path(s) to pass to kprof."""

    id: str
    what: str
    build: Callable[[Path], Path]
    expect: str = "bad"
    needs: tuple[Path, ...] = field(default=())


def sample_inputs() -> list[Path]:
    """Every sample file the reliability builders read (hashed by the untouched-inputs test)."""
    return [NSYS_SQLITE, NSYS_REP, KINETO_GZ, NCU_REP, NCU_RAW_CSV, NCU_DETAILS_CSV]


# ----------------------------------------------------------------------------- helpers


@functools.cache
def ncu_rep_bytes() -> bytes:
    """NCU_REP decompressed: the report as ncu wrote it (b"" when the sample is missing)."""
    return gzip.decompress(NCU_REP.read_bytes()) if NCU_REP.is_file() else b""


def plain_ncu_rep(path: Path) -> Path:
    """Write NCU_REP as a plain ``.ncu-rep`` at ``path``."""
    path.write_bytes(ncu_rep_bytes())
    return path


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def cut(src: Path, fraction: float, name: str | None = None) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        data = src.read_bytes()
        n = max(1, int(len(data) * fraction))
        return write(d / (name or src.name), data[:n])

    return build


def cut_at(src: Path, n: int, name: str | None = None) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        return write(d / (name or src.name), src.read_bytes()[:n])

    return build


def kineto_plain(d: Path) -> Path:
    """The Kineto sample, uncompressed."""
    return write(d / "trace.json", gzip.decompress(KINETO_GZ.read_bytes()))


def cut_plain_kineto(fraction: float) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        data = gzip.decompress(KINETO_GZ.read_bytes())
        return write(d / "trace.json", data[: max(1, int(len(data) * fraction))])

    return build


def random_bytes(ext: str, n: int = 4096, head: bytes = b"", seed: int = 8) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        rng = random.Random(seed)
        return write(d / f"random{ext}", head + rng.randbytes(n))

    return build


def text(name: str, body: str) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        return write(d / name, body.encode())

    return build


def copy_sqlite(d: Path, sql: str, name: str = "export.sqlite") -> Path:
    """A copy of the nsys sample with ``sql`` applied to the copy."""
    dst = d / name
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(NSYS_SQLITE, dst)
    con = sqlite3.connect(dst)
    try:
        con.executescript(sql)
        con.commit()
    finally:
        con.close()
    return dst


def sqlite_case(sql: str) -> Callable[[Path], Path]:
    return lambda d: copy_sqlite(d, sql)


def kineto_events() -> dict:
    return json.loads(gzip.decompress(KINETO_GZ.read_bytes()))


def kineto_with(mutate: Callable[[dict], None], name: str = "trace.json") -> Callable[[Path], Path]:
    """The Kineto sample with ``mutate`` applied to its first kernel event."""

    def build(d: Path) -> Path:
        tr = kineto_events()
        first = next(e for e in tr["traceEvents"] if e.get("cat") == "kernel")
        mutate(first)
        return write(d / name, json.dumps(tr).encode())

    return build


def kineto_raw_first_kernel(field_name: str, raw: str) -> Callable[[Path], Path]:
    """Set a field of the first kernel event to raw JSON text (numbers json.dumps cannot write)."""

    def build(d: Path) -> Path:
        tr = kineto_events()
        first = next(e for e in tr["traceEvents"] if e.get("cat") == "kernel")
        marker = "@@KPROF_RAW@@"
        first[field_name] = marker
        body = json.dumps(tr).replace(f'"{marker}"', raw)
        return write(d / "trace.json", body.encode())

    return build


def csv_details_without(section: str) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        lines = NCU_DETAILS_CSV.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [ln for ln in lines if f'"{section}"' not in ln]
        return write(d / "details.csv", "".join(kept).encode())

    return build


def csv_raw_without(prefixes: tuple[str, ...]) -> Callable[[Path], Path]:
    """The raw CSV export without the columns whose names start with one of ``prefixes``."""
    import csv
    import io

    def build(d: Path) -> Path:
        rows = list(csv.reader(io.StringIO(NCU_RAW_CSV.read_text(encoding="utf-8"))))
        keep = [i for i, h in enumerate(rows[0]) if not h.startswith(prefixes)]
        out = io.StringIO()
        w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for r in rows:
            w.writerow([r[i] for i in keep if i < len(r)])
        return write(d / "raw.csv", out.getvalue().encode())

    return build


def csv_raw_value(metric: str, value: str) -> Callable[[Path], Path]:
    """The raw CSV export with one metric's value replaced (in the data row)."""
    import csv
    import io

    def build(d: Path) -> Path:
        rows = list(csv.reader(io.StringIO(NCU_RAW_CSV.read_text(encoding="utf-8"))))
        i = rows[0].index(metric)
        for r in rows[1:]:
            if r and r[0].strip():  # data rows (the units row has an empty ID)
                r[i] = value
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
        return write(d / "raw.csv", out.getvalue().encode())

    return build


def sparse(name: str, size: int = 4 << 30) -> Callable[[Path], Path]:
    """A file of ``size`` zero bytes that takes no disk space (a reader that slurps it would need 4 GiB)."""

    def build(d: Path) -> Path:
        p = d / name
        with open(p, "wb") as f:
            f.truncate(size)
        return p

    return build


def other_program_sqlite(d: Path) -> Path:
    p = d / "app.sqlite"
    con = sqlite3.connect(p)
    con.executescript(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
        "INSERT INTO users VALUES (1, 'ada'), (2, 'grace');"
    )
    con.commit()
    con.close()
    return p


def directory(name: str) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        p = d / name
        p.mkdir(parents=True)
        (p / "inside.txt").write_text("a folder, not a profile")
        return p

    return build


def fifo(name: str) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        p = d / name
        d.mkdir(parents=True, exist_ok=True)
        os.mkfifo(p)
        return p

    return build


def symlink_loop(name: str) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        d.mkdir(parents=True, exist_ok=True)
        a, b = d / name, d / ("other-" + name)
        a.symlink_to(b)
        b.symlink_to(a)
        return a

    return build


def dev_null(name: str) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        d.mkdir(parents=True, exist_ok=True)
        p = d / name
        p.symlink_to("/dev/null")
        return p

    return build


ODD_DIR = 'dir with spaces/it\'s "quoted" $HOME;`id`'


def odd_name(src: Path, name: str) -> Callable[[Path], Path]:
    """A valid sample under a path with spaces, quotes and shell metacharacters."""

    def build(d: Path) -> Path:
        dst = d / ODD_DIR / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        return dst

    return build


def deep_json(d: Path) -> Path:
    depth = 200_000
    return write(d / "deep.json", b'{"traceEvents": ' + b"[" * depth + b"]" * depth + b"}")


# ----------------------------------------------------------------------------- the cases


def _kernel(**kw: object) -> Callable[[dict], None]:
    def mutate(ev: dict) -> None:
        ev.update(kw)

    return mutate


def _set_arg(key: str, value: object) -> Callable[[dict], None]:
    def mutate(ev: dict) -> None:
        ev.setdefault("args", {})[key] = value

    return mutate


def bad_input_cases() -> list[Case]:
    """Every bad input of issue 8 except truncations (see :func:`truncation_cases`)."""
    cases: list[Case] = []
    for ext in EXTENSIONS:
        cases.append(Case(f"empty{ext}", f"empty file named *{ext}", text(f"empty{ext}", "")))
    for ext in EXTENSIONS:
        cases.append(Case(f"random{ext}", f"4 KiB of random bytes named *{ext}", random_bytes(ext)))
    for ext in (".csv", ".json", ".json.gz", ".ncu-rep", ".sqlite"):
        cases.append(
            Case(f"sparse-4GiB{ext}", f"a 4 GiB file of zero bytes named *{ext}", sparse(f"zeros{ext}"))
        )
    cases += [
        Case(
            "random-nvr.ncu-rep",
            "'NVR\\0' then 4 KiB of random bytes",
            random_bytes(".ncu-rep", head=b"NVR\0"),
        ),
        Case(
            "random-nvr-big.ncu-rep",
            "'NVR\\0' then 300 KiB of random bytes",
            random_bytes(".ncu-rep", n=300_000, head=b"NVR\0", seed=3),
        ),
        Case(
            "random-sqlite-magic.sqlite",
            "SQLite magic then random bytes",
            random_bytes(".sqlite", n=8192, head=b"SQLite format 3\0"),
        ),
        Case(
            "random-gzip.json.gz",
            "gzip magic then random bytes",
            random_bytes(".json.gz", head=b"\x1f\x8b\x08\x00"),
        ),
        Case(
            "json-object.json", "JSON object that is not a trace", text("conf.json", '{"a": 1, "b": [1, 2]}')
        ),
        Case("json-array.json", "JSON array of numbers", text("nums.json", "[1, 2, 3]")),
        Case("json-string.json", "a JSON string", text("s.json", '"just a string"')),
        Case("json-null.json", "JSON null", text("n.json", "null")),
        Case("json-traceEvents-number.json", '{"traceEvents": 5}', text("t.json", '{"traceEvents": 5}')),
        Case(
            "json-traceEvents-numbers.json",
            '{"traceEvents": [1, 2]}',
            text("t.json", '{"traceEvents": [1, 2]}'),
        ),
        Case(
            "json-events-without-ph.json",
            "traceEvents entries without 'ph'",
            text("t.json", '{"traceEvents": [{"name": "x"}, {"name": "y"}]}'),
        ),
        Case("json-deep-nesting.json", "traceEvents nested 200000 arrays deep", deep_json),
        Case("json-binary.json", "binary garbage named *.json", random_bytes(".json", head=b"{")),
        Case("sqlite-other-program.sqlite", "an SQLite database from another program", other_program_sqlite),
        Case(
            "nsys-no-stringids.sqlite",
            "nsys export with a kernel table but no StringIds",
            sqlite_case("DROP TABLE StringIds;"),
        ),
        Case(
            "nsys-no-kernel-columns.sqlite",
            "nsys export whose kernel table lacks demangledName",
            sqlite_case(
                "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN demangledName TO something_else;"
            ),
        ),
        Case(
            "ncu-details-no-sol.csv",
            "ncu details CSV without its SpeedOfLight section",
            csv_details_without("GPU Speed Of Light Throughput"),
            expect="any",
        ),
        Case(
            "ncu-raw-no-sol.csv",
            "ncu raw CSV without the SpeedOfLight metrics",
            csv_raw_without(("sm__throughput", "gpu__compute_memory_throughput", "breakdown:")),
            expect="any",
        ),
        Case(
            "csv-not-ncu.csv",
            "a CSV file that is not an ncu export",
            text("table.csv", "name,value\na,1\nb,2\n"),
        ),
        Case("dir.ncu-rep", "a directory named *.ncu-rep", directory("x.ncu-rep")),
        Case("dir.sqlite", "a directory named *.sqlite", directory("x.sqlite")),
        Case("dir.json.gz", "a directory named *.json.gz", directory("x.json.gz")),
        Case("missing.sqlite", "a path that does not exist", lambda d: d / "nope.sqlite"),
        Case("fifo.sqlite", "a named pipe named *.sqlite (must not block)", fifo("pipe.sqlite")),
        Case("devnull.json", "a symlink to /dev/null named *.json", dev_null("null.json")),
        Case("symlink-loop.ncu-rep", "a symlink loop named *.ncu-rep", symlink_loop("loop.ncu-rep")),
        Case(
            "newline-in-name.json",
            "an empty file whose name holds a newline and a terminal escape",
            lambda d: write(d / "bad\nname\x1b[2J.json", b""),
        ),
        Case(
            "odd-name-empty.sqlite",
            "an empty file under a path with spaces, quotes, $ and backticks",
            lambda d: write(d / ODD_DIR / "empty 'x'.sqlite", b""),
        ),
        Case(
            "odd-name-ok.sqlite",
            "a valid nsys export under such a path",
            odd_name(NSYS_SQLITE, "a b.sqlite"),
            "ok",
        ),
        Case(
            "odd-name-ok.json.gz",
            "a valid Kineto trace under such a path",
            odd_name(KINETO_GZ, 'trace "1".json.gz'),
            "ok",
        ),
        Case(
            "odd-name-ok.csv",
            "a valid ncu CSV under such a path",
            odd_name(NCU_DETAILS_CSV, "k 'x'.csv"),
            "ok",
        ),
        # absurd values: a correct kprof diagnoses what it can or refuses with one line, never crashes
        Case(
            "kineto-negative-dur.json", "Kineto kernel with dur -5000", kineto_with(_kernel(dur=-5000)), "any"
        ),
        Case(
            "kineto-end-before-start.json",
            "Kineto kernel that ends before it starts (dur -1e9)",
            kineto_with(_kernel(dur=-1e9)),
            "any",
        ),
        Case("kineto-ts-2p63.json", "Kineto kernel with ts 2**63", kineto_with(_kernel(ts=2**63)), "any"),
        Case("kineto-dur-2p63.json", "Kineto kernel with dur 2**63", kineto_with(_kernel(dur=2**63)), "any"),
        Case(
            "kineto-ts-neg-2p63.json",
            "Kineto kernel with ts -2**63",
            kineto_with(_kernel(ts=-(2**63))),
            "any",
        ),
        Case(
            "kineto-ts-1e400.json",
            "Kineto kernel with ts 1e400 (inf)",
            kineto_raw_first_kernel("ts", "1e400"),
            "any",
        ),
        Case("kineto-ts-nan.json", "Kineto kernel with ts NaN", kineto_raw_first_kernel("ts", "NaN"), "any"),
        Case("kineto-ts-string.json", 'Kineto kernel with ts "soon"', kineto_with(_kernel(ts="soon")), "any"),
        Case(
            "kineto-correlation-2p64.json",
            "Kineto kernel with correlation 2**64",
            kineto_with(_set_arg("correlation", 2**64)),
            "any",
        ),
        Case(
            "kineto-grid-huge.json",
            "Kineto kernel with grid [2**40, -1, 0]",
            kineto_with(_set_arg("grid", [2**40, -1, 0])),
            "any",
        ),
        Case(
            "nsys-end-before-start.sqlite",
            "nsys kernel rows that end before they start",
            sqlite_case('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 1000000;'),
            "any",
        ),
        Case(
            "nsys-start-int64-max.sqlite",
            "nsys kernel row at start = end = 2**63-1",
            sqlite_case(
                f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = {INT64_MAX}, "end" = {INT64_MAX} '
                "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);"
            ),
            "any",
        ),
        Case(
            "nsys-negative-times.sqlite",
            "nsys kernel row at start -2**63",
            sqlite_case(
                f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = {-INT64_MAX - 1}, "end" = -5 '
                "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);"
            ),
            "any",
        ),
        Case(
            "nsys-text-in-int-column.sqlite",
            "nsys kernel row whose start is the text 'soon'",
            sqlite_case(
                "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' "
                "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);"
            ),
            "any",
        ),
        Case(
            "ncu-csv-duration-2p63.csv",
            "ncu raw CSV with gpu__time_duration.sum = 2**63",
            csv_raw_value("gpu__time_duration.sum", str(2**63)),
            "any",
        ),
        Case(
            "ncu-csv-duration-negative.csv",
            "ncu raw CSV with a negative duration",
            csv_raw_value("gpu__time_duration.sum", "-5"),
            "any",
        ),
        Case(
            "ncu-csv-sol-inf.csv",
            "ncu raw CSV with SM throughput 'inf'",
            csv_raw_value("sm__throughput.avg.pct_of_peak_sustained_elapsed", "inf"),
            "any",
        ),
        Case(
            "ncu-csv-sol-1e400.csv",
            "ncu raw CSV with memory throughput 1e400",
            csv_raw_value("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "1e400"),
            "any",
        ),
        Case(
            "ncu-csv-sol-nan.csv",
            "ncu raw CSV with SM throughput 'nan'",
            csv_raw_value("sm__throughput.avg.pct_of_peak_sustained_elapsed", "nan"),
            "any",
        ),
    ]
    return cases


def truncation_cases() -> list[Case]:
    """Every sample type cut at a few points (the .ncu-rep at many: see test_truncation.py)."""
    cases: list[Case] = []
    fractions = (0.001, 0.25, 0.5, 0.9, 0.999)
    for frac in fractions:
        cases.append(Case(f"cut-sqlite-{frac}", f"nsys .sqlite cut at {frac:.1%}", cut(NSYS_SQLITE, frac)))
        cases.append(Case(f"cut-json.gz-{frac}", f"Kineto .json.gz cut at {frac:.1%}", cut(KINETO_GZ, frac)))
        cases.append(Case(f"cut-json-{frac}", f"Kineto .json cut at {frac:.1%}", cut_plain_kineto(frac)))
        # a CSV cut at a row boundary is indistinguishable from a shorter export: "any" at a boundary
        cases.append(Case(f"cut-raw.csv-{frac}", f"ncu raw CSV cut at {frac:.1%}", cut(NCU_RAW_CSV, frac)))
        cases.append(
            Case(f"cut-details.csv-{frac}", f"ncu details CSV cut at {frac:.1%}", cut(NCU_DETAILS_CSV, frac))
        )
    cases.append(Case("cut-nsys-rep-0.5", ".nsys-rep cut at 50%", cut(NSYS_REP, 0.5)))
    return cases
