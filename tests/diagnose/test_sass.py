"""SASS analysis on listings built in code, and on the real samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from kprof.diagnose.sass import access_bytes, analyze_sass, is_mma
from kprof.kernel_model import SassLine


def lines(
    *texts: str, counts: list[float] | None = None, src: tuple[str, int] | None = None
) -> list[SassLine]:
    out = []
    for i, t in enumerate(texts):
        c = {} if counts is None or counts[i] is None else {"inst_executed": counts[i]}
        out.append(
            SassLine(
                pc=16 * i, text=t, file=src[0] if src else None, line=src[1] if src else None, counters=c
            )
        )
    return out


@pytest.mark.parametrize(
    ("opcode", "expected"),
    [
        ("LDG.E", 4),
        ("LDG.E.128.CONSTANT", 16),
        ("LDG.E.64", 8),
        ("LDG.E.U8", 1),
        ("LDG.E.S16", 2),
        ("STS.128", 16),
        ("LDS", 4),
    ],
)
def test_access_bytes(opcode: str, expected: int) -> None:
    assert access_bytes(opcode) == expected


@pytest.mark.parametrize(
    ("mnemonic", "expected"),
    [
        ("HMMA", True),
        ("HGMMA", True),
        ("IMMA", True),
        ("QGMMA", True),
        ("UTCHMMA", True),
        ("FFMA", False),
        ("LDSM", False),
    ],
)
def test_is_mma(mnemonic: str, expected: bool) -> None:
    assert is_mma(mnemonic) is expected


def test_predicate_and_modifiers_are_parsed() -> None:
    s = SassLine(pc=0, text="@!P0 LDG.E.128.CONSTANT R4, desc[UR4][R2.64]")
    assert s.opcode == "LDG.E.128.CONSTANT"
    assert s.mnemonic == "LDG"


def test_matrix_instructions_are_found() -> None:
    s = analyze_sass(lines("HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], R24", "WARPGROUP.ARRIVE", "EXIT"))
    assert s.has_mma and s.mma == 1


def test_ffma_share_and_no_mma() -> None:
    s = analyze_sass(lines("FFMA R1, R2, R3, R1", "FFMA R1, R4, R5, R1", "LDS R2, [R6]", "FADD R1, R1, R2"))
    assert not s.has_mma
    assert s.ffma == 2 and s.fp32 == 3
    assert s.share(s.ffma) == pytest.approx(0.5)
    assert s.ffma_share_of_fp32 == pytest.approx(2 / 3)


def test_register_spill_uses_stack_pointer_offsets() -> None:
    s = analyze_sass(lines("STL [R1+0x10], R5", "LDL R5, [R1+0x10]", src=("k.cu", 12)))
    assert s.local_kind == "register_spill"
    assert s.local_loads == 1 and s.local_stores == 1
    assert s.local_lines == (("k.cu", 12),)


def test_dynamic_index_uses_a_computed_address() -> None:
    s = analyze_sass(lines("LEA R6, R3, R1, 0x2", "LDL R5, [R6]", "STL [R1+0x4], R5"))
    assert s.local_kind == "dynamic_index"


def test_no_local_memory_means_no_kind() -> None:
    assert analyze_sass(lines("LDG.E R2, [R4.64]", "EXIT")).local_kind is None


def test_executed_counts_weight_the_mix_and_unexecuted_pcs_weigh_zero() -> None:
    s = analyze_sass(lines("FFMA R1, R2, R3, R1", "LDG.E.128 R4, [R2.64]", "NOP", counts=[1000, 10, None]))
    assert s.weighted
    assert s.instructions == 1010
    assert s.ffma == 1000
    assert s.global_load_bytes_per_thread == 16
    assert "NOP" in s.by_mnemonic and s.by_mnemonic["NOP"] == 0


def test_static_counts_without_source_counters() -> None:
    s = analyze_sass(lines("FFMA R1, R2, R3, R1", "NOP"))
    assert not s.weighted and s.instructions == 2


def test_access_widths_are_weighted_means() -> None:
    s = analyze_sass(lines("LDS R1, [R2]", "LDS.128 R4, [R3]", counts=[3, 1]))
    assert s.shared_load_bytes_per_thread == pytest.approx((3 * 4 + 1 * 16) / 4)


def test_atomics_and_async_copies() -> None:
    s = analyze_sass(
        lines(
            "RED.E.ADD.F32.FTZ.RN.STRONG.GPU [R2.64], R5",
            "LDGSTS.E.128 [R1], [R2.64]",
            "ATOMS.ADD R1, [R2], R3",
        )
    )
    assert s.global_atomics == 1 and s.async_copies == 1 and s.shared_atomics == 1


def test_empty_listing() -> None:
    s = analyze_sass([])
    assert s.empty and not s.has_mma and s.local_kind is None


# ----------------------------------------------------------------------------- real samples
def _sample(samples_dir: Path, name: str):
    pytest.importorskip("ncu_report")
    from kprof.io import load

    path = samples_dir / "ncu" / f"{name}.ncu-rep.gz"
    if not path.exists():
        pytest.skip(f"{path} not in the sample gallery")
    return load(path)[0]


def test_cublas_gemm_issues_hgmma(samples_dir: Path) -> None:
    s = analyze_sass(_sample(samples_dir, "tensor_core_bound").sass)
    assert s.weighted and s.has_mma and "HGMMA" in s.by_mnemonic


def test_tiled_sgemm_is_all_ffma(samples_dir: Path) -> None:
    s = analyze_sass(_sample(samples_dir, "no_tensor_cores").sass)
    assert not s.has_mma
    assert s.share(s.ffma) > 0.25


def test_indexed_local_array_is_not_called_a_spill(samples_dir: Path) -> None:
    k = _sample(samples_dir, "local_memory_spill")
    s = analyze_sass(k.sass)
    assert s.local_kind == "dynamic_index"
    assert s.local_loads > 0 and s.local_stores > 0
    assert s.local_lines and all(f.endswith("local_memory_spill.cu") for f, _ in s.local_lines)
