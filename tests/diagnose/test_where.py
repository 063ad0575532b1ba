"""Source lines responsible for a bottleneck (kprof/diagnose/where.py), on real samples and synthetic SASS.

The expected lines of the samples were read from their sources (data/samples/workloads/kernels), not from
kprof's output; the gallery's expected lines come from its blind labels (data/validation/*/labels.json).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import kprof
from kprof.diagnose.kernel import diagnose_kernels
from kprof.diagnose.where import attribute
from kprof.kernel_model import KernelLaunch, SassLine
from kprof.model import Bottleneck, Diagnosis, Verdict

B = Bottleneck
REPO = Path(__file__).resolve().parents[2]
NCU = REPO / "data" / "samples" / "ncu"
VALIDATION = REPO / "data" / "validation"


def _diagnose(name: str) -> Diagnosis:
    path = NCU / name
    if not path.exists():
        pytest.skip(f"sample {path} missing")
    (d,) = diagnose_kernels(kprof.load(str(path)))
    return d


# (sample, bottleneck the sample was built to show, the line its source says is responsible, a snippet of it)
SAMPLE_LINES = [
    ("long_kernel_one_line.ncu-rep.gz", B.UNCOALESCED_GLOBAL_ACCESS, 22, "pos_t[(long)col * rows + row]"),
    ("triton_fp32_ieee_dot.ncu-rep.gz", B.NO_TENSOR_CORES, 39, 'input_precision="ieee"'),
    ("uncoalesced_global_access.ncu-rep.gz", B.UNCOALESCED_GLOBAL_ACCESS, 7, "in[i * stride]"),
    ("pair_transpose_before.ncu-rep.gz", B.UNCOALESCED_GLOBAL_ACCESS, 17, "out[(long)x * n + (y + j)]"),
    ("shared_bank_conflicts.ncu-rep.gz", B.SHARED_BANK_CONFLICTS, 19, "tile[lane][c]"),
    ("pair_smem_column_sum_before.ncu-rep.gz", B.SHARED_BANK_CONFLICTS, 13, "tile[tx][ty] ="),
    ("local_memory_spill.ncu-rep.gz", B.LOCAL_MEMORY_SPILL, 19, "table[j]"),
    ("atomic_contention.ncu-rep.gz", B.ATOMIC_CONTENTION, 5, "atomicAdd(&sums[i & 3]"),
    ("warp_divergence.ncu-rep.gz", B.WARP_DIVERGENCE, 9, "switch (threadIdx.x % 8)"),
    ("no_tensor_cores.ncu-rep.gz", B.NO_TENSOR_CORES, 17, "As[ty][k] * Bs[k][tx]"),
    ("occupancy_limited.ncu-rep.gz", B.OCCUPANCY_LIMITED, 13, "in[i] * table[i % LUT]"),
]


@pytest.mark.parametrize(
    ("sample", "bottleneck", "line", "snippet"), SAMPLE_LINES, ids=[s[0] for s in SAMPLE_LINES]
)
def test_every_mechanism_diagnosis_of_a_sample_with_source_names_its_line(
    sample: str, bottleneck: Bottleneck, line: int, snippet: str
) -> None:
    d = _diagnose(sample)
    assert d.bottleneck is bottleneck and d.verdict is Verdict.FIX
    assert d.where, "a mechanism diagnosis of a report with source names the lines"
    top = d.where[0]
    assert top.line == line, [w.describe() for w in d.where]
    assert snippet in top.text
    assert top.share is not None and top.share > 0.35
    assert top.instruction  # the SASS instruction at fault
    assert f"line {line}" in d.mechanism.lower()  # the mechanism names the line too
    assert not d.where_note  # source present: nothing to ask for


def test_long_kernel_all_excess_on_the_one_line() -> None:
    d = _diagnose("long_kernel_one_line.ncu-rep.gz")
    (w,) = d.where  # the other loads are coalesced: only one line carries excess sectors
    assert w.share == 1.0 and w.value == 14_680_064  # the sample's README: all 14.68 M excessive sectors
    assert w.instruction.startswith("LDG") and "32 sectors per request, ideal 4" in w.detail
    assert w.file.endswith("long_kernel_one_line.cu")


def test_triton_dot_line_carries_all_ffma() -> None:
    d = _diagnose("triton_fp32_ieee_dot.ncu-rep.gz")
    (w,) = d.where
    assert w.file.endswith("triton_fp32_ieee_dot.py") and w.instruction == "FFMA" and w.share == 1.0


def test_host_bottleneck_names_no_kernel_line_and_says_why() -> None:
    d = _diagnose("small_grid.ncu-rep.gz")
    assert d.bottleneck is B.SMALL_GRID and d.where == ()
    assert "host code" in d.where_note


def test_pytorch_kernel_without_line_info_names_the_instruction_and_how_to_get_the_call_site() -> None:
    d = _diagnose("torch_permute_copy.ncu-rep.gz")
    assert d.bottleneck is B.UNCOALESCED_GLOBAL_ACCESS
    (w,) = d.where  # both LDG.E paths of the copy grouped as one opcode
    assert w.file is None and w.line is None and w.pc is not None and w.instruction == "LDG.E"
    assert w.location.startswith("SASS +0x") and w.share == 1.0
    assert "--call-stack-type python" in d.where_note


def test_findings_carry_their_own_lines() -> None:
    d = _diagnose("triton_fp32_ieee_dot.ncu-rep.gz")
    for f in d.findings:
        if f.bottleneck is B.INSTRUCTION_BOUND:
            # overhead (index math, loop control, waits) sits on the loop lines, not on the FFMA line of the dot
            assert f.where and f.where[0].line != 39 and f.where[0].instruction not in ("FFMA", "FFMA.FTZ")


def test_json_round_trip_keeps_the_lines() -> None:
    d = _diagnose("long_kernel_one_line.ncu-rep.gz")
    back = Diagnosis.from_dict(json.loads(json.dumps(d.to_dict())))
    assert back == d
    assert back.to_dict()["where"][0]["line"] == 22


def test_text_and_html_show_the_lines() -> None:
    d = _diagnose("long_kernel_one_line.ncu-rep.gz")
    text = d.to_text()
    assert "where:" in text and "long_kernel_one_line.cu:22" in text and "LDG.E.CONSTANT" in text
    html = d.to_html()
    assert "kp-where" in html and "long_kernel_one_line.cu:22" in html
    assert "pos_t[(long)col * rows + row]" in html


# ------------------------------------------------------------------------------------ the blind gallery
def _gallery() -> list[tuple[str, dict]]:
    out = []
    for group in ("cuda", "lib", "heldout"):
        p = VALIDATION / group / "labels.json"
        if not p.exists():
            continue
        for e in json.loads(p.read_text())["entries"]:
            if e["where"] and e["file"].endswith(".ncu-rep.gz"):
                out.append((group, e))
    return out


GALLERY = _gallery()


@pytest.mark.parametrize(("group", "entry"), GALLERY, ids=[e["id"] for _, e in GALLERY])
def test_gallery_labelled_lines(group: str, entry: dict) -> None:
    """The first line named for the label's bottleneck is one the blind labeller named (lines in host code,
    such as a Triton launch configuration, cannot be in a kernel report; one of the others must be first)."""
    path = VALIDATION / group / entry["file"]
    launches = [k for k in kprof.load(str(path)) if re.search(entry["subject"], k.display_name)]
    a = attribute(launches[-1], B(entry["label"]["bottleneck"]))
    assert a.lines, a.note
    wanted = {(w["file"], w["line"]) for w in entry["where"]}
    top = a.lines[0]
    assert (top.file.replace("\\", "/").rsplit("/", 1)[-1], top.line) in wanted, [
        w.describe() for w in a.lines
    ]


# ------------------------------------------------------------------------------------ synthetic SASS
def _k(*lines: SassLine, sources: dict[str, str] | None = None) -> KernelLaunch:
    return KernelLaunch(id=0, name="k", sass=lines, source_files=sources or {})


def test_stall_waiting_on_a_load_is_charged_to_the_load() -> None:
    """The FFMA that first uses a loaded value collects the long_scoreboard samples; the load is at fault."""
    k = _k(
        SassLine(
            pc=0, text="LDG.E R2, desc[UR4][R4.64]", file="k.cu", line=10, counters={"inst_executed": 8}
        ),
        SassLine(pc=16, text="IADD3 R9, R9, 0x1, RZ", file="k.cu", line=11, counters={"inst_executed": 8}),
        SassLine(
            pc=32,
            text="FFMA R6, R2, R3, R6",
            file="k.cu",
            line=12,
            counters={
                "inst_executed": 8,
                "smsp__pcsamp_warps_issue_stalled_long_scoreboard": 900,
                "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued": 880,
                "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle": 100,
            },
        ),
    )
    a = attribute(k, B.LATENCY_BOUND)
    assert a.total == 1000  # *_not_issued is a subset of its reason, not another 880 samples
    assert [(w.line, w.share) for w in a.lines] == [(10, 0.9)]  # lines are named until they carry 90%
    assert a.lines[0].instruction == "LDG.E" and "long_scoreboard" in a.lines[0].detail


def test_two_loads_in_flight_share_the_wait_but_an_old_one_does_not() -> None:
    k = _k(
        SassLine(pc=0, text="LDG.E R7, desc[UR4][R2.64]", file="k.cu", line=1, counters={"inst_executed": 1}),
        *(SassLine(pc=16 * i, text="IADD3 R9, R9, 0x1, RZ", file="k.cu", line=2) for i in range(1, 20)),
        SassLine(
            pc=320, text="LDG.E R10, desc[UR4][R4.64]", file="k.cu", line=3, counters={"inst_executed": 1}
        ),
        SassLine(
            pc=336, text="LDG.E R11, desc[UR4][R12.64]", file="k.cu", line=4, counters={"inst_executed": 1}
        ),
        SassLine(
            pc=352,
            text="ISETP.NE.AND P1, PT, R10, R7, PT",
            file="k.cu",
            line=5,
            counters={"smsp__pcsamp_warps_issue_stalled_long_scoreboard": 100},
        ),
        SassLine(
            pc=368,
            text="FADD R13, R11, R10",
            file="k.cu",
            line=6,
            counters={"smsp__pcsamp_warps_issue_stalled_long_scoreboard": 100},
        ),
    )
    a = attribute(k, B.LATENCY_BOUND)
    shares = {w.line: w.share for w in a.lines}
    assert shares == {3: 0.75, 4: 0.25}  # R7 (line 1) was loaded 20 instructions earlier and has arrived


def test_divergent_branch_gets_the_idle_lanes_of_its_region() -> None:
    k = _k(
        SassLine(
            pc=0,
            text="BSSY B0, 0x60",
            file="k.cu",
            line=11,
            counters={"inst_executed": 4, "thread_inst_executed": 128},
        ),
        SassLine(
            pc=16,
            text="@P0 BRA 0x40",
            file="k.cu",
            line=11,
            counters={
                "inst_executed": 4,
                "thread_inst_executed": 128,
                "thread_inst_executed_true": 64,
                "smsp__branch_targets_threads_divergent": 4,
            },
        ),
        SassLine(
            pc=32,
            text="FFMA R1, R1, R1, R2",
            file="k.cu",
            line=13,
            counters={"inst_executed": 40, "thread_inst_executed": 640},
        ),
        SassLine(
            pc=48,
            text="FMUL R1, R1, R3",
            file="k.cu",
            line=17,
            counters={"inst_executed": 40, "thread_inst_executed": 640},
        ),
        SassLine(
            pc=96,
            text="BSYNC B0",
            file="k.cu",
            line=19,
            counters={"inst_executed": 4, "thread_inst_executed": 128},
        ),
    )
    a = attribute(k, B.WARP_DIVERGENCE)
    (w,) = a.lines
    assert w.line == 11 and w.share == 1.0 and w.instruction == "BRA"
    assert "16 of 32 lanes" in w.detail


def test_no_counters_or_no_sass_say_what_to_collect() -> None:
    bare = _k(SassLine(pc=0, text="LDG.E R2, desc[UR4][R4.64]", file="k.cu", line=3))
    assert "SourceCounters" in attribute(bare, B.UNCOALESCED_GLOBAL_ACCESS).note
    assert "--import-source yes" in attribute(KernelLaunch(id=0, name="k"), B.LATENCY_BOUND).note


def test_line_info_without_embedded_text_asks_for_import_source() -> None:
    k = _k(
        SassLine(
            pc=0,
            text="LDG.E R2, desc[UR4][R4.64]",
            file="k.cu",
            line=3,
            counters={"inst_executed": 1, "derived__memory_l2_theoretical_sectors_global_excessive": 28},
        )
    )
    a = attribute(k, B.UNCOALESCED_GLOBAL_ACCESS)
    assert a.lines[0].line == 3 and a.lines[0].text == ""
    assert "--import-source yes" in a.note
