"""Snapshot ``kprof diagnose --json`` of every profile in the repo and the corpus, to check a change is neutral.

    python benchmarks/snapshot.py OUT_DIR [--jobs N] [--only REGEX]
    python benchmarks/snapshot.py --diff OLD_DIR NEW_DIR

One subprocess per file (``kprof diagnose FILE --json``, cache off), its stdout, stderr and exit code kept as
``OUT_DIR/<path with / as __>.txt``. ``--diff`` lists the files whose output changed (exit 1 if any) and the
count that are byte-identical. Moving code (issue 25) and speeding it up (issue 26) must leave every file
identical; a judgement change shows here as the list of files it touched.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
SUFFIXES = (".ncu-rep", ".ncu-rep.gz", ".sqlite", ".sqlite.gz", ".json.gz", ".csv", ".csv.gz", ".json")
SKIP_NAMES = {"labels.json", "manifest.json", "versions.json", "package.json"}


def profiles() -> list[Path]:
    roots = [REPO / "data" / "samples", REPO / "data" / "validation", CORPUS]
    out: list[Path] = []
    for root in roots:
        if not root.is_dir():
            continue
        for p in sorted(root.rglob("*")):
            if not p.is_file() or p.name in SKIP_NAMES or "workloads" in p.parts:
                continue
            if p.name.endswith(SUFFIXES):
                out.append(p)
    return out


def key(p: Path) -> str:
    try:
        rel = p.relative_to(REPO)
    except ValueError:
        rel = Path("corpus") / p.relative_to(CORPUS)
    return str(rel).replace("/", "__") + ".txt"


def run_one(p: Path, out: Path) -> None:
    env = dict(os.environ, KPROF_CACHE="0", COLUMNS="100")
    r = subprocess.run(
        [sys.executable, "-m", "kprof", "diagnose", str(p), "--json"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=600,
    )
    text = f"rc={r.returncode}\n--stdout\n{r.stdout}\n--stderr\n{r.stderr}"
    # the checkout's own path is not part of a diagnosis: worktrees at other paths compare equal
    (out / key(p)).write_text(text.replace(str(REPO), "$REPO"))


def diff(old: Path, new: Path) -> int:
    a = {p.name: p.read_bytes() for p in old.glob("*.txt")}
    b = {p.name: p.read_bytes() for p in new.glob("*.txt")}
    same = sorted(k for k in a if k in b and a[k] == b[k])
    changed = sorted(k for k in a if k in b and a[k] != b[k])
    only_old = sorted(set(a) - set(b))
    only_new = sorted(set(b) - set(a))
    for k in changed:
        print(f"changed  {k}")
    for k in only_old:
        print(f"missing  {k}")
    for k in only_new:
        print(f"new      {k}")
    print(f"{len(same)} identical, {len(changed)} changed, {len(only_old)} missing, {len(only_new)} new")
    return 1 if changed or only_old else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default=None, help="regex over the file path")
    ap.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"))
    a = ap.parse_args()
    if a.diff:
        return diff(Path(a.diff[0]), Path(a.diff[1]))
    if not a.out:
        ap.error("give OUT_DIR or --diff OLD NEW")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    files = [p for p in profiles() if not a.only or re.search(a.only, str(p))]
    with ThreadPoolExecutor(a.jobs) as ex:
        for i, _ in enumerate(ex.map(lambda p: run_one(p, out), files), 1):
            if i % 20 == 0:
                print(f"{i}/{len(files)}", file=sys.stderr)
    print(f"{len(files)} files -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
