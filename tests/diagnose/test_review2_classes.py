"""Classes of error the second independent review found on files no rule was written against
(docs/review/rubric_review_2.md, rows 25-28 and "Still wrong" 1, 5, 7), each fixed as a class from the counters,
the SASS and the embedded source: a test on the file that showed it, and cases where the new text must not appear.

1. A warp-shuffle atomic fix for atomics whose lanes update different, data-chosen addresses (class_sum_atomic);
   the duration target of a same-address atomic that ignored the fix's own 32x cut (sum_atomic_each).
2. Spills under the register cap of ``__launch_bounds__(1024)`` told to "lower register pressure" at the spill line.
3. A one-thread-per-row reduction told to "swap the index roles / use a structure of arrays".
4. An over-sized dynamic shared buffer told to "process the data in smaller pieces".
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path
from types import MappingProxyType

import pytest

import kprof
from kprof.diagnose.fixes.coalescing import row_walk
from kprof.diagnose.fixes.memory import launch_bounds
from kprof.diagnose.kernel import diagnose_launch
from kprof.kernel_model import KernelLaunch
from kprof.model import Diagnosis
from kprof.rules.kernel.atomics import atomic_lanes, distinct_addresses
from kprof.rules.kernel.local import register_cap

REPO = Path(__file__).resolve().parents[2]
B = kprof.Bottleneck


@cache
def _launch(rel: str) -> KernelLaunch:
    p = REPO / "data" / rel
    if not p.exists():
        pytest.skip(f"{p} is not in this checkout")
    return kprof.load(str(p))[-1]


@cache
def _diag(rel: str) -> Diagnosis:
    return diagnose_launch(_launch(rel))


def _without(k: KernelLaunch, *prefixes: str) -> KernelLaunch:
    """``k`` without the metrics whose names start with one of ``prefixes``."""
    kept = {n: m for n, m in k.metrics.items() if not n.startswith(prefixes)}
    return replace(k, metrics=MappingProxyType(kept))


def _duration_target(d: Diagnosis) -> float | None:
    return next((float(e.target) for e in d.expect if e.metric == "gpu__time_duration.sum"), None)


# ----------------------------------------------------------------------------- 1. atomics: same vs distinct addresses
CLASS_SUM = "validation/final/class_sum_atomic.ncu-rep.gz"
SUM_EACH = "validation/cuda/sum_atomic_each.ncu-rep.gz"
FOUR_BINS = "samples/ncu/atomic_contention.ncu-rep.gz"


def test_atomic_counters_tell_distinct_from_same_address() -> None:
    """class_sum_atomic: each REDG reaches the L2 as 11.7 requests of 2.05 sectors (lanes on different class
    sums); sum_atomic_each: 32 requests of one sector (all lanes on `out`); the 4-bin sample: 8 of one sector."""
    per, sectors = atomic_lanes(_launch(CLASS_SUM)) or (0.0, 0.0)
    assert 11 < per < 12.5 and 2.0 < sectors < 2.1, (per, sectors)
    assert distinct_addresses(_launch(CLASS_SUM))
    assert atomic_lanes(_launch(SUM_EACH)) == (32.0, 1.0)
    assert not distinct_addresses(_launch(SUM_EACH))
    assert not distinct_addresses(_launch(FOUR_BINS))


def test_data_dependent_atomic_is_privatized_not_warp_summed() -> None:
    """`atomicAdd(&out[label[i]], val[i])`: lanes carry different labels, so a warp shuffle sum would add values of
    different classes. The fix privatizes `out` per block in shared memory; the mechanism says why (the address
    comes from a loaded value, the lanes update different addresses)."""
    d = _diag(CLASS_SUM)
    assert d.bottleneck is B.ATOMIC_CONTENTION
    assert "__shfl_down_sync" not in d.fix and "lane 0" not in d.fix, d.fix
    assert "Privatize `out` per block on line 8" in d.fix, d.fix
    assert "atomicAdd(&s_out[label[i]], val[i]);" in d.fix, d.fix
    assert "extern __shared__ float s_out[]" in d.fix, d.fix  # the type of REDG.E.ADD.F32
    assert "ReduceByKey" in d.fix, d.fix
    assert "different addresses" in d.mechanism and "`out[label[i]]` is chosen by the data" in d.mechanism
    assert "11.7 requests of 2.05 sectors" in d.mechanism, d.mechanism
    assert "Atomics to the same address" not in d.mechanism, d.mechanism


def test_data_dependent_atomic_is_told_from_the_sass_without_the_l2_counters() -> None:
    """Without the L2 request/sector counters, the SASS alone (REDG's address register computed from an LDG's
    result) still rules out the warp sum."""
    k = _without(_launch(CLASS_SUM), "lts__t_requests_srcunit_tex_op", "lts__t_sectors_srcunit_tex_op")
    assert atomic_lanes(k) is None
    d = diagnose_launch(k)
    assert d.bottleneck is B.ATOMIC_CONTENTION
    assert "Privatize `out`" in d.fix and "__shfl_down_sync" not in d.fix, d.fix
    assert "an LDG loaded just before" in d.mechanism, d.mechanism


def test_same_address_atomic_keeps_the_warp_reduction() -> None:
    """Must stay: sum_atomic_each (`atomicAdd(out, x[i])`, one address) keeps the warp shuffle with lane 0 issuing;
    the 4-bin sample keeps its per-bin shuffle."""
    d = _diag(SUM_EACH)
    assert "__shfl_down_sync(0xffffffff, v, o)" in d.fix and "lane 0 issue the atomicAdd" in d.fix, d.fix
    assert "Privatize" not in d.fix, d.fix
    assert "32 one-sector requests" in d.mechanism, d.mechanism
    bins = _diag(FOUR_BINS)
    assert "Sum per bin inside the warp" in bins.fix and "Privatize" not in bins.fix, bins.fix


def test_same_address_atomic_time_falls_with_the_updates_it_removes() -> None:
    """sum_atomic_each: 524,288 same-address updates, applied one after another by the hot slice, take the whole
    922 µs (1.76 ns each). The warp reduction leaves 16,384: about 922/32 = 29 µs, not the 195 µs the stall share
    alone gave."""
    k, d = _launch(SUM_EACH), _diag(SUM_EACH)
    dur = k.value("gpu__time_duration.sum")
    target = _duration_target(d)
    assert dur is not None and target is not None
    assert abs(target - dur * 16384 / 524288) <= 0.05 * target, (target, dur)


def test_privatized_atomics_predict_one_request_per_line_per_block() -> None:
    """class_sum_atomic: the atomics miss L2 on 40 sectors (the 320 floats of `out`: ncu flushes L2 before each
    pass), so after privatization each of the 2,112 blocks adds 10 lines: 21,120 L2 requests, down from 12.3M.
    The duration keeps the stall-share estimate (7.45 ms -> 291 µs): the shared-memory atomics remain, so the
    time is not scaled by the count."""
    k, d = _launch(CLASS_SUM), _diag(CLASS_SUM)
    l2 = next(e for e in d.expect if e.metric == "derived:l2_atomic_requests")
    assert l2.value_now == k.value("lts__t_requests_srcunit_tex_op_red.sum") == 12320146
    assert k.value("lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum") == 40
    assert l2.target == 2112 * 10, l2
    target = _duration_target(d)
    assert target is not None and 285_000 <= target <= 297_000, target
    bare = diagnose_launch(_without(k, "lts__t_sectors_srcunit_tex_op_red_lookup_miss"))
    assert not any(e.metric == "derived:l2_atomic_requests" for e in bare.expect), bare.expect


# ----------------------------------------------------------------------------- 2. spills under a launch-bounds cap
SORT = "validation/final/sort_cols_1024.ncu-rep.gz"


def test_register_cap_by_block_size() -> None:
    """65,536 registers per SM, allocated 256 per warp, at most 255 per thread."""
    k = _launch(SORT)
    assert [register_cap(k, t) for t in (1024, 768, 512, 256, 128)] == [64, 80, 128, 255, 255]


def test_spill_under_launch_bounds_names_the_bound_and_its_line() -> None:
    """sort_cols_1024: `__launch_bounds__(1024)` on line 9 caps each thread at 64 registers (65,536 / 1024) and the
    unrolled network spills. The fix changes the bound (and the block size), not "register pressure" at line 25."""
    d = _diag(SORT)
    assert d.bottleneck is B.LOCAL_MEMORY_SPILL
    assert "Loosen the bound on line 9: declare `__launch_bounds__(256)`" in d.fix, d.fix
    assert "instead of `__launch_bounds__(1024)`" in d.fix and "up to 255 registers" in d.fix, d.fix
    assert "lower register pressure" not in d.fix.lower(), d.fix
    assert "64 registers per thread, the most a 1024-thread block can have" in d.mechanism, d.mechanism
    assert "`__launch_bounds__(1024)` on line 9" in d.mechanism, d.mechanism


def test_launch_bounds_parser_takes_the_kernels_own_bound() -> None:
    """The bound of the kernel in the report, not another kernel's; a macro bound and minBlocks are resolved."""
    from kprof.diagnose.fixes.context import Context
    from kprof.diagnose.language import kernel_origin

    k = _launch(SORT)
    src = (
        "#define T 512\n"
        "__global__ void __launch_bounds__(128) other(float* x) {}\n"
        "__global__ void __launch_bounds__(T, 2)\n"
        "sort_cols_1024(const float* in, float* out, int n) {}\n"
    )
    k2 = replace(k, source_files=MappingProxyType({"s.cu": src}))
    c = Context(k=k2, d=_diag(SORT), origin=kernel_origin(k2), where=(), sm=90)
    assert launch_bounds(c) == (3, "__global__ void __launch_bounds__(T, 2)", 512, 2)


def test_spills_without_a_cap_keep_their_advice() -> None:
    """Must stay: the run-time indexed arrays (digit_histogram, the local_memory_spill sample) at 32 and 16
    registers, far under any cap, keep the shared-memory table fix; no launch-bounds text."""
    for rel, text in (
        ("validation/cuda/digit_histogram.ncu-rep.gz", "__shared__ unsigned h_s[16][BLOCK]"),
        ("samples/ncu/local_memory_spill.ncu-rep.gz", "__shared__ float table_s[64][BLOCK]"),
    ):
        d = _diag(rel)
        assert text in d.fix, (rel, d.fix)
        assert "__launch_bounds__" not in d.fix and "the most a" not in d.mechanism, (rel, d.fix)


# ----------------------------------------------------------------------------- 3. a row per thread
MATVEC = "validation/final/matvec_cols.ncu-rep.gz"


def test_row_per_thread_reduction_gets_a_warp_per_row() -> None:
    """matvec_cols: `a = A + (size_t)row * N` with `row` from threadIdx.x, then `a[j]` for j = 0..N-1: each load
    reads a column of 32 rows. The fix is one warp per row with a shuffle reduction, not a layout menu."""
    d = _diag(MATVEC)
    assert d.bottleneck is B.UNCOALESCED_GLOBAL_ACCESS
    assert "Give each row to one warp instead of one thread on line 31" in d.fix, d.fix
    assert "__shfl_xor_sync" in d.fix and "float4" in d.fix, d.fix
    assert "structure of arrays" not in d.fix and "swap the index roles" not in d.fix, d.fix
    assert "`const float* a = A + (size_t)row * N;` puts neighbouring lanes `N` elements" in d.mechanism
    assert "4 bytes apart from one base register" in d.mechanism, d.mechanism  # the unrolled walk in the SASS


def test_row_walk_pattern() -> None:
    """The pattern from source: a unit-step loop over a row the lane picks; not a transpose's short strided loop."""
    src = "const int row = blockIdx.x * blockDim.x + threadIdx.x;"
    w = row_walk("for (int j = 0; j < N; j++) s += A[(size_t)row * N + j];", src)
    assert w is not None and (w.array, w.lane, w.stride, w.loop, w.reduction) == ("A", "row", "N", "j", True)
    copy = row_walk(
        "for (int k = 0; k < cols; ++k) out[k] = a[k];", src + " const float* a = in + row * cols;"
    )
    assert copy is not None and not copy.reduction
    transpose = "int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;"
    assert (
        row_walk(
            "for (int j = 0; j < 32; j += 8) out[(long)x * n + (y + j)] = in[(long)(y + j) * n + x];",
            transpose,
        )
        is None
    )
    assert row_walk("for (int j = 0; j < 8; ++j) v[j] = x[base + j * blockDim.x];", src) is None


@pytest.mark.parametrize(
    "rel",
    [
        "samples/ncu/long_kernel_one_line.ncu-rep.gz",
        "samples/ncu/pair_transpose_before.ncu-rep.gz",
        "samples/ncu/torch_permute_copy.ncu-rep.gz",
        "samples/ncu/uncoalesced_global_access.ncu-rep.gz",
        "validation/cuda/column_read.ncu-rep.gz",
    ],
)
def test_transposes_and_strided_reads_keep_their_advice(rel: str) -> None:
    """Must not fire: transposes, permute copies and strided reads have no per-thread row walk."""
    d = _diag(rel)
    assert d.bottleneck is B.UNCOALESCED_GLOBAL_ACCESS
    assert "Give each row to one warp" not in d.fix and "walks a row of its own" not in d.mechanism, d.fix


# ----------------------------------------------------------------------------- 4. dynamic shared sized to its use
POLY = "validation/blind4/poly_smem_lowocc.ncu-rep.gz"


def test_oversized_dynamic_shared_buffer_is_sized_to_what_is_filled() -> None:
    """poly_smem_lowocc: 163,840 B of dynamic shared memory per block, of which the kernel fills `deg + 1` floats
    (line 9), a table every block loads alike. The fix sizes the launch argument; nothing needs splitting. The stall
    is short_scoreboard on an LDS, not memory."""
    d = _diag(POLY)
    assert d.bottleneck is B.OCCUPANCY_LIMITED
    assert "pass `(deg + 1) * sizeof(float)` as the third `<<<...>>>` argument" in d.fix, d.fix
    assert "instead of 163,840 B" in d.fix and "then up to 6 blocks fit" in d.fix, d.fix
    assert "smaller pieces" not in d.fix, d.fix
    assert "first `deg + 1` elements (line 9" in d.mechanism, d.mechanism
    assert "wait on memory" not in d.mechanism and "shared-memory (LDS)" in d.mechanism, d.mechanism


def test_staged_data_buffer_keeps_the_smaller_pieces_advice() -> None:
    """Must stay: chunk_reverse stages each block's own chunk (`buf[j] = in[base + j]`, base from blockIdx) through
    its 96 KB buffer: a smaller buffer does mean smaller pieces; its warps wait on memory."""
    d = _diag("validation/cuda/chunk_reverse.ncu-rep.gz")
    assert "process the data in smaller pieces" in d.fix and "sizeof" not in d.fix, d.fix
    assert "wait on memory" in d.mechanism, d.mechanism


def test_oversized_per_warp_slices_are_sized_to_what_they_hold() -> None:
    """embag_lowocc: `my = sidx + warp * max_bag` slices the 96 KB dynamic buffer per warp, but each slice is filled
    only up to `L`: the fix passes max_bag = L and sizes the buffer from it, not "smaller pieces"."""
    d = _diag("validation/blind4/embag_lowocc.ncu-rep.gz")
    assert d.bottleneck is B.OCCUPANCY_LIMITED
    assert "pass `max_bag` = `L` and `(blockDim.x / 32) * L * sizeof(int)`" in d.fix, d.fix
    assert "smaller pieces" not in d.fix, d.fix
    assert "slices of `max_bag` elements" in d.mechanism and "filled only up to `L`" in d.mechanism, (
        d.mechanism
    )


def test_dynamic_shared_without_source_names_the_launch_argument() -> None:
    """poly_smem_lowocc without its embedded source: the 163,840 B are dynamic (launch__shared_mem_per_block_dynamic),
    so the fix names the launch argument that sets them instead of "process the data in smaller pieces"."""
    k = replace(_launch(POLY), source_files=MappingProxyType({}))
    d = diagnose_launch(k)
    assert d.bottleneck is B.OCCUPANCY_LIMITED
    assert "163,840 B of each block's shared memory are dynamic" in d.fix, d.fix
    assert "third `<<<...>>>` argument" in d.fix and "process the data in smaller pieces" not in d.fix, d.fix


def test_static_shared_table_keeps_its_declaration_fix() -> None:
    """Must stay: the occupancy_limited sample's 48 KB table is static (`__shared__ float table[LUT];`, line 8)."""
    d = _diag("samples/ncu/occupancy_limited.ncu-rep.gz")
    assert d.fix.startswith("`__shared__ float table[LUT];` (line 8) sets the shared memory"), d.fix
    assert "dynamic" not in d.fix, d.fix
