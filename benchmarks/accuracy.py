"""Kernel-stage confusion matrix: kprof's primary bottleneck against every label we have.

    python benchmarks/accuracy.py [--samples data/samples] [--validation data/validation]
                                  [--corpus ../shared/corpus] [--json]

Labelled kernels:

- ``data/samples/manifest.json``: each ``ncu*`` entry's ``shows`` (bottleneck and verdict);
- ``data/validation/**/labels.json``: the blind gallery's labels: ``label`` (the bottleneck id; a verdict may
  follow it), ``acceptable`` (other ids a senior engineer would accept), ``not`` (tempting wrong ids).

A diagnosis is *right* when its primary bottleneck is the label or one of the acceptable ids; anything else is
wrong, and counts as a false positive of the id that fired (``not`` hits are counted apart: those are the
tempting mistakes the labeller named). Inconclusive diagnoses (no bottleneck) count as ``inconclusive``. Corpus
files have no labels: their diagnoses are listed, never scored.

Prints, per bottleneck id: how often it fired, how often it was right, its false positives (on kernels of another
class, ``not`` hits among them), and the labelled kernels of that class it missed; then the full label x
prediction matrix and every wrong kernel. ``--json`` prints the same as one JSON object. Exit status 0.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kprof.diagnose.kernel import diagnose_kernels  # noqa: E402
from kprof.errors import KprofError  # noqa: E402
from kprof.io import load  # noqa: E402
from kprof.kernel_model import KernelProfile  # noqa: E402
from kprof.model import Bottleneck, Diagnosis  # noqa: E402

IDS = {b.value for b in Bottleneck}
INCONCLUSIVE = "inconclusive"
NCU_SUFFIXES = (".ncu-rep", ".ncu-rep.gz", ".csv", ".csv.gz")


@dataclass(slots=True)
class Case:
    """One labelled (or corpus) kernel and what kprof said."""

    source: str
    file: str
    kernel: str
    label: str | None
    acceptable: list[str] = field(default_factory=list)
    not_ids: list[str] = field(default_factory=list)
    label_verdict: str | None = None
    acceptable_verdicts: dict[str, list[str]] = field(default_factory=dict)
    predicted: str = INCONCLUSIVE
    not_findings: list[str] = field(default_factory=list)
    """Secondary findings whose id the labeller listed under ``not``."""
    verdict: str = ""
    confidence: float = 0.0
    headline: str = ""
    error: str = ""

    @property
    def scored(self) -> bool:
        return self.label is not None

    @property
    def right(self) -> bool:
        return self.predicted == self.label or self.predicted in self.acceptable

    @property
    def verdict_right(self) -> bool | None:
        """The verdict labelled for the id kprof named (the label's, or an acceptable id's), None if unlabelled."""
        want = list(self.acceptable_verdicts.get(self.predicted, []))
        if self.predicted == self.label and self.label_verdict:
            want.append(self.label_verdict)
        if not want:
            return None
        return self.verdict in want


# ----------------------------------------------------------------------------- labels
def _ids(v: Any) -> list[str]:
    """Bottleneck ids in a label value: a string (``"dram_bandwidth_bound (healthy)"``) or a list of them."""
    if v is None:
        return []
    items = v if isinstance(v, list | tuple) else [v]
    out: list[str] = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("id") or item.get("bottleneck") or item.get("label") or ""
        for tok in re.findall(r"[a-z0-9_]+", str(item).lower()):
            if tok in IDS or tok == INCONCLUSIVE:
                out.append(tok)
                break
    return out


def _verdict(v: Any) -> str | None:
    if isinstance(v, dict):
        v = v.get("verdict")
    m = re.search(r"\b(fix|healthy|inconclusive)\b", str(v or "").lower())
    return m.group(1) if m else None


def _label_entries(labels: Any) -> Iterator[dict[str, Any]]:
    """Entries of a labels.json: a list of dicts, or a dict keyed by file name (or holding such a list)."""
    if isinstance(labels, list):
        yield from (e for e in labels if isinstance(e, dict))
        return
    if not isinstance(labels, dict):
        return
    for key in ("kernels", "files", "labels", "entries", "reports"):
        if isinstance(labels.get(key), list):
            yield from (e for e in labels[key] if isinstance(e, dict))
            return
    for name, e in labels.items():
        if isinstance(e, dict) and any(k in e for k in ("label", "bottleneck")):
            yield {"file": name, **e}


def _entry_file(e: dict[str, Any]) -> str | None:
    for key in ("file", "report", "path", "profile", "name"):
        v = e.get(key)
        if isinstance(v, str) and v:
            return v
    return None


def _find_report(folder: Path, name: str) -> Path | None:
    for cand in (folder / name, *(folder / (name + s) for s in NCU_SUFFIXES)):
        if cand.is_file():
            return cand
    hits = [p for p in folder.rglob(Path(name).name + "*") if p.is_file() and p.name.endswith(NCU_SUFFIXES)]
    return hits[0] if hits else None


# ----------------------------------------------------------------------------- diagnosis
def _diagnose(path: Path) -> tuple[KernelProfile | None, list[Diagnosis], str]:
    try:
        prof = load(path)
    except KprofError as exc:
        return None, [], str(exc)
    if not isinstance(prof, KernelProfile):
        return None, [], f"{path}: not a kernel profile"
    return prof, diagnose_kernels(prof), ""


def _pick(diags: list[Diagnosis], kernel: str | None) -> Diagnosis | None:
    """The diagnosis of the labelled kernel: by name (substring or regex) when given, else the first (most
    important) one."""
    if not diags:
        return None
    if kernel and len(diags) > 1:
        words = re.findall(r"\w{4,}", kernel)  # "elementwise (vectorized_elementwise_kernel)" names words
        for d in diags:
            name = d.subject.name or ""
            try:
                hit = bool(re.search(kernel, name))
            except re.error:
                hit = False
            if hit or kernel in name or any(w in name for w in words):
                return d
    return diags[0]


def _fill(case: Case, d: Diagnosis | None, error: str = "") -> Case:
    if d is None:
        case.error = error or "no kernel in the report"
        return case
    case.predicted = d.bottleneck.value if d.bottleneck else INCONCLUSIVE
    case.not_findings = sorted({f.bottleneck.value for f in d.findings} & set(case.not_ids))
    case.verdict = d.verdict.value
    case.confidence = round(d.confidence.value, 2)
    case.headline = d.headline
    case.kernel = case.kernel or d.subject.name
    return case


def sample_cases(samples: Path) -> list[Case]:
    manifest = samples / "manifest.json"
    if not manifest.exists():
        return []
    data = json.loads(manifest.read_text())
    entries = data["files"] if isinstance(data, dict) else data
    out = []
    for e in entries:
        if not str(e.get("kind", "")).startswith("ncu"):
            continue
        shows = e.get("shows") or {}
        case = Case(
            source="samples",
            file=e["file"],
            kernel="",
            label=shows.get("bottleneck"),
            label_verdict=shows.get("verdict"),
        )
        _, diags, err = _diagnose(samples / e["file"])
        out.append(_fill(case, _pick(diags, None), err))
    return out


def validation_cases(validation: Path) -> list[Case]:
    if not validation.is_dir():
        return []
    out = []
    for labels_path in sorted(validation.rglob("labels.json")):
        folder = labels_path.parent
        labels = json.loads(labels_path.read_text())
        cache: dict[Path, tuple[list[Diagnosis], str]] = {}
        for e in _label_entries(labels):
            name = _entry_file(e)
            kind = str(e.get("kind") or "")
            if (
                name is None
                or (kind and not kind.startswith("ncu"))
                or (not kind and not name.endswith(NCU_SUFFIXES))
            ):
                continue  # the timeline gallery's labels (nsys, Kineto) are scored by the timeline stage
            label = _ids(e.get("label", e.get("bottleneck")))
            if name is None or not label:
                continue
            case = Case(
                source=str(folder.relative_to(validation.parent)),
                file=name,
                kernel=str(e.get("subject") or e.get("kernel") or ""),
                label=label[0],
                acceptable=_ids(e.get("acceptable")),
                not_ids=_ids(e.get("not")),
                label_verdict=_verdict(e.get("verdict") or e.get("label")),
            )
            for a in e.get("acceptable") or []:
                ids, v = _ids(a), _verdict(a)
                if ids and v:
                    case.acceptable_verdicts.setdefault(ids[0], []).append(v)
            report = _find_report(folder, name)
            if report is None:
                case.error = f"report {name} not found under {folder}"
                out.append(case)
                continue
            if report not in cache:
                _, diags, err = _diagnose(report)
                cache[report] = (diags, err)
            diags, err = cache[report]
            out.append(_fill(case, _pick(diags, case.kernel or None), err))
    return out


def corpus_cases(corpus: Path) -> list[Case]:
    out = []
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name.endswith(NCU_SUFFIXES)):
        _, diags, err = _diagnose(path)
        if err:
            out.append(
                Case(source="corpus", file=str(path.relative_to(corpus)), kernel="", label=None, error=err)
            )
        for d in sorted(diags, key=lambda d: d.subject.launch or 0):
            out.append(
                _fill(
                    Case(
                        source="corpus", file=str(path.relative_to(corpus)), kernel=d.subject.name, label=None
                    ),
                    d,
                )
            )
    return out


# ----------------------------------------------------------------------------- scoring
def confusion(cases: Iterable[Case]) -> dict[str, Any]:
    """Per-id counts and the label x prediction matrix over the scored cases."""
    scored = [c for c in cases if c.scored and not c.error]
    per: dict[str, dict[str, int]] = defaultdict(
        lambda: {
            "fired": 0,
            "right": 0,
            "false_positive": 0,
            "false_positive_on_not": 0,
            "labelled": 0,
            "missed": 0,
        }
    )
    matrix: dict[str, Counter[str]] = defaultdict(Counter)
    for c in scored:
        assert c.label is not None
        matrix[c.label][c.predicted] += 1
        per[c.label]["labelled"] += 1
        if not c.right:
            per[c.label]["missed"] += 1
        p = per[c.predicted]
        p["fired"] += 1
        if c.right:
            p["right"] += 1
        else:
            p["false_positive"] += 1
            if c.predicted in c.not_ids:
                p["false_positive_on_not"] += 1
    right = sum(c.right for c in scored)
    verdicts = [c for c in scored if c.right and c.verdict_right is not None]
    return {
        "per_bottleneck": {k: dict(v) for k, v in sorted(per.items())},
        "matrix": {k: dict(v) for k, v in sorted(matrix.items())},
        "totals": {
            "scored": len(scored),
            "right": right,
            "accuracy": round(right / len(scored), 3) if scored else None,
            "verdict_checked": len(verdicts),
            "verdict_right": sum(bool(c.verdict_right) for c in verdicts),
            "findings_on_not": sum(len(c.not_findings) for c in scored),
            "by_source": {
                s: {
                    "scored": sum(1 for c in scored if c.source == s),
                    "right": sum(c.right for c in scored if c.source == s),
                }
                for s in sorted({c.source for c in scored})
            },
        },
    }


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def render(cases: list[Case], result: dict[str, Any]) -> str:
    out: list[str] = []
    t = result["totals"]
    out.append(
        f"Scored kernels: {t['scored']}, right {t['right']} ({t['accuracy']}); of the right ones with a "
        f"labelled verdict, the verdict matches on {t['verdict_right']} of {t['verdict_checked']}."
    )
    for s, v in t["by_source"].items():
        out.append(f"  {s}: {v['right']} of {v['scored']}")
    out.append(f"Secondary findings whose id the labeller listed under `not`: {t['findings_on_not']}")
    out.append("")
    rows = [["bottleneck id", "fired", "right", "false pos.", "of which `not`", "labelled", "missed"]]
    for k, v in result["per_bottleneck"].items():
        rows.append(
            [
                k,
                *(
                    str(v[x])
                    for x in (
                        "fired",
                        "right",
                        "false_positive",
                        "false_positive_on_not",
                        "labelled",
                        "missed",
                    )
                ),
            ]
        )
    out.append(_table(rows))
    out.append("")
    preds = sorted({p for row in result["matrix"].values() for p in row})
    rows = [["label \\ kprof", *preds]]
    for label, row in result["matrix"].items():
        rows.append([label, *(str(row.get(p, "")) for p in preds)])
    out.append(_table(rows))
    wrong = [
        c
        for c in cases
        if c.scored and (c.error or not c.right or c.verdict_right is False or c.not_findings)
    ]
    if wrong:
        out.append("")
        out.append("Wrong or failed:")
        for c in wrong:
            what = c.error or f"kprof {c.predicted}/{c.verdict} ({c.confidence:.2f}): {c.headline[:110]}"
            acc = f" (acceptable: {', '.join(c.acceptable)})" if c.acceptable else ""
            tag = (
                "WRONG"
                if c.error or not c.right
                else "verdict"
                if c.verdict_right is False
                else "not-finding"
            )
            if c.not_findings:
                what += f" [findings on the `not` list: {', '.join(c.not_findings)}]"
            out.append(
                f"  [{tag}] {c.source}/{c.file} [{c.kernel[:40]}]: label {c.label}/{c.label_verdict}{acc}; {what}"
            )
    unscored = [c for c in cases if not c.scored]
    if unscored:
        out.append("")
        out.append("Not scored (no label):")
        for c in unscored:
            out.append(
                f"  {c.source}/{c.file} [{c.kernel[:40]}]: "
                + (c.error or f"{c.predicted}/{c.verdict} ({c.confidence:.2f})")
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--samples", type=Path, default=REPO / "data" / "samples")
    ap.add_argument("--validation", type=Path, default=REPO / "data" / "validation")
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = ap.parse_args(argv)
    cases = sample_cases(args.samples) + validation_cases(args.validation)
    if args.corpus.is_dir():
        cases += corpus_cases(args.corpus)
    result = confusion(cases)
    if args.json:
        print(json.dumps({**result, "kernels": [asdict(c) for c in cases]}, indent=1))
    else:
        print(render(cases, result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
