"""The SASS idioms of source constructs (kprof.facts.constructs): each recogniser on a listing of its construct, built
in code from the instructions and per-PC counters that define it, and on listings of other constructs with the same
instructions, where it must not fire (a compile-time division, a pointer bump, 64-bit math on loaded data, half
loaded and widened once, a fast-path sinf, a data condition, a store-free loop, a read-only load)."""

from __future__ import annotations

from collections.abc import Sequence

from kprof import thresholds as th
from kprof.facts.constructs import Construct, constructs
from kprof.kernel_model import KernelLaunch, SassLine
from kprof.knowledge import constructs as kc

Row = tuple  # (text, line, executed[, extra per-PC counters])
H200 = {"multiprocessor_count": 132, "max_registers_per_block": 65536, "max_registers_per_thread": 255}


def launch(rows: Sequence[Row], *, block: int = 256, regs: int = 32, cc: str | None = "9.0") -> KernelLaunch:
    """A launch whose SASS is ``rows``: (text, source line, inst_executed[, counters]); pcs 16 apart from 0x1000."""
    lines = []
    for i, row in enumerate(rows):
        text, line, n = row[0], row[1], row[2]
        extra = row[3] if len(row) > 3 else {}
        counters = {"inst_executed": float(n), "thread_inst_executed": 32.0 * n, **extra}
        lines.append(SassLine(pc=0x1000 + 16 * i, text=text, file="k.cu" if line else None, line=line or None,
                              counters=counters))  # fmt: skip
    return KernelLaunch(
        id=0,
        name="k",
        grid=(1024, 1, 1),
        block=(block, 1, 1),
        registers_per_thread=regs,
        compute_capability=cc,
        device_attributes=H200,
        sass=tuple(lines),
    )


def bra(target_row: int) -> str:
    return f"BRA 0x{0x1000 + 16 * target_row:x}"


def kinds(k: KernelLaunch) -> dict[str, Construct]:
    return {x.kind: x for x in constructs(k)}


# ----------------------------------------------------------------------------- integer division
def division(
    divisor_load: str, *, per_quotient: float = 1e6, reciprocal: float = 1e4, cc: str = "9.0"
) -> KernelLaunch:
    """i % d in a loop: the reciprocal of d (once per thread), then per element IMAD.HI and its correction."""
    return launch(
        [
            (divisor_load, 18, reciprocal),  # 0
            ("IABS R10, R12", 18, reciprocal),
            ("I2F.RP R8, R10", 18, reciprocal),
            ("MUFU.RCP R8, R8", 18, reciprocal),
            ("VIADD R3, R8, 0xffffffe", 18, reciprocal),
            ("F2I.FTZ.U32.TRUNC.NTZ R3, R3", 18, reciprocal),
            ("IMAD R13, R13, R10, RZ", 18, reciprocal),
            ("IMAD.HI.U32 R2, R3, R13, R2", 18, reciprocal),
            ("IMAD.HI.U32 R16, R2, R25, RZ", 18, per_quotient),  # 8: the loop
            ("IMAD R25, R10, R16, R25", 18, per_quotient),
            ("ISETP.GT.U32.AND P4, PT, R10, R25, PT", 18, per_quotient),
            ("@!P4 IMAD.IADD R25, R25, 0x1, -R10", 18, per_quotient),
            ("ISETP.GE.U32.AND P3, PT, R25, R10, PT", 18, per_quotient),
            ("@P3 VIADD R16, R16, 0x1", 18, per_quotient),
            ("LOP3.LUT R9, R25, R16, RZ, 0x3c, !PT", 19, per_quotient),
            ("IADD3 R25, R25, 0x4, RZ", 15, per_quotient),
            ("ISETP.NE.AND P1, PT, R25, RZ, PT", 15, per_quotient),
            ("@P1 " + bra(8), 15, per_quotient),
            ("EXIT", 21, reciprocal),
        ],
        cc=cc,
    )


def test_division_by_an_argument_is_named_with_its_offset() -> None:
    x = kinds(division("LDC R12, c[0x0][0x218]"))[kc.RUNTIME_DIVISION]
    assert x.origin == "argument" and x.argument_offset == 8  # c[0x0][0x210] is the first argument on sm_90
    assert x.lines == (("k.cu", 18),)
    assert x.share > 0.5 and x.sass[:2] == ("I2F.RP", "MUFU.RCP")


def test_division_by_the_block_size_or_by_data_says_so() -> None:
    launch_dim = kinds(division("LDC R12, c[0x0][0x0]"))[kc.RUNTIME_DIVISION]
    assert launch_dim.origin == "launch" and launch_dim.launch_dim == "blockDim.x"
    loaded = kinds(division("LDG.E R12, desc[UR4][R4.64]"))[kc.RUNTIME_DIVISION]
    assert loaded.origin == "data"


def test_argument_offsets_follow_the_architecture() -> None:
    ampere = division("LDC R12, c[0x0][0x168]", cc="8.0")
    assert kinds(ampere)[kc.RUNTIME_DIVISION].argument_offset == 8  # c[0x0][0x160] on sm_70-sm_89


def test_a_compile_time_division_is_not_a_runtime_division() -> None:
    k = launch(
        [
            ("IMAD.HI.U32 R2, R3, 0x10624dd3, RZ", 18, 1e6),
            ("SHF.R.U32.HI R2, RZ, 0x6, R2", 18, 1e6),
            ("IMAD R4, R2, -0x3e8, R3", 18, 1e6),
            ("LOP3.LUT R9, R4, R2, RZ, 0x3c, !PT", 19, 1e6),
            ("ISETP.NE.AND P1, PT, R25, RZ, PT", 15, 1e6),
            ("@P1 " + bra(0), 15, 1e6),
        ]
    )
    assert kc.RUNTIME_DIVISION not in kinds(k)


def test_a_trip_count_divided_once_per_thread_is_not_the_hot_division() -> None:
    """The compiler divides a grid-stride loop's trip count once per thread, on the loop's hot line: the division's
    share counts the instructions that run as often as its quotients, not the loop that shares its line."""
    k = launch(
        [
            ("LDC R3, c[0x0][0xc]", 14, 1e4),
            ("I2F.U32.RP R6, R3", 14, 1e4),
            ("MUFU.RCP R6, R6", 14, 1e4),
            ("F2I.FTZ.U32.TRUNC.NTZ R5, R4", 14, 1e4),
            ("IMAD.HI.U32 R5, R5, R2, RZ", 14, 1e4),
            ("LOP3.LUT P2, RZ, R12, 0x7, RZ, 0xc0, !PT", 14, 1e6),  # 5: the loop
            ("@!P2 LDG.E.CONSTANT R7, desc[UR4][R6.64]", 14, 1e6),
            ("@!P2 FADD.FTZ R2, R2, R7", 14, 1e6),
            ("IADD3 R12, R3, R12, RZ", 13, 1e6),
            ("ISETP.GE.AND P2, PT, R12, UR7, PT", 13, 1e6),
            ("@!P2 " + bra(5), 13, 1e6),
        ]
    )
    x = kinds(k)[kc.RUNTIME_DIVISION]
    assert x.origin == "launch" and x.share < th.CONSTRUCT_MIN_SHARE


# ----------------------------------------------------------------------------- 64-bit indices
def test_64_bit_index_math_in_a_loop_is_named() -> None:
    k = launch(
        [
            ("LOP3.LUT R14, R26, UR7, RZ, 0xc0, !PT", 17, 1e6),  # 0
            ("IADD3 R20, P1, R27, 0x61, RZ", 17, 1e6),
            ("IMAD.X R21, RZ, RZ, R26, P1", 17, 1e6),
            ("IMAD.WIDE.U32 R16, R15, UR8, R18", 18, 1e6),
            ("IMAD R15, R15, UR9, R14", 18, 1e6),
            ("LEA R14, P1, R16, UR10, 0x2", 18, 1e6),
            ("LEA.HI.X R15, R16, UR11, R15, 0x2, P1", 18, 1e6),
            ("LDG.E.CONSTANT R14, desc[UR4][R14.64]", 18, 1e6),
            ("FADD.FTZ R3, R14, R3", 18, 1e6),
            ("IADD3 R25, P1, R25, 0x1, RZ", 16, 1e6),
            ("IADD3.X R5, RZ, R5, RZ, P1, !PT", 16, 1e6),
            ("ISETP.NE.U32.AND P1, PT, R25, R24, PT", 16, 1e6),
            ("ISETP.NE.AND.EX P1, PT, R5, R0, PT, P1", 16, 1e6),
            ("@P1 " + bra(0), 16, 1e6),
        ]
    )
    x = kinds(k)[kc.INDEX64]
    assert set(x.lines) == {("k.cu", 16), ("k.cu", 17), ("k.cu", 18)}
    assert x.share > 0.2  # 6 of 14 instructions beyond the address pair


def test_a_pointer_bump_and_address_pairs_are_32_bit_index_math() -> None:
    """A strength-reduced loop bumps its 64-bit pointer once per iteration (IADD3 + IADD3.X) for the loads it feeds,
    and each address is one LEA + LEA.HI.X: what 32-bit indices compile to."""
    k = launch(
        [
            ("LDG.E.CONSTANT R10, desc[UR10][R2.64]", 15, 1e6),  # 0
            ("LDG.E.CONSTANT R12, desc[UR10][R2.64+0x4]", 15, 1e6),
            ("IADD3 R2, P3, R2, 0x10, RZ", 14, 1e6),
            ("IADD3.X R3, RZ, R3, RZ, P3, !PT", 14, 1e6),
            ("FADD.FTZ R8, R10, R12", 19, 1e6),
            ("VIADD R9, R9, 0xfffffffc", 14, 1e6),
            ("ISETP.NE.AND P2, PT, R9, RZ, PT", 14, 1e6),
            ("@P2 " + bra(0), 14, 1e6),
            ("LEA R4, P0, R0, UR6, 0x2", 20, 1e4),
            ("LEA.HI.X R5, R0, UR7, R9, 0x2, P0", 20, 1e4),
            ("STG.E desc[UR4][R4.64], R8", 20, 1e4),
        ]
    )
    assert kc.INDEX64 not in kinds(k)


def test_64_bit_arithmetic_on_loaded_data_is_the_work_not_indices() -> None:
    """A 64-bit hash of loaded keys (IMAD.WIDE.U32 and carries on loaded values) is the algorithm's work."""
    k = launch(
        [
            ("LDG.E.64 R8, desc[UR4][R2.64]", 12, 1e6),  # 0
            ("IMAD.WIDE.U32 R10, R8, R21, RZ", 12, 1e6),
            ("IADD3 R10, P1, R10, R9, RZ", 12, 1e6),
            ("IADD3.X R11, R11, R9, RZ, P1, !PT", 12, 1e6),
            ("LOP3.LUT R12, R10, R11, RZ, 0x3c, !PT", 12, 1e6),
            ("ISETP.NE.AND P0, PT, R12, RZ, PT", 11, 1e6),
            ("@P0 " + bra(0), 11, 1e6),
        ]
    )
    assert kc.INDEX64 not in kinds(k)


# ----------------------------------------------------------------------------- half <-> float
def test_half_rounded_and_widened_every_step_is_a_round_trip() -> None:
    k = launch(
        [
            ("HADD2.F32 R6, -RZ, R6.H0_H0", 32, 1e6),  # 0
            ("HADD2.F32 R8, -RZ, R6.H1_H1", 33, 1e6),
            ("FFMA.FTZ R6, R6, R4, R5", 32, 1e6),
            ("FFMA.FTZ R9, R8, R4, R5", 33, 1e6),
            ("F2FP.F16.F32.PACK_AB R6, R9, R6", 33, 1e6),
            ("IADD3 R7, R7, -0x1, RZ", 31, 1e6),
            ("ISETP.NE.AND P1, PT, R7, RZ, PT", 31, 1e6),
            ("@P1 " + bra(0), 31, 1e6),
        ]
    )
    x = kinds(k)[kc.HALF_ROUND_TRIP]
    assert x.origin == "fp16" and x.numbers["widen"] == 2e6 and x.numbers["narrow"] == 1e6
    assert abs(x.share - 3 / 8) < 1e-9


def test_half_loaded_and_widened_once_per_use_is_not_a_round_trip() -> None:
    """half inputs read from memory and accumulated in float: each value is widened once, never rounded back."""
    k = launch(
        [
            ("LDG.E.U16.CONSTANT R6, desc[UR4][R2.64]", 20, 1e6),  # 0
            ("HADD2.F32 R6, -RZ, R6.H0_H0", 20, 1e6),
            ("FFMA.FTZ R8, R6, R6, R8", 20, 1e6),
            ("IADD3 R2, P0, R2, 0x2, RZ", 19, 1e6),
            ("ISETP.NE.AND P1, PT, R7, RZ, PT", 19, 1e6),
            ("@P1 " + bra(0), 19, 1e6),
            ("F2FP.F16.F32.PACK_AB R8, RZ, R8", 22, 1e4),
            ("STG.E.U16 desc[UR4][R4.64], R8", 22, 1e4),
        ]
    )
    assert kc.HALF_ROUND_TRIP not in kinds(k)


# ----------------------------------------------------------------------------- sinf
def sinf_kernel(slow_lanes: int) -> KernelLaunch:
    slow = 1e6 if slow_lanes else 0.0
    return launch(
        [
            ("FMUL.FTZ R0, R4, R7", 15, 1e6),  # 0
            ("FSETP.GE.FTZ.AND P1, PT, |R0|, 105615, PT", 15, 1e6),
            ("FFMA.FTZ R8, R9, -1.5707962512969970703, R0", 15, 1e6),
            ("@!P1 " + bra(8), 15, 1e6),
            (
                "LDG.E.CONSTANT R8, desc[UR6][R8.64]",
                15,
                6 * slow,
                {"thread_inst_executed": 6 * slow * slow_lanes},
            ),
            ("IMAD.WIDE.U32 R10, R8, R21, RZ", 15, 6 * slow),
            ("I2F.F64.S64 R10, R12", 15, slow, {"thread_inst_executed": slow * slow_lanes}),
            ("DMUL R10, R10, UR8", 15, slow),
            ("BSYNC B0", 15, 1e6),  # 8
            ("FFMA.FTZ R13, R8, R8, R13", 15, 1e6),
            ("ISETP.NE.AND P2, PT, R3, RZ, PT", 15, 1e6),
            ("@P2 " + bra(0), 15, 1e6),
        ]
    )


def test_sinf_above_105615_takes_the_slow_path() -> None:
    x = kinds(sinf_kernel(32))[kc.TRIG_SLOW_PATH]
    assert x.lines == (("k.cu", 15),) and x.numbers["calls"] == 1e6 and x.numbers["slow_per_call"] == 14.0
    assert "LDG.E.CONSTANT" in x.sass and "DMUL" in x.sass


def test_sinf_whose_slow_path_never_runs_is_not_named() -> None:
    assert kc.TRIG_SLOW_PATH not in kinds(sinf_kernel(0))


# ----------------------------------------------------------------------------- local memory
def test_an_indexed_array_and_a_spill_are_told_apart_by_the_address() -> None:
    k = launch(
        [
            ("LDG.E.CONSTANT R4, desc[UR4][R2.64]", 14, 1e4),  # 0: the seed of the index
            ("IMAD R4, R4, R5, 0x3c6ef35f", 22, 1e6),  # 1: the loop
            ("SHF.R.U32.HI R6, RZ, 0x1c, R4", 23, 1e6),
            ("LEA R6, R6, R1, 0x2", 34, 1e6),
            ("LDL R7, [R6]", 34, 1e6, {"memory_l2_theoretical_sectors_local": 2e7}),
            ("FADD.FTZ R0, R7, R0", 36, 1e6),
            ("STL [R1+0x40], R0", 36, 1e5, {"memory_l2_theoretical_sectors_local": 1e5}),
            ("ISETP.NE.AND P1, PT, R3, RZ, PT", 21, 1e6),
            ("@P1 " + bra(1), 21, 1e6),
        ]
    )
    found = kinds(k)
    arr, spill = found[kc.LOCAL_INDEXED_ARRAY], found[kc.REGISTER_SPILL]
    assert arr.lines == (("k.cu", 34),) and arr.origin == "data" and arr.origin_lines == (("k.cu", 14),)
    assert arr.numbers["sectors_per_request"] == 20.0
    assert spill.lines == (("k.cu", 36),) and arr.share > 0.99


# ----------------------------------------------------------------------------- predicated loads
def predicated(pred_source: str, active: float) -> KernelLaunch:
    return launch(
        [
            ("S2R R3, SR_TID.X", 7, 1e4),
            ("IMAD R12, R0, UR4, R3", 7, 1e4),
            (pred_source, 14, 1e6),  # 2: the loop
            (
                "@!P2 LDG.E.CONSTANT R7, desc[UR4][R6.64]",
                14,
                1e6,
                {
                    "thread_inst_executed_true": active * 1e6,
                    "memory_l2_theoretical_sectors_global": active * 1e6,
                    "memory_l2_theoretical_sectors_global_ideal": 1e6,
                },
            ),
            ("@!P2 FADD.FTZ R2, R2, R7", 14, 1e6),
            ("IADD3 R12, R3, R12, RZ", 13, 1e6),
            ("ISETP.GE.AND P1, PT, R12, UR7, PT", 13, 1e6),
            ("@!P1 " + bra(2), 13, 1e6),
        ]
    )


def test_a_load_predicated_off_by_the_index_is_named() -> None:
    x = kinds(predicated("LOP3.LUT P2, RZ, R12, 0x7, RZ, 0xc0, !PT", 4.0))[kc.PREDICATED_LOAD]
    assert x.origin == "lane" and x.numbers["active_lanes"] == 4.0 and x.numbers["own_sector"] == 1.0
    assert x.origin_lines[0] == ("k.cu", 14)  # where the predicate is set, before where the index comes from


def test_a_load_under_a_data_condition_is_not_an_index_condition() -> None:
    k = predicated("LDG.E.U8.CONSTANT R9, desc[UR4][R8.64]", 4.0)
    rows = list(k.sass)
    rows.insert(3, SassLine(pc=0, text="ISETP.NE.AND P2, PT, R9, RZ, PT", file="k.cu", line=14))
    k2 = launch([(s.text, s.line, s.counters.get("inst_executed", 1e6), dict(s.counters)) for s in rows])
    assert kinds(k2)[kc.PREDICATED_LOAD].origin == "data"


def test_a_load_most_lanes_run_is_not_predicated_off() -> None:
    assert kc.PREDICATED_LOAD not in kinds(predicated("LOP3.LUT P2, RZ, R12, 0x7, RZ, 0xc0, !PT", 31.0))


# ----------------------------------------------------------------------------- atomics
def atomic_loop(address_source: str, in_body: bool) -> KernelLaunch:
    """A grid-stride loop with one RED per iteration; its address set before the loop or inside it."""
    before = [] if in_body else [(address_source, 14, 1e4)]
    top = len(before)
    body = [
        *([(address_source, 14, 1e6)] if in_body else []),
        ("LDG.E.CONSTANT R3, desc[UR6][R2.64]", 14, 1e6),
        ("FMUL.FTZ R13, R4, R3", 14, 1e6),
        ("REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R6.64], R13", 14, 1e6),
        ("ISETP.GE.AND P0, PT, R0, UR8, PT", 14, 1e6),
        ("@!P0 " + bra(top), 14, 1e6),
    ]
    return launch([*before, *body])


def test_an_atomic_to_an_argument_address_in_a_loop_is_uniform() -> None:
    x = kinds(atomic_loop("LDC.64 R6, c[0x0][0x220]", in_body=False))[kc.ATOMIC_IN_LOOP]
    assert x.origin == "uniform" and x.numbers["per_iteration"] == 1.0


def test_an_atomic_whose_address_the_data_chooses_is_not_uniform() -> None:
    x = kinds(atomic_loop("LDG.E.64 R6, desc[UR6][R8.64]", in_body=True))[kc.ATOMIC_IN_LOOP]
    assert x.origin == "data"


# ----------------------------------------------------------------------------- barriers
def test_barriers_in_a_loop_count_the_values_staged_between_them() -> None:
    k = launch(
        [
            ("@!P1 LDG.E.CONSTANT R10, desc[UR10][R2.64]", 15, 1e6),  # 0
            ("@!P1 STS [UR5], R10", 15, 1e6, {"thread_inst_executed_true": 1e6 / 32}),
            ("BAR.SYNC.DEFER_BLOCKING 0x0", 16, 1e6),
            ("LDS R11, [UR5]", 19, 1e6),
            ("FADD.FTZ R11, R6, -R11", 19, 1e6),
            ("FFMA.FTZ R8, R11, R11, R8", 20, 1e6),
            ("BAR.SYNC.DEFER_BLOCKING 0x0", 22, 1e6),
            ("@P2 " + bra(0), 14, 1e6),
        ],
        block=1024,
    )
    x = kinds(k)[kc.SYNC_IN_LOOP]
    assert x.lines[:2] == (("k.cu", 16), ("k.cu", 22)) and x.origin_lines == (("k.cu", 14),)
    assert x.numbers["values_per_barrier"] == 0.5 and x.numbers["instructions_per_barrier"] == 3.0


# ----------------------------------------------------------------------------- branches
def branch(condition: list[Row]) -> KernelLaunch:
    return launch(
        [
            *condition,
            ("@P0 " + bra(len(condition) + 3), 31, 1e5, {"smsp__branch_targets_threads_divergent": 1e5,
                                                         "thread_inst_executed_true": 16e5}),
            ("FFMA.FTZ R5, R5, R2, 0.125", 31, 1e5),
            (bra(len(condition) + 4), 31, 1e5),
            ("FFMA.FTZ R5, R5, R5, -0.375", 32, 1e5),
            ("STG.E desc[UR4][R2.64], R5", 33, 1e5),
        ]
    )  # fmt: skip


def test_a_branch_on_the_lane_and_one_on_data_are_told_apart() -> None:
    lane = kinds(
        branch([("S2R R7, SR_TID.X", 27, 1e5), ("LOP3.LUT R4, R7, 0x1, RZ, 0xc0, !PT", 28, 1e5),
                ("ISETP.NE.U32.AND P0, PT, R4, 0x1, PT", 28, 1e5)])
    )  # fmt: skip
    data = kinds(
        branch(
            [
                ("LDG.E.U8.CONSTANT R6, desc[UR4][R6.64]", 25, 1e5),
                ("ISETP.NE.AND P0, PT, R6, RZ, PT", 25, 1e5),
            ]
        )
    )
    assert kc.BRANCH_ON_LANE in lane and kc.BRANCH_ON_DATA not in lane
    assert lane[kc.BRANCH_ON_LANE].origin_lines == (("k.cu", 28),)
    assert kc.BRANCH_ON_DATA in data and kc.BRANCH_ON_LANE not in data
    assert data[kc.BRANCH_ON_DATA].origin_lines == (("k.cu", 25),)


def test_a_branch_on_a_kernel_argument_is_neither() -> None:
    found = kinds(branch([("LDC R6, c[0x0][0x220]", 25, 1e5), ("ISETP.NE.AND P0, PT, R6, RZ, PT", 25, 1e5)]))
    assert kc.BRANCH_ON_LANE not in found and kc.BRANCH_ON_DATA not in found


# ----------------------------------------------------------------------------- aliasing
def alias_loop(load: str, *, store: bool = True, bump_alpha: bool = False) -> KernelLaunch:
    rows: list[Row] = [
        ("LDG.E R8, desc[UR6][R12.64]", 14, 1e6),  # 0: x[j * n + i]
        (load + " R15, desc[UR6][R4.64]", 14, 1e6),  # alpha[i]
        ("FFMA.FTZ R21, R8, R15, R17", 14, 1e6),
    ]
    if store:
        rows.append(("STG.E desc[UR6][R10.64], R21", 14, 1e6))
    rows += [
        ("IMAD.WIDE R12, R2, 0x4, R12", 14, 1e6),
        ("IMAD.WIDE R10, R2, 0x4, R10", 14, 1e6),
    ]
    if bump_alpha:
        rows.append(("IMAD.WIDE R4, R2, 0x4, R4", 14, 1e6))
    rows.append(("@P0 " + bra(0), 14, 1e6))
    return launch(rows)


def test_an_invariant_load_after_a_store_is_an_alias_reload() -> None:
    x = kinds(alias_loop("LDG.E"))[kc.ALIAS_RELOAD]
    assert x.lines == (("k.cu", 14),) and x.numbers["invariant_per_trip"] == 1.0 and x.share == 0.5


def test_no_alias_reload_for_read_only_loads_store_free_loops_or_moving_addresses() -> None:
    assert kc.ALIAS_RELOAD not in kinds(
        alias_loop("LDG.E.CONSTANT")
    )  # proved read-only: not hoisted for another reason
    assert kc.ALIAS_RELOAD not in kinds(alias_loop("LDG.E", store=False))  # nothing could alias it
    assert kc.ALIAS_RELOAD not in kinds(
        alias_loop("LDG.E", bump_alpha=True)
    )  # the address moves: not invariant


def test_no_sass_no_constructs() -> None:
    assert constructs(KernelLaunch(id=0, name="k")) == ()


def test_a_reduction_loop_needs_its_barriers() -> None:
    """s[t] += s[t + stride] per step: the shared store holds a shared load's result, so each barrier is needed."""
    k = launch(
        [
            ("LDS R2, [R4]", 14, 1e6),  # 0
            ("LDS R3, [R5]", 14, 1e6),
            ("FADD.FTZ R2, R2, R3", 14, 1e6),
            ("STS [R4], R2", 14, 1e6, {"thread_inst_executed_true": 16e6}),
            ("BAR.SYNC.DEFER_BLOCKING 0x0", 15, 1e6),
            ("SHF.R.U32.HI R6, RZ, 0x1, R6", 13, 1e6),
            ("ISETP.NE.AND P0, PT, R6, RZ, PT", 13, 1e6),
            ("@P0 " + bra(0), 13, 1e6),
        ]
    )
    assert kc.SYNC_IN_LOOP not in kinds(k)


def test_an_mma_k_loop_is_not_a_sync_loop() -> None:
    """Barriers around tiles staged for MMAs are the pipelining idiom (kprof.facts.sass_traits), not this one."""
    k = launch(
        [
            ("LDG.E.128 R8, desc[UR4][R2.64]", 37, 1e5),  # 0
            ("STS.128 [R20], R8", 37, 1e5),
            ("BAR.SYNC.DEFER_BLOCKING 0x0", 37, 1e5),
            ("LDSM.16.M88.4 R12, [R21]", 37, 1e5),
            ("HMMA.16816.F32.BF16 R24, R12, R16, R24", 37, 1e5),
            ("BAR.SYNC.DEFER_BLOCKING 0x0", 37, 1e5),
            ("@P0 " + bra(0), 36, 1e5),
        ]
    )
    assert kc.SYNC_IN_LOOP not in kinds(k)
