"""Kernel-stage accuracy table: kprof's diagnosis of every kernel sample against the manifest.

    python benchmarks/accuracy_kernel.py [--samples data/samples] [--corpus ../shared/corpus]

For each ``ncu-*`` entry of ``data/samples/manifest.json`` it prints, as a markdown table, kprof's
primary bottleneck and verdict beside what the manifest says the sample shows, and beside them ncu's
own top rule on the same file (the rule with the largest estimated speedup, its title and estimate).
With ``--corpus`` it also lists what kprof says about the third-party reports (no ground truth there).

Exit status 1 when any sample disagrees with the manifest.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kprof.diagnose.kernel import diagnose_kernels  # noqa: E402
from kprof.io import load  # noqa: E402
from kprof.kernel_model import KernelLaunch, KernelProfile  # noqa: E402


def ncu_top_rule(k: KernelLaunch) -> str:
    """ncu's own answer: the rule with the largest estimated speedup (errors and info-only rules skipped)."""
    valid = [r for r in k.rules if r.kind != "error" and "returned an error" not in r.message]
    rules = [r for r in valid if r.speedup_estimate is not None]
    if rules:
        top = max(rules, key=lambda r: r.speedup_estimate or 0.0)
        return f"{top.name}: {top.title} ({top.speedup_estimate:.0f}%)"
    if valid:  # ncu before 2023.3 gave no estimates: its SpeedOfLight verdict is its top answer
        sol = next((r for r in valid if r.name == "SOLBottleneck"), valid[0])
        return f"{sol.name}: {sol.title} (no estimate)"
    return "(no rule results in this file)"


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def sample_rows(samples: Path) -> tuple[list[str], int]:
    manifest = json.loads((samples / "manifest.json").read_text())
    entries = manifest["files"] if isinstance(manifest, dict) else manifest
    rows = [
        "| sample | kind | manifest | kprof | match | ncu's top rule (est. speedup) |",
        "|---|---|---|---|---|---|",
    ]
    bad = 0
    for e in entries:
        if not str(e.get("kind", "")).startswith("ncu"):
            continue
        path = samples / e["file"]
        want = e["shows"]
        prof = load(path)
        assert isinstance(prof, KernelProfile)
        d = diagnose_kernels(prof)[0]
        got_b = d.bottleneck.value if d.bottleneck else "none"
        ok = got_b == want["bottleneck"] and d.verdict.value == want["verdict"]
        bad += not ok
        launch = next(k for k in prof.launches if k.id == d.subject.launch)
        rows.append(
            f"| {e['file']} | {e['kind']} | {want['bottleneck']} / {want['verdict']} | {got_b} / {d.verdict.value} "
            f"| {'yes' if ok else '**NO**'} | {_cell(ncu_top_rule(launch))} |"
        )
    rows.append("")
    rows.append(f"{len(rows) - 3 - bad} of {len(rows) - 3} kernel samples agree with the manifest.")
    return rows, bad


def corpus_rows(corpus: Path) -> list[str]:
    rows = [
        "| report | launch | kprof | confidence | ncu's top rule (est. speedup) |",
        "|---|---|---|---|---|",
    ]
    for path in sorted(corpus.glob("ESMM-Research/*")):
        if path.suffix not in (".ncu-rep", ".csv"):
            continue
        prof = load(path)
        assert isinstance(prof, KernelProfile)
        by_id = {k.id: k for k in prof.launches}
        for d in sorted(diagnose_kernels(prof), key=lambda d: d.subject.launch or 0):
            k = by_id[d.subject.launch or 0]
            b = d.bottleneck.value if d.bottleneck else "none"
            rows.append(
                f"| {path.name} | #{k.id} {_cell(k.name)} | {b} / {d.verdict.value} | {d.confidence.value:.2f} "
                f"| {_cell(ncu_top_rule(k))} |"
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=Path, default=REPO / "data" / "samples")
    ap.add_argument(
        "--corpus", type=Path, default=None, help="also list the third-party corpus (../shared/corpus)"
    )
    args = ap.parse_args(argv)
    rows, bad = sample_rows(args.samples)
    print("\n".join(rows))
    if args.corpus is not None:
        print()
        print("\n".join(corpus_rows(args.corpus)))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
