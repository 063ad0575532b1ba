#!/usr/bin/env python3
"""Re-check the blind8 labels: every justification metric labels.json quotes, read back from its report.

The entries are Nsight Compute reports (.ncu-rep.gz, --set full with source). This reads them with NVIDIA's
ncu_report module (e.g. /work/main/.venv, or Nsight Compute's extras/python on PYTHONPATH); it never imports
kprof. Usage:
    python3 data/validation/blind8/measure.py [ENTRY_ID ...]
Prints, per entry: the kernel name, grid and ncu duration, then each quoted metric with the value in the file
and OK / DIFF against the label. A metric written NAME[INSTANCE] is the instance of an instanced metric (e.g.
sass__inst_executed_per_opcode[MUFU]).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import tempfile

import ncu_report

HERE = os.path.dirname(os.path.abspath(__file__))


def value(action, name: str) -> float:
    if name.endswith("]"):
        base, inst = name[:-1].split("[", 1)
        m = action.metric_by_name(base)
        ids = m.correlation_ids()
        for i in range(m.num_instances()):
            if ids.as_string(i) == inst:
                return m.as_double(i)
        raise KeyError(name)
    m = action.metric_by_name(name)
    if m is None:
        raise KeyError(name)
    return m.as_double()


def main(argv: list[str]) -> int:
    labels = json.load(open(os.path.join(HERE, "labels.json")))
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for e in labels["entries"]:
            if argv and e["id"] not in argv:
                continue
            path = os.path.join(tmp, e["id"] + ".ncu-rep")
            with gzip.open(os.path.join(HERE, e["file"])) as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
            report = ncu_report.load_report(path)
            if report.num_ranges() < 1 or report[0].num_actions() < 1:
                print(f"{e['id']}: no kernel in the report")
                bad += 1
                continue
            a = report[0][0]
            print(f"== {e['id']}: {a.name()} grid {int(value(a, 'launch__grid_size'))} x "
                  f"{int(value(a, 'launch__block_size'))}, ncu {value(a, 'gpu__time_duration.sum') / 1e3:.1f} us, "
                  f"label {e['label']['bottleneck']}/{e['label']['verdict']}")
            for j in e["justification"]:
                try:
                    v = value(a, j["metric"])
                except KeyError:
                    print(f"   MISSING {j['metric']}")
                    bad += 1
                    continue
                ok = abs(v - j["value"]) <= 1e-6 * max(1.0, abs(v))
                bad += not ok
                print(f"   {'OK  ' if ok else 'DIFF'} {j['metric']} = {v:.6g} {j['unit']} (label {j['value']})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
