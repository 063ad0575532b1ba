"""``shared_bank_conflicts``: shared-memory wavefronts per request above the access width's ideal (loads, stores,
shared atomics), or the replays ncu's rules quote in a details-page CSV."""

from __future__ import annotations

import re

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts, ratio, shared_requests
from kprof.facts.names import (
    L1_WAVEFRONTS,
    SATOM_CONFLICTS,
    SATOM_WAVEFRONTS,
    SHARED_WAVEFRONTS,
    SHARED_WAVEFRONTS_IDEAL,
    SLD_CONFLICTS,
    SLD_WAVEFRONTS,
    SST_CONFLICTS,
    SST_WAVEFRONTS,
)
from kprof.facts.stalls import SHARED_STALLS
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import (
    B,
    Mechanism,
    excess_share,
    excess_words,
    scale_to_limiter,
    unit_used,
    with_duration,
)
from kprof.rules.kernel.ncu_rules import QuotedRule, quoted_mechanism

_PAD_WORDS = (
    "Several lanes of a warp address different words in the same bank (typically a column of a row-major tile), so "
    "each access is split into one wavefront per conflicting word.",
    "Pad the shared array by one word per row (e.g. tile[32][33]) or swizzle the index.",
)
_QUOTED = tuple(
    QuotedRule(
        rule=rule,
        share=re.compile(pattern),
        bottleneck=B.SHARED_BANK_CONFLICTS,
        units=("l1",),
        what="shared-memory wavefronts",
        headline="Shared-memory bank conflicts: {waste}% of the shared-memory wavefronts are replays",
        mechanism=_PAD_WORDS[0],
        fix=_PAD_WORDS[1],
        expect_metric="derived:shared_wavefronts_per_request",
        expect_label="shared-memory wavefronts per request",
    )
    for rule, pattern in (
        ("UncoalescedSharedAccess", r"\(([\d.]+)% of the total"),
        ("SharedMemoryConflicts", r"represent ([\d.]+)% of the overall"),
    )
)
"""The replays ncu's rules quote, for a details-page CSV without the wavefront counts."""

_WORDS = {
    "atomics": (
        "The lanes of a warp update different 4-byte words that share a bank (random bins of a shared-memory "
        "histogram: 256 bins in 32 banks), so each shared atomic (ATOMS) is replayed once per conflicting word; "
        "lanes that hit the same word cost no replay on sm_70+, different words of one bank do.",
        "Privatise the bins per lane so a warp's updates fall in different banks: one sub-histogram per lane "
        "laid out h[bin * 32 + lane] (or per warp with a padded stride), summed at the end of the block; or "
        "accumulate in registers/warp-aggregate (__match_any_sync) before the shared atomic.",
    ),
    "access": (
        "Several lanes of a warp address different 4-byte words in the same bank (typically a column of a "
        "row-major tile whose row length is a multiple of 32 words), so the access is split into one "
        "wavefront per conflicting word.",
        "Pad the shared array by one word per row (e.g. tile[32][33]) or swizzle the index (XOR the column "
        "with the row), so the lanes of a warp fall in different banks.",
    ),
}
"""(mechanism, fix) for shared atomics and for loads/stores."""


def _ideal(width: float | None) -> float:
    """Conflict-free wavefronts per warp request of ``width`` bytes per lane (32 banks x 4 B per wavefront)."""
    w = width if width is not None else th.ASSUMED_ACCESS_BYTES
    return max(1.0, w * th.WARP_SIZE / (th.SHARED_BANKS * th.SHARED_BANK_BYTES))


def _load_ideal(f: KernelFacts, requests: float | None) -> float:
    """Ideal wavefronts per shared load, like by like: with per-instruction counters, ncu's ideal wavefronts of the
    shared load instructions (LDS, LDSM: an ldmatrix.x4 needs 4) over those instructions, not a width average."""
    per_pc = sum(
        float(sl.counters.get(SHARED_WAVEFRONTS_IDEAL) or 0.0)
        for sl in f.k.sass
        if sl.mnemonic in ("LDS", "LDSM")
    )
    if per_pc > 0 and requests:
        return max(1.0, per_pc / requests)
    return _ideal(f.sass.shared_load_bytes_per_thread)


def _ncu_wavefronts(f: KernelFacts, atomics: float | None) -> tuple[float | None, float | None]:
    """ncu's (wavefronts, ideal wavefronts) of the shared accesses, per instruction (width, active lanes, LDSM and
    matrix-operand reads included): when they match there is no conflict to fix. The SourceCounters' sums stand in
    for the aggregate when the report has only those (and no shared atomics, which they do not cover)."""
    actual, ideal = f.v(SHARED_WAVEFRONTS), f.v(SHARED_WAVEFRONTS_IDEAL)
    if actual is None and not atomics:
        per_pc = [
            (float(a), float(i))
            for sl in f.k.sass
            if (a := sl.counters.get(SHARED_WAVEFRONTS)) is not None
            and (i := sl.counters.get(SHARED_WAVEFRONTS_IDEAL)) is not None
        ]
        if per_pc and sum(a for a, _ in per_pc) > 0:
            actual, ideal = sum(a for a, _ in per_pc), sum(i for _, i in per_pc)
    return actual, ideal


def bank_conflicts(f: KernelFacts) -> Mechanism | None:
    """Shared-memory wavefronts per request above the access width's ideal: lanes of a warp hit the same bank.

    Physics: 32 banks x 4 B serve 128 B per wavefront, so a conflict-free warp access of ``w`` bytes per lane
    needs ``w x 32 / 128`` wavefronts. ncu's per-instruction ideal wavefronts (LDSM and matrix-operand reads
    included) override that when the report has them. Shared atomics (ATOMS, a histogram's ``atomicAdd`` on a
    ``__shared__`` array) are served the same way: a warp's 32 four-byte updates of different words in the same
    bank take one wavefront per word, so random bins replay each ATOMS several times. A kind counts past
    COALESCING_TOLERANCE x its ideal. The replays cost time in proportion to the L1/shared pipe's share of the
    kernel's limit.
    """
    k = f.k
    wf_ld, wf_st, wf_at = k.value(SLD_WAVEFRONTS), k.value(SST_WAVEFRONTS), k.value(SATOM_WAVEFRONTS)
    rq_ld, rq_st, rq_at = shared_requests(k, "ld"), shared_requests(k, "st"), shared_requests(k, "atom")
    if (wf_ld is None or not rq_ld) and (wf_st is None or not rq_st) and (wf_at is None or not rq_at):
        return quoted_mechanism(f, _QUOTED[0]) or quoted_mechanism(f, _QUOTED[1])
    # 32-bit atomics (atomicAdd on int/unsigned/float): one wavefront per warp when conflict-free
    i_ld, i_st, i_at = _load_ideal(f, rq_ld), _ideal(f.sass.shared_store_bytes_per_thread), _ideal(None)
    waste = excess_share(
        (wf_ld, rq_ld, i_ld), (wf_st, rq_st, i_st), *_ncu_wavefronts(f, wf_at), (wf_at, rq_at, i_at)
    )
    if waste is None:
        return None
    kinds = {
        "loads": (ratio(wf_ld, rq_ld), i_ld, f.sass.shared_load_bytes_per_thread, SLD_CONFLICTS),
        "stores": (ratio(wf_st, rq_st), i_st, f.sass.shared_store_bytes_per_thread, SST_CONFLICTS),
        "atomics": (ratio(wf_at, rq_at), i_at, th.ASSUMED_ACCESS_BYTES, SATOM_CONFLICTS),
    }
    bad = {
        kind: wpr / idl
        for kind, (wpr, idl, _, _) in kinds.items()
        if wpr is not None and wpr > idl * th.COALESCING_TOLERANCE
    }
    if not bad:
        return None
    total_wf = k.value(L1_WAVEFRONTS)
    actual = (wf_ld or 0.0) + (wf_st or 0.0) + (wf_at or 0.0)
    shared_share = min(1.0, actual / total_wf) if total_wf else 1.0
    savings = waste * shared_share * scale_to_limiter(f, f.util.get("l1"), SHARED_STALLS)
    which = max(bad, key=lambda kind: bad[kind])  # the kind furthest from its ideal (loads first on a tie)
    others = [kind for kind, (wpr, _, _, _) in kinds.items() if kind != which and wpr]
    whole = "all shared-memory wavefronts" + (f", {' and '.join(others)} included" if others else "")
    return _mechanism(f, which, kinds[which], waste, shared_share, savings, whole)


def _mechanism(
    f: KernelFacts,
    which: str,
    kind: tuple[float | None, float, float | None, str],
    waste: float,
    shared_share: float,
    savings: float,
    whole: str,
) -> Mechanism:
    """The finding for the kind of shared access (``which``) furthest from its ideal; ``whole`` names what
    ``waste`` is a share of."""
    op = {"loads": "load", "stores": "store", "atomics": "atomic"}[which]
    wpr, idl, width, conflicts_metric = kind
    wpr_r = round(wpr or 0.0, 2)
    conflicts = f.v(conflicts_metric)
    per_request = f"derived:shared_{op}_wavefronts_per_request"
    ev = [
        Evidence(
            name=f"shared-memory {which}: wavefronts per request",
            value=wpr_r,
            unit="wavefronts/request",
            reference=(
                f"ideal {idl:g} = {width or th.ASSUMED_ACCESS_BYTES:.3g} B x {th.WARP_SIZE} lanes / "
                f"({th.SHARED_BANKS} banks x {th.SHARED_BANK_BYTES} B per wavefront)"
            ),
            reference_value=idl,
            metric=per_request,
        ),
        unit_used(
            f, "l1", "conflicts cost time when the L1/shared pipe is the busiest unit", f.util.get("l1", 0.0)
        ),
    ]
    if conflicts is not None:
        ev.append(
            Evidence(
                name=f"bank conflicts on shared {which}",
                value=int(conflicts),
                unit="",
                reference="0 for conflict-free access",
                metric=conflicts_metric,
            )
        )
    wavefronts = Expectation(
        metric=per_request,
        direction=Direction.DOWN,
        target=round(idl, 1),
        unit="wavefronts/request",
        value_now=wpr_r,
        label=f"shared-memory wavefronts per {op}",
        basis=f"the conflict-free ideal: {width or th.ASSUMED_ACCESS_BYTES:.3g} B x {th.WARP_SIZE} lanes / "
        f"({th.SHARED_BANKS} banks x {th.SHARED_BANK_BYTES} B per wavefront)",
    )
    mechanism, fix = _WORDS["atomics" if which == "atomics" else "access"]
    return Mechanism(
        bottleneck=B.SHARED_BANK_CONFLICTS,
        savings=savings,
        headline=(
            f"Shared-memory bank conflicts: {wpr_r:g} wavefronts per shared {op} against an ideal {idl:g}, so "
            + excess_words(wpr_r, idl, f"the {op} wavefronts are replays", waste, whole)
            + "."
        ),
        evidence=ev,
        mechanism=mechanism,
        fix=fix,
        expect=with_duration(f, [wavefronts], savings, why="the replayed wavefronts cost"),
        confidence=th.CONFIDENCE_MEASURED,
        would_raise="SourceCounters (--import-source yes) to name the conflicting line"
        if "source" in f.missing
        else "",
        inflates=("l1",),
        waste=waste * shared_share,
    )
