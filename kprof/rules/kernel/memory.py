"""Global memory traffic that carries no requested data: ``uncoalesced_global_access`` (sectors per request above
the access width's ideal; L1 wavefronts per request on basic-set reports; the excess ncu's rule quotes in a
details-page CSV), and L2 at its roof with re-reads (``l2_bandwidth_bound`` as a fix).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kprof import thresholds as th
from kprof.diagnose.sass import access_bytes
from kprof.facts.kernel import KernelFacts, l2_sectors_from_l1, metric_value, ratio, sum_present
from kprof.facts.names import (
    DRAM_READ_SECTORS,
    DRAM_WRITE_BYTES,
    GLD_REQUESTS,
    GLD_SECTORS,
    GST_REQUESTS,
    GST_SECTORS,
    L2_CACHE_BYTES,
    L2_READ_SECTORS,
    L2_SECTORS,
    L2_THEORETICAL_SECTORS,
    L2_THEORETICAL_SECTORS_IDEAL,
    LLD_MISS_SECTORS,
    THREADS_PER_INST,
    THREADS_PER_INST_PRED_ON,
)
from kprof.facts.stalls import GLOBAL_STALLS
from kprof.facts.units import MEMORY_UNITS, UNIT_WORDS
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import (
    B,
    Mechanism,
    excess_share,
    excess_words,
    pace_savings,
    pc,
    scale_to_limiter,
    unit_used,
    with_duration,
)
from kprof.rules.kernel.ncu_rules import QuotedRule, quoted_mechanism

_COALESCE_FIX = (
    "Make consecutive threads (threadIdx.x) access consecutive addresses: swap the index roles, change the data "
    "layout (structure of arrays), or stage the tile through shared memory"
)

QUOTED = QuotedRule(
    rule="UncoalescedGlobalAccess",
    share=re.compile(r"\(([\d.]+)% of the total"),
    bottleneck=B.UNCOALESCED_GLOBAL_ACCESS,
    units=MEMORY_UNITS,
    what="global memory sectors",
    headline="Uncoalesced global access: {waste}% of the global memory sectors carry no requested data",
    mechanism=(
        "Neighbouring lanes of a warp access scattered addresses, so each warp-wide access touches many "
        "32-byte sectors and the memory system moves whole sectors for a few useful bytes each."
    ),
    fix=_COALESCE_FIX + ".",
    expect_metric="derived:global_sectors_per_request",
    expect_label="global sectors per request",
)
"""The excess ncu's UncoalescedGlobalAccess rule quotes, for a details-page CSV without the memory tables."""


def _global_ideal(f: KernelFacts, which: str, spr: float | None) -> tuple[float, str, int]:
    """Ideal sectors per request of the global ``which`` ("loads"/"stores"), the formula it came from, and
    the decimals it is quoted with: one for ncu's counted ideal sectors (kernel counters and per-instruction
    counters disagree by a few hundredths of a sector: 4.01 against the lines' own 4), two for the width
    formula, whose text shows the value it gives.

    ncu's SourceCounters hold, per executed instruction, the sectors it moved and the sectors it would need with
    coalesced addresses for its real width and active lanes: their ratio over the executed loads (or stores)
    scales the measured sectors per request to the ideal. Without them, the executed access width (per-PC
    ``inst_executed``-weighted; the static listing when not collected) times the active lanes gives it. A report
    without SASS (a raw CSV export) has no width, but may hold ncu's ideal sectors summed over the kernel: their
    count per global request is the ideal of loads and stores together (an assumed 4-byte width would call a
    kernel of 8- or 16-byte accesses uncoalesced, and contradict the waste share ncu's ideal gives).
    """
    key = "load" if which == "loads" else "store"
    actual, ideal = f.flow.sectors.get(key), f.flow.sectors.get(f"{key}_ideal")
    if spr is not None and actual and ideal is not None:
        return (
            max(1.0, spr * ideal / actual),
            f"ncu's ideal sectors of the executed {which} ({int(ideal)} of {int(actual)} sectors moved)",
            1,
        )
    kernel_ideal, requests = f.v(L2_THEORETICAL_SECTORS_IDEAL), sum_present(f.k, (GLD_REQUESTS, GST_REQUESTS))
    if f.sass.empty and kernel_ideal and requests:
        # No SASS to give the access width, but ncu's ideal sectors of the executed global instructions (a raw CSV
        # export holds their sum): per request, the ideal at the instructions' own widths and active lanes.
        return (
            max(1.0, kernel_ideal / requests),
            f"ncu's ideal sectors of the executed global loads and stores per request ({int(kernel_ideal)} sectors "
            f"/ {int(requests)} requests; no SASS for each instruction's width)",
            1,
        )
    width = f.sass.global_load_bytes_per_thread if which == "loads" else f.sass.global_store_bytes_per_thread
    if which == "loads" and not f.sass.weighted and f.sass.global_load_max_bytes:
        # a listing without executed counts: the widest load, conservatively
        width = f.sass.global_load_max_bytes
    w = width if width is not None else th.ASSUMED_ACCESS_BYTES
    active = f.v(THREADS_PER_INST_PRED_ON) or f.v(THREADS_PER_INST) or float(th.WARP_SIZE)
    lanes = min(float(th.WARP_SIZE), max(1.0, active))
    ideal_spr = max(1.0, w * lanes / th.SECTOR_BYTES)
    src = "executed" if f.sass.weighted else "widest listed" if not f.sass.empty else "assumed (no SASS)"
    return ideal_spr, f"{w:.3g} B ({src} width) x {lanes:.3g} active lanes / {th.SECTOR_BYTES} B sectors", 2


def dependent_excess_share(f: KernelFacts) -> float | None:
    """Share of the excess global sectors that data-dependent loads cause (per-PC counts), else of the
    executed global loads that are data-dependent; None without SASS."""
    sec = f.flow.sectors
    if "load" in sec and "load_ideal" in sec:
        total = (sec["load"] - sec["load_ideal"]) + (sec.get("store", 0.0) - sec.get("store_ideal", 0.0))
        dep = sec.get("dependent", 0.0) - sec.get("dependent_ideal", 0.0)
        return max(0.0, dep) / total if total > 0 else 0.0
    if f.flow.global_loads:
        return f.flow.dependent_load_share
    return None


@dataclass(frozen=True, slots=True)
class _Coalescing:
    """The worse of the global loads and stores against its ideal, and the waste of all global sectors."""

    which: str
    """``loads`` or ``stores``."""
    spr: float
    ideal: float
    why: str
    waste: float
    ncu_waste: bool
    """True when the waste is ncu's own per-instruction ideal (derived:global_excess_sector_share)."""
    ideal_decimals: int = 2
    """How the ideal is quoted (:func:`_global_ideal`)."""

    @property
    def op(self) -> str:
        return "load" if self.which == "loads" else "store"

    def whole_words(self, counts: tuple[float | None, ...]) -> str:
        """What :attr:`waste` is a share of: every global sector (the other direction's too, when it moved any),
        judged by ncu's per-instruction ideal when that is the measure."""
        other = counts[2] if self.which == "loads" else counts[0]
        words = "all global sectors"
        if other:
            words += ", stores included" if self.which == "loads" else ", loads included"
        return words + (", by ncu's per-instruction ideal" if self.ncu_waste else "")


def _global_counts(f: KernelFacts) -> tuple[float | None, ...]:
    """(load sectors, load requests, store sectors, store requests) of global memory at L1."""
    return tuple(f.v(n) for n in (GLD_SECTORS, GLD_REQUESTS, GST_SECTORS, GST_REQUESTS))


def _coalescing(f: KernelFacts, counts: tuple[float | None, ...]) -> _Coalescing | None:
    """Sectors per request of loads and stores against their ideals; None when neither is past
    COALESCING_TOLERANCE or the excess of all global sectors is below it."""
    ld_s, ld_r, st_s, st_r = counts
    spr_ld, spr_st = ratio(ld_s, ld_r), ratio(st_s, st_r)
    (ideal_ld, why_ld, dec_ld), (ideal_st, why_st, dec_st) = (
        _global_ideal(f, "loads", spr_ld),
        _global_ideal(f, "stores", spr_st),
    )
    ncu_waste = metric_value(f.k, "derived:global_excess_sector_share")
    waste = excess_share((ld_s, ld_r, ideal_ld), (st_s, st_r, ideal_st), None, None)
    if ncu_waste is not None:
        waste = ncu_waste
    if waste is None or waste < 1.0 - 1.0 / th.COALESCING_TOLERANCE:
        return None
    worst_ld = spr_ld is not None and spr_ld > ideal_ld * th.COALESCING_TOLERANCE
    worst_st = spr_st is not None and spr_st > ideal_st * th.COALESCING_TOLERANCE
    if not (worst_ld or worst_st):
        return None
    if worst_ld and (not worst_st or (spr_ld or 0) / ideal_ld >= (spr_st or 0) / ideal_st):
        return _Coalescing("loads", spr_ld or 0.0, ideal_ld, why_ld, waste, ncu_waste is not None, dec_ld)
    return _Coalescing("stores", spr_st or 0.0, ideal_st, why_st, waste, ncu_waste is not None, dec_st)


def uncoalesced(f: KernelFacts) -> Mechanism | None:
    """Excess global sectors per request: lanes of a warp touch more 32-byte sectors than their bytes need.

    Physics: a warp's access moves whole 32 B sectors; ``width x lanes / 32`` is the minimum per request. The
    waste share (1 - ideal/actual sectors, ncu's own per-instruction ideal when the report has it) costs time
    in proportion to how much the busiest memory level is the limiter. When the excess comes from loads whose
    addresses are computed from loaded data (:func:`dependent_excess_share`), the scatter is the data's: the
    waste still makes the traffic useless (so the unit is not "healthy"), but re-indexing cannot remove it and
    the rule saves nothing; the resource diagnosis explains it as latency.
    """
    counts = _global_counts(f)
    ld_s, ld_r, st_s, st_r = counts
    if (ld_r is None or ld_s is None) and (st_r is None or st_s is None):
        return quoted_mechanism(f, QUOTED) or l1_wavefront_excess(f)
    c = _coalescing(f, counts)
    if c is None:
        return None
    mem_unit, mem_util = f.mem_max()
    dependent = dependent_excess_share(f)
    data_dependent = dependent is not None and dependent >= th.DEPENDENT_LOAD_SHARE
    known = any(u in f.util for u in MEMORY_UNITS)
    in_l1 = excess_stays_in_l1(f)
    paid_where = "the waste is paid in the busiest memory level"
    if in_l1:
        mem_unit, mem_util = max(((u, f.util.get(u, 0.0)) for u in ("l1", "l2")), key=lambda t: t[1])
        paid_where = (
            "the excess sectors hit in L1 (L2 reads no more than the ideal sectors): the waste is paid in L1 and "
            "the requests it sends to L2, not in DRAM bytes"
        )
    # The share of the excess that data-dependent loads cause stays after any re-indexing (a gather on the same
    # line as a strided walk: x[col[j]] beside val[j]): only the rest is saved, and the sectors per request fall
    # only that far.
    fixable = 1.0 - (dependent or 0.0)
    savings = (
        0.0
        if data_dependent or (in_l1 and mem_util < f.u_max - th.UNIT_TIE_MARGIN)
        else c.waste * fixable * scale_to_limiter(f, mem_util if known else None, GLOBAL_STALLS)
    )
    # the ideal at the precision its source has (ncu's counted ideal: 4 as the lines say, not 4.01)
    spr_r, idl_r, waste_pct = round(c.spr, 2), round(c.ideal, c.ideal_decimals), round(100 * c.waste, 1)
    per_request = f"derived:global_{c.op}_sectors_per_request"
    ev = [
        Evidence(
            name=f"global {c.which}: sectors per request",
            value=spr_r,
            unit="sectors/request",
            reference=f"ideal {idl_r:g}: {c.why}",
            reference_value=idl_r,
            metric=per_request,
        ),
        Evidence(
            name="global sectors that carry no requested data",
            value=waste_pct,
            unit="%",
            reference="0% when every warp reads contiguous, aligned addresses",
            metric="derived:global_excess_sector_share" if c.ncu_waste else f"{GLD_SECTORS}, {GST_SECTORS}",
        ),
        unit_used(f, mem_unit, paid_where, mem_util),
    ]
    sectors = Expectation(
        metric=per_request,
        direction=Direction.DOWN,
        target=round(c.ideal + (c.spr - c.ideal) * (1.0 - fixable if not data_dependent else 0.0), 1),
        unit="sectors/request",
        value_now=spr_r,
        label=f"global {c.op} sectors per request",
        basis="the ideal of the executed accesses, as the evidence gives it"
        if fixable >= 1.0 and not data_dependent
        else f"the ideal, plus the {pc(1.0 - fixable)}% of the excess that data-dependent loads cause, which no "
        "re-indexing removes",
    )
    return Mechanism(
        bottleneck=B.UNCOALESCED_GLOBAL_ACCESS,
        savings=savings,
        headline=(
            f"Uncoalesced global {c.which}: {spr_r:g} sectors per request against an ideal {idl_r:g}, so "
            + excess_words(
                spr_r, idl_r, f"the {c.op} sectors carry no requested data", c.waste, c.whole_words(counts)
            )
            + "."
        ),
        evidence=ev,
        mechanism=_uncoalesced_words(f, c.op),
        fix=_COALESCE_FIX + " and access global memory row by row.",
        expect=with_duration(
            f, [sectors], savings, why="the excess sectors cost"
        ),  # data-dependent: savings 0
        confidence=th.CONFIDENCE_MEASURED if not f.sass.empty else th.CONFIDENCE_NO_LINES,
        would_raise="SourceCounters (--import-source yes) to point at the exact line"
        if "source" in f.missing
        else "",
        inflates=MEMORY_UNITS,
        waste=c.waste,
    )


def excess_stays_in_l1(f: KernelFacts) -> bool:
    """True when the excess sectors of the global accesses never leave L1: the sectors L1 sends to L2 (reads and
    writes) are no more than ncu's ideal sectors of the executed global instructions, within COALESCING_TOLERANCE.

    Physics: sectors per request count the sectors each instruction touches in L1. A thread that reads a few
    consecutive narrow elements (four scalar loads of a misaligned float4, 2-byte loads of a 4-element vector)
    touches the same sectors with its next instructions, and those hit in L1: the excess costs L1 tag and data
    cycles and the extra, smaller requests L1 sends to L2, never DRAM bytes, so :func:`uncoalesced` counts it as time
    only where L1 or L2 is the busiest unit (within UNIT_TIE_MARGIN). False when the report lacks either count (the
    excess is then assumed to reach every memory level)."""
    sent, ideal = l2_sectors_from_l1(f.k), f.v(L2_THEORETICAL_SECTORS_IDEAL)
    if sent is None or not ideal:
        return False
    return sent <= ideal * th.COALESCING_TOLERANCE


_GLOBAL_OPS = {"load": ("LDG", "LD"), "store": ("STG", "ST")}


def _worst_global_access(f: KernelFacts, op: str) -> tuple[str, float, float, int, float] | None:
    """The executed global ``op`` ("load"/"store") instruction with the most sectors beyond its ideal, as
    (opcode, sectors per request, ideal sectors per request, bytes per lane, active lanes), from the per-PC
    source counters; None without them."""
    best: tuple[float, str, float, float, int, float] | None = None
    for s in f.k.sass:
        if s.mnemonic not in _GLOBAL_OPS[op]:
            continue
        n = s.counters.get("inst_executed") or s.counters.get("sass__inst_executed")
        actual = s.counters.get("memory_l2_theoretical_sectors_global")
        ideal = s.counters.get("memory_l2_theoretical_sectors_global_ideal")
        if not n or actual is None or ideal is None or actual <= ideal:
            continue
        # predicated-off lanes load nothing: the lanes that ran the access are the predicated-on ones
        lanes = s.counters.get("thread_inst_executed_true") or s.counters.get("thread_inst_executed")
        active = min(float(th.WARP_SIZE), float(lanes) / float(n)) if lanes else float(th.WARP_SIZE)
        cand = (
            float(actual - ideal),
            s.opcode,
            float(actual) / float(n),
            float(ideal) / float(n),
            access_bytes(s.opcode),
            active,
        )
        if best is None or cand[0] > best[0]:
            best = cand
    return best[1:] if best is not None else None


def _uncoalesced_words(f: KernelFacts, op: str) -> str:
    """Why the warp's accesses touch too many sectors, with the lanes' distance only where the counters give it.

    A warp whose lanes sit a uniform stride ``S`` bytes apart (``S`` >= the access width ``w``) spans ``lanes x S``
    bytes, so it touches about ``lanes x S / 32`` sectors: the measured sectors per request of the worst executed
    instruction give ``S = sectors x 32 / lanes``; once each lane has a sector of its own (sectors = lanes, within
    COUNT_MATCH_TOLERANCE) the distance is only known to be >= 32 bytes. Without per-instruction counters no
    distance is stated.
    """
    tail = "so the memory system moves whole 32-byte sectors for a few useful bytes each."
    worst = _worst_global_access(f, op)
    if worst is None:
        return (
            f"Neighbouring lanes of a warp do not {op} consecutive addresses, so each warp-wide {op} touches more "
            f"32-byte sectors than its bytes need, {tail}"
        )
    opcode, spr, ideal, width, lanes = worst
    where = f"{opcode} moves {spr:.3g} sectors per request against an ideal {ideal:.3g}"
    if spr >= (1 - th.COUNT_MATCH_TOLERANCE) * lanes:
        return (
            f"Each lane of a warp {op}s from a 32-byte sector of its own ({where}): neighbouring lanes' addresses "
            f"are 32 bytes or more apart where {width} bytes would be contiguous, {tail}"
        )
    stride = spr * th.SECTOR_BYTES / max(1.0, lanes)
    return (
        f"Neighbouring lanes of a warp {op} addresses about {stride:.0f} bytes apart instead of {width} ({where}, "
        f"what a uniform stride of that size gives), {tail}"
    )


def l1_wavefront_excess(f: KernelFacts) -> Mechanism | None:
    """Basic-set reports (SpeedOfLight without the memory tables): the L1 data pipe's wavefronts against its LSU
    requests, both as a percentage of a 1-per-cycle-per-SM peak, give wavefronts per request; a coalesced,
    conflict-free 4-byte warp access needs one (8-byte two, 16-byte four). With no shared-memory instruction in
    the SASS the excess is global memory's (uncoalesced); estimated, at lower confidence."""
    wpr = metric_value(f.k, "derived:l1_wavefronts_per_lsu_request")
    if wpr is None or f.sass.empty or f.sass.shared_loads + f.sass.shared_stores > 0:
        return None
    # Without executed counts the listing's mean width would count a cold scalar remainder loop as much as the
    # vector loop: the widest listed load is the conservative ideal for an estimate.
    width = (
        f.sass.global_load_bytes_per_thread if f.sass.weighted else f.sass.global_load_max_bytes
    ) or th.ASSUMED_ACCESS_BYTES
    ideal = max(1.0, width * th.WARP_SIZE / (th.SHARED_BANKS * th.SHARED_BANK_BYTES))
    if wpr <= ideal * th.COALESCING_TOLERANCE:
        return None
    waste = 1.0 - ideal / wpr
    # the scattered sectors cross L1, L2 and DRAM alike: the waste is paid in the busiest memory level
    mem_unit, mem_util = f.mem_max()
    savings = waste * scale_to_limiter(f, mem_util, GLOBAL_STALLS)
    wpr_r = round(wpr, 2)
    ev = [
        Evidence(
            name="L1 wavefronts per LSU request",
            value=wpr_r,
            unit="wavefronts/request",
            reference=f"ideal {ideal:g} = {width:.3g} B x {th.WARP_SIZE} lanes / 128 B per wavefront ("
            + ("executed" if f.sass.weighted else "widest listed")
            + " load width); no shared-memory instructions in the SASS, so the wavefronts are global memory's",
            reference_value=ideal,
            metric="derived:l1_wavefronts_per_lsu_request",
        ),
        unit_used(f, mem_unit, "the waste is paid in the busiest memory level", mem_util),
    ]
    wavefronts = Expectation(
        metric="derived:l1_wavefronts_per_lsu_request",
        direction=Direction.DOWN,
        target=round(ideal, 1),
        unit="wavefronts/request",
        value_now=wpr_r,
        label="L1 wavefronts per LSU request",
        basis=f"the ideal: {width:.3g} B x {th.WARP_SIZE} lanes / 128 B per wavefront",
    )
    return Mechanism(
        bottleneck=B.UNCOALESCED_GLOBAL_ACCESS,
        savings=savings,
        headline=(
            f"Uncoalesced global access (estimated): {wpr_r:g} L1 wavefronts per memory request against an ideal "
            f"{ideal:g}; {UNIT_WORDS[mem_unit]} is at {pc(mem_util)}% of its peak moving sectors nobody asked for."
        ),
        evidence=ev,
        mechanism=(
            "Neighbouring lanes of a warp access addresses far apart, so each warp-wide access is split into many "
            "L1 wavefronts (one per group of sectors) instead of one per 128 bytes."
        ),
        fix=(
            "Make consecutive threads (threadIdx.x) access consecutive addresses: swap the index roles (the thread "
            "index should move along the contiguous dimension), or stage the tile through shared memory."
        ),
        expect=with_duration(f, [wavefronts], savings, why="the excess wavefronts cost"),
        confidence=th.CONFIDENCE_ESTIMATED,
        would_raise="the memory tables (--section MemoryWorkloadAnalysis_Tables) for the sectors per request",
        inflates=MEMORY_UNITS,
        waste=waste,
    )


def _l2_limiter(f: KernelFacts) -> float | None:
    """L2's use when it is the busiest unit (within UNIT_TIE_MARGIN) and above LATENCY_BOUND_FRACTION, else None."""
    l2 = f.util.get("l2")
    if l2 is None or l2 < th.LATENCY_BOUND_FRACTION or l2 < f.u_max - th.UNIT_TIE_MARGIN:
        return None
    return l2


def _l2_reads(f: KernelFacts) -> tuple[float | None, float | None]:
    """(L2 sectors the SMs read, less the excess sectors of uncoalesced accesses and the local loads that missed L1
    (spill reloads and per-thread arrays, :func:`kprof.rules.kernel.local.local_memory`'s traffic); sectors read
    from DRAM)."""
    reads, dram_reads = f.v(L2_READ_SECTORS), f.v(DRAM_READ_SECTORS)
    excess = (f.v(L2_THEORETICAL_SECTORS) or 0.0) - (f.v(L2_THEORETICAL_SECTORS_IDEAL) or 0.0)
    if reads is not None and excess > 0:
        reads = max(
            0.0, reads - excess
        )  # sectors of uncoalesced accesses are that rule's waste, not re-reads
    spill_reads = f.v(LLD_MISS_SECTORS)
    if reads is not None and spill_reads:
        reads = max(
            0.0, reads - spill_reads
        )  # local loads that miss L1 are local memory's traffic, not re-reads
    if dram_reads is None:
        dram_rd_bytes = f.v("dram__bytes_read.sum")
        dram_reads = dram_rd_bytes / th.SECTOR_BYTES if dram_rd_bytes is not None else None
    return reads, dram_reads


def l2_rereads(f: KernelFacts) -> Mechanism | None:
    """L2 at its roof while carrying each byte many times: re-reads that reuse in shared memory or registers removes.

    The excess sectors of uncoalesced accesses (ncu's theoretical minus ideal sectors) are left out: they are
    :func:`uncoalesced`'s waste, not data read twice.

    Physics: ncu flushes the caches before each replay pass (``--cache-control all``, the default), so every byte
    the kernel reads crosses DRAM into L2 once; the L2 sectors the SMs read over the DRAM sectors read is the number
    of times each byte is fetched from L2 (L2_REREAD_FACTOR). The compulsory share of the L2 traffic is the inverse;
    the rest is the waste, and with it gone the kernel runs at the pace of its next unit. L2 must be the busiest
    unit (within UNIT_TIE_MARGIN) and above LATENCY_BOUND_FRACTION.
    """
    l2 = _l2_limiter(f)
    reads, dram_reads = _l2_reads(f)
    if l2 is None or reads is None or not dram_reads:
        return None
    factor = reads / dram_reads
    if factor < th.L2_REREAD_FACTOR:
        return None
    waste = 1.0 - 1.0 / factor
    savings = pace_savings(f, "l2", l2 * (1.0 - waste))
    factor_r = round(factor, 1)
    ev = [
        unit_used(f, "l2", "the busiest unit", l2),
        Evidence(
            name="L2 sectors read by the SMs",
            value=int(reads),
            unit="sectors",
            reference=f"{factor_r:g}x the {int(dram_reads)} sectors read from DRAM: each byte is fetched {factor_r:g} "
            "times from L2 (caches are flushed before the kernel, so DRAM delivers each byte once)",
            reference_value=int(dram_reads),
            metric=L2_READ_SECTORS,
        ),
    ]
    sectors = Expectation(
        metric=L2_READ_SECTORS,
        direction=Direction.DOWN,
        target=round(dram_reads * th.L2_REREAD_FACTOR, 0),
        unit="sectors",
        value_now=reads,
        label="L2 sectors read by the SMs",
        basis=f"{th.L2_REREAD_FACTOR:g}x the {int(dram_reads):,} sectors read from DRAM: each byte fetched from L2 "
        "once or twice, not mostly re-read",
    )
    return Mechanism(
        bottleneck=B.L2_BANDWIDTH_BOUND,
        savings=savings,
        headline=(
            f"L2 saturated by re-reads: L2 at {pc(l2)}% of peak while each byte is fetched {factor_r:g} times from "
            "it; the traffic is mostly data the kernel already read."
        ),
        evidence=ev,
        mechanism=(
            "Blocks (or iterations) read the same data again from L2 instead of keeping it on chip: small tiles "
            "reload their operands for every step, or neighbouring elements are re-fetched by many threads."
        ),
        fix=(
            "Reuse on chip: larger tiles staged in shared memory (each operand loaded once per block and used by "
            "all its threads), keep reused values in registers, or swizzle/cluster the blocks that share data."
        ),
        expect=with_duration(f, [sectors], savings, why="the re-reads cost"),
        confidence=th.CONFIDENCE_NO_LINES,
        would_raise="",
        inflates=("l2",),
        waste=waste,
        blocks_healthy=True,
    )


def _coalesced_store_sectors(f: KernelFacts) -> float | None:
    """Global store sectors, with the excess of uncoalesced stores left out (that is :func:`uncoalesced`'s waste):
    when that rule fires and the stores are past COALESCING_TOLERANCE of their ideal sectors per request, the
    requests times the ideal."""
    counts = _global_counts(f)
    sectors, requests = counts[2], counts[3]
    if not sectors or not requests:
        return None
    if _coalescing(f, counts) is None:
        return sectors
    ideal, _, _ = _global_ideal(f, "stores", sectors / requests)
    if sectors / requests > ideal * th.COALESCING_TOLERANCE:
        return requests * ideal
    return sectors


def l2_rewrites(f: KernelFacts) -> Mechanism | None:
    """L2 at its roof while the kernel's stores re-write lines they already wrote: a value kept in global memory and
    stored again every iteration (an accumulator ``y[i] += ...`` the compiler cannot keep in a register).

    Physics: a kernel can write at most its DRAM write bytes plus the L2 capacity of distinct bytes (a line still
    dirty in L2 at the end has not reached DRAM); coalesced global store sectors beyond L2_REWRITE_FACTOR times that
    store the same bytes again. Their share of every L2 sector access is the waste. L2 must be the busiest unit
    (within UNIT_TIE_MARGIN) and above LATENCY_BOUND_FRACTION, as for :func:`l2_rereads`.
    """
    l2 = _l2_limiter(f)
    if l2 is None:
        return None
    stores, written, l2_bytes, sectors = (
        _coalesced_store_sectors(f),
        f.v(DRAM_WRITE_BYTES),
        f.v(L2_CACHE_BYTES),
        f.v(L2_SECTORS),
    )
    if not stores or written is None or not l2_bytes or not sectors:
        return None
    distinct = (written + l2_bytes) / th.SECTOR_BYTES
    factor = stores / distinct
    if factor < th.L2_REWRITE_FACTOR:
        return None
    waste = min(1.0, (stores - distinct) / sectors)
    savings = pace_savings(f, "l2", l2 * (1.0 - waste))
    factor_r = round(factor, 1)
    stored_gb = stores * th.SECTOR_BYTES / 1e9
    distinct_mb = distinct * th.SECTOR_BYTES / 1e6
    ev = [
        unit_used(f, "l2", "the busiest unit", l2),
        Evidence(
            name="global store sectors",
            value=round(stores),
            unit="sectors",
            reference=f"{factor_r:g}x the {round(distinct):,} sectors the kernel can write distinct (DRAM writes "
            f"{written / 1e6:,.1f} MB plus the {l2_bytes / 1e6:,.0f} MB L2): each byte is stored about "
            f"{factor_r:g} times",
            reference_value=round(distinct),
            metric=GST_SECTORS,
        ),
    ]
    target = Expectation(
        metric=GST_SECTORS,
        direction=Direction.DOWN,
        target=round(distinct, 0),
        unit="sectors",
        value_now=stores,
        label="global store sectors",
        basis=f"each byte stored once: at most the DRAM write bytes plus the L2 capacity ({distinct_mb:,.0f} MB)",
    )
    return Mechanism(
        bottleneck=B.L2_BANDWIDTH_BOUND,
        savings=savings,
        headline=(
            f"L2 saturated by repeated stores: L2 at {pc(l2)}% of peak while the kernel stores {stored_gb:,.2f} GB "
            f"into at most {distinct_mb:,.0f} MB of distinct bytes ({factor_r:g}x); most stores re-write a value "
            "stored before."
        ),
        evidence=ev,
        mechanism=(
            f"The global stores write {stored_gb:,.2f} GB through L2 but DRAM receives only {written / 1e6:,.1f} MB: "
            "the same lines are stored again and again. That is a result kept in global memory and written back on "
            "every iteration, as an accumulator `y[i] += a * x` in a loop does when the compiler must assume `y` may "
            "alias the inputs (pointers without `__restrict__`), so it stores `y[i]` after each update."
        ),
        fix=(
            "Accumulate in a register and store once after the loop: `float acc = 0.f; for (...) acc += a * x; "
            "y[i] = acc;`, and declare the pointers `__restrict__` (`const float* __restrict__ A, ..., "
            "float* __restrict__ y`) so the compiler may keep such values in registers."
        ),
        expect=with_duration(f, [target], savings, why="the repeated stores cost"),
        confidence=th.CONFIDENCE_NO_LINES,
        would_raise="",
        inflates=("l2",),
        waste=waste,
        blocks_healthy=True,
    )
