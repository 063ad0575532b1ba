"""The report's inputs: the shipped samples, the profiles among files and folders, before/after pairs,
jobs of many ranks, and the names a report shows for them."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from kprof.errors import KprofError, KprofInputError

TIMELINE_FORMATS = ("nsys-rep", "nsys-sqlite", "kineto")

KERNEL_FORMATS = ("ncu-rep", "ncu-csv")


def samples_dir() -> Path | None:
    """The shipped sample gallery (``data/samples`` with a ``manifest.json``), or None.

    Looked up beside the package (a source checkout), then in the current directory.
    """
    here = Path(__file__).resolve().parents[2] / "data" / "samples"
    for d in (here, Path.cwd() / "data" / "samples"):
        if (d / "manifest.json").is_file() or (d / "ncu").is_dir() or (d / "timeline").is_dir():
            return d
    return None


def _sample_files(d: Path) -> list[Path]:
    """The files the manifest lists (or, without a manifest, those under ``ncu/`` and ``timeline/``)."""
    m = d / "manifest.json"
    if m.is_file():
        data = json.loads(m.read_text(encoding="utf-8"))
        entries = data["files"] if isinstance(data, dict) and "files" in data else data
        return [d / str(e["file"]) for e in entries if isinstance(e, dict) and e.get("file")]
    return sorted(p for sub in ("timeline", "ncu") for p in (d / sub).glob("*") if p.is_file())


def sample_paths(stage: str | None = None) -> list[str]:
    """The sample files ``kprof report`` runs on when given no paths.

    One file per timeline sample (the nsys ``.sqlite`` export when there is one, which
    needs no nsys to read, else the ``.nsys-rep``, else the PyTorch trace) and every
    ``.ncu-rep`` report. ``stage`` (``"timeline"`` or ``"kernel"``) keeps only that stage's files.

    Raises
    ------
    KprofError
        When no sample gallery is found.
    """
    d = samples_dir()
    if d is None:
        raise KprofError(
            "no sample gallery found (data/samples beside the package or in the current directory); "
            "pass the profiles to report on: kprof report PATH ..."
        )
    timelines, kernels = profiles_among(_sample_files(d), csv=False)
    if stage == "timeline":
        return timelines
    if stage == "kernel":
        return kernels
    return timelines + kernels


_CAPTURE_SUFFIXES = (".nsys-rep", ".qdrep", ".sqlite", ".pt.trace.json", ".json")

_REPORT_SUFFIXES = (".ncu-rep", ".raw.csv", ".details.csv", ".csv")


def _strip(name: str, suffixes: Sequence[str]) -> str:
    name = name.removesuffix(".gz")
    for suffix in suffixes:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def profiles_among(
    files: Iterable[str | os.PathLike[str]], *, csv: bool = True
) -> tuple[list[str], list[str]]:
    """The profiles among ``files`` (others are skipped): ``(timelines, kernel reports)``, sorted.

    One file per timeline capture: the nsys ``.sqlite`` export when there is one (plain or
    gzip'd), which needs no nsys to read, else the ``.nsys-rep``, else the PyTorch trace. Every
    ``.ncu-rep``; with ``csv``, an ncu CSV export too unless a ``.ncu-rep`` of the same name is there.
    """
    from kprof.io import detect_format

    by_stem: dict[str, dict[str, str]] = {}
    reports: dict[str, dict[str, str]] = {}
    for f in files:
        p = Path(f)
        if not p.is_file():
            continue
        try:
            fmt = detect_format(p)
        except KprofError:
            continue
        if not _looks_like(p, fmt):
            continue
        if fmt in TIMELINE_FORMATS:
            by_stem.setdefault(str(p.parent / _strip(p.name, _CAPTURE_SUFFIXES)), {}).setdefault(fmt, str(p))
        elif fmt == "ncu-rep" or (csv and fmt in KERNEL_FORMATS):
            reports.setdefault(str(p.parent / _strip(p.name, _REPORT_SUFFIXES)), {}).setdefault(fmt, str(p))
    timelines = [
        fm.get("nsys-sqlite") or fm.get("nsys-rep") or fm["kineto"] for _, fm in sorted(by_stem.items())
    ]
    kernels = [fm.get("ncu-rep") or next(iter(fm.values())) for _, fm in sorted(reports.items())]
    return timelines, kernels


def _looks_like(p: Path, fmt: str) -> bool:
    """Whether a ``.json`` is a profiler trace and a ``.csv`` an ncu export (their suffixes are
    shared with any data file in a folder of results); the other formats are told by their suffix."""
    import gzip

    if fmt not in ("kineto", "ncu-csv"):
        return True
    try:
        with gzip.open(p, "rb") if p.name.endswith(".gz") else open(p, "rb") as f:
            head = f.read(1 << 20)
    except (OSError, EOFError):
        return False
    if fmt == "kineto":
        return b'"traceEvents"' in head
    return b"Kernel Name" in head[:8192]


def expand_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """``paths`` with each folder replaced by the profiles it holds (any depth, see :func:`profiles_among`).

    Raises
    ------
    KprofInputError
        A folder that holds no profile kprof reads.
    """
    out: list[str] = []
    for p in paths:
        s = os.fspath(p)
        if s and os.path.isdir(s):
            files = sorted(str(f) for f in Path(s).rglob("*") if f.is_file() and not f.name.startswith("."))
            timelines, kernels = profiles_among(files)
            if not timelines and not kernels:
                raise KprofInputError(
                    s,
                    "is a folder that holds no profile kprof reads (.nsys-rep, .sqlite, .json[.gz], .ncu-rep, .csv)",
                )
            out += timelines + kernels
        else:
            out.append(s)
    return out


_PAIR_NAME = re.compile(r"^(?P<stem>.*?)[_.-](?P<role>before|after)$", re.IGNORECASE)


def _stem(path: str) -> str:
    name = Path(path).name.removesuffix(".gz")  # x_before.ncu-rep.gz pairs like x_before.ncu-rep
    for suffix in (".ncu-rep", ".csv", ".nsys-rep", ".sqlite", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def find_pairs(paths: Sequence[str]) -> list[tuple[str, str]]:
    """Before/after pairs among ``paths``: files named ``X_before.*`` and ``X_after.*`` (same folder).

    Examples
    --------
    >>> find_pairs(["a/t_before.ncu-rep", "a/t_after.ncu-rep", "a/other.ncu-rep"])
    [('a/t_before.ncu-rep', 'a/t_after.ncu-rep')]
    >>> find_pairs(["a/t_before.ncu-rep.gz", "a/t_after.ncu-rep.gz"])
    [('a/t_before.ncu-rep.gz', 'a/t_after.ncu-rep.gz')]
    """
    roles: dict[tuple[str, str], dict[str, str]] = {}
    for p in paths:
        m = _PAIR_NAME.match(_stem(p))
        if m:
            roles.setdefault((str(Path(p).parent), m["stem"]), {})[m["role"].lower()] = p
    return [(r["before"], r["after"]) for r in roles.values() if "before" in r and "after" in r]


@dataclasses.dataclass(frozen=True, slots=True)
class Inputs:
    """The report's inputs, sorted by stage.

    ``timelines`` are single captures; ``jobs`` are groups of captures that are ranks of one
    job (:func:`kprof.jobs.find_jobs`); ``pairs`` are before/after pairs among all inputs.
    """

    timelines: tuple[str, ...]
    kernels: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    jobs: tuple[tuple[str, ...], ...] = ()

    def stages(self) -> list[str]:
        """The notebooks to run, in the workflow's order: timelines (single captures, then
        jobs), kernels, mechanisms, then the before/after comparisons."""
        out = []
        if self.timelines:
            out.append("timeline")
        out += ["job" if i == 0 else f"job:{i + 1}" for i in range(len(self.jobs))]
        if self.kernels:
            out += ["kernel", "mechanism"]
        if self.pairs:
            out.append("compare")
        return out

    def renamed(self, names: dict[str, str]) -> Inputs:
        """The same inputs under other names (``names`` maps each path to its new one)."""

        def rn(p: str) -> str:
            return names[p]

        return Inputs(
            tuple(map(rn, self.timelines)),
            tuple(map(rn, self.kernels)),
            tuple((rn(a), rn(b)) for a, b in self.pairs),
            tuple(tuple(map(rn, j)) for j in self.jobs),
        )


def display_names(paths: Sequence[str]) -> dict[str, str]:
    """The names a report shows for its inputs, never an absolute path of the machine that built it.

    An input under the current directory keeps its path relative to it (as typed, and valid in the
    commands the diagnoses suggest); the others are named relative to the deepest folder they share,
    or, when they share none but the root, by their last folders (as many as keep the names apart).

    Examples
    --------
    >>> import os
    >>> display_names([os.path.abspath("data/a.sqlite"), "/srv/x/runs/b.ncu-rep"])  # doctest: +SKIP
    {'/.../data/a.sqlite': 'data/a.sqlite', '/srv/x/runs/b.ncu-rep': 'b.ncu-rep'}
    """
    cwd = os.getcwd()
    absolute = {p: os.path.abspath(p) for p in paths}
    names: dict[str, str] = {}
    outside = {p: a for p, a in absolute.items() if os.path.commonpath([cwd, a]) != cwd}
    for p, a in absolute.items():
        if p not in outside:
            names[p] = os.path.relpath(a, cwd)
    if outside:
        common = os.path.commonpath([os.path.dirname(a) for a in outside.values()])
        if os.path.dirname(common) != common:  # a shared folder below the root
            names.update({p: os.path.relpath(a, common) for p, a in outside.items()})
        else:
            taken = set(names.values())
            for depth in range(1, 64):
                tail = {p: os.path.join(*Path(a).parts[-depth:]) for p, a in outside.items()}
                if len(set(tail.values())) == len(tail) and not taken & set(tail.values()):
                    break
            names.update(tail)
    return names


def link_inputs(names: dict[str, str], folder: Path) -> None:
    """Make ``folder/<name>`` a symbolic link to each input: the notebooks run in ``folder`` and
    open the inputs by the names the report shows (the files themselves are only read)."""
    for path, name in names.items():
        link = folder / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(os.path.abspath(path))


def sort_inputs(paths: Iterable[str | os.PathLike[str]]) -> Inputs:
    """Check every path and send it to its stage (raises :class:`KprofInputError` on a bad one).

    A folder stands for the profiles it holds (:func:`expand_dirs`)."""
    from kprof.io import detect_format

    timelines: list[str] = []
    kernels: list[str] = []
    for p in expand_dirs(paths):
        fmt = detect_format(p)  # before abspath, which turns an empty path into the current folder
        ap = os.path.abspath(os.fspath(p))
        (timelines if fmt in TIMELINE_FORMATS else kernels).append(ap)
    jobs: list[list[str]] = []
    if len(timelines) >= 2:
        from kprof.jobs import find_jobs

        jobs, timelines = find_jobs(timelines)
    return Inputs(
        tuple(timelines),
        tuple(kernels),
        tuple(find_pairs([*timelines, *kernels])),
        tuple(tuple(j) for j in jobs),
    )
