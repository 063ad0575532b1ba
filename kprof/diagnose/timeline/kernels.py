"""Which kernels to profile next (the exact ``ncu`` command for each) and the NCCL collectives' share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose.job import is_nccl_kernel
from kprof.diagnose.timeline import rows as _rows_mod
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.gaps import _Window
from kprof.diagnose.timeline.rows import Pair, _in_windows
from kprof.diagnose.timeline.words import _app, _clip_name, _ms, _pct, _rx, _unique_prefix
from kprof.model import (
    Bottleneck,
    Evidence,
    Finding,
)
from kprof.timeline_model import (
    LAUNCH_COOPERATIVE,
    KernelTable,
)


@dataclass(slots=True)
class _Comm:
    """NCCL collective kernels in the window: GPU time, launches, share of GPU time."""

    ns: float = 0.0
    launches: int = 0
    share: float = 0.0
    base: str = ""
    """What the kernels' shares are of, when it is not the GPU-busy time: the kernel time summed over streams
    that overlap (with its value); "" when the shares are of the GPU-busy time."""

    def of(self, it: str = "it") -> str:
        """The base of the shares for a sentence: ``it`` (the GPU-busy time just quoted), or :attr:`base`."""
        return self.base or it


@dataclass(slots=True)
class _PerName:
    """Per kernel name, from one pass over the kernel table: GPU time and launches in the steady state
    (and on the whole device, used when the steady state holds none), launches during warm-up, cooperative."""

    time_steady: np.ndarray
    time_all: np.ndarray
    n_steady: np.ndarray
    n_all: np.ndarray
    n_warm: np.ndarray
    coop: np.ndarray


def _per_name(ctx: _Context, windows: Pair | None = None) -> _PerName:
    """Per kernel name; ``time_steady``/``n_steady`` over the kernels that start in ``windows`` (the steady state
    when None)."""
    k = ctx.tl.kernels
    lo, hi = ctx.steady_lo, ctx.steady_hi
    # launches before the steady state, by short name (what ncu's -k regex counts)
    first_iter_end = int(ctx.iterations[1][0]) if len(ctx.iterations[0]) else lo
    warm_end = max(lo, first_iter_end) if len(ctx.iterations[0]) else lo
    nn = max(len(k.names), 1)
    p = _PerName(
        time_steady=np.zeros(nn),
        time_all=np.zeros(nn),
        n_steady=np.zeros(nn, np.int64),
        n_all=np.zeros(nn, np.int64),
        n_warm=np.zeros(nn, np.int64),
        coop=np.zeros(nn, bool),
    )
    for a in range(0, len(k), _rows_mod.CHUNK_ROWS):
        sl = slice(a, a + _rows_mod.CHUNK_ROWS)
        ids, s = k.name_id[sl], k.start_ns[sl]
        dur = (k.end_ns[sl] - s).astype(np.float64)
        on = k.device[sl] == ctx.gpu.device
        st = on & (
            (s >= lo) & (s < hi) if windows is None or not len(windows[0]) else _in_windows(s, windows)
        )
        p.time_steady += np.bincount(ids[st], weights=dur[st], minlength=nn)
        p.n_steady += np.bincount(ids[st], minlength=nn)
        p.time_all += np.bincount(ids[on], weights=dur[on], minlength=nn)
        p.n_all += np.bincount(ids[on], minlength=nn)
        p.n_warm += np.bincount(ids[on & (s < warm_end)], minlength=nn)
        if k.launch_type is not None:
            p.coop[ids[np.isin(k.launch_type[sl], LAUNCH_COOPERATIVE)]] = True
    return p


def _ncu_command(k: KernelTable, i: int, short: Sequence[str], p: _PerName, app: str, out: str) -> str:
    """The ncu command that profiles kernel ``i`` once, after its warm-up launches."""
    name, sname = k.names[i], short[i]
    same_short = [j for j, x in enumerate(short) if x == sname]
    if len(same_short) == 1:
        regex = "regex:^" + _rx(sname) + "$"
        base = ""
        match_ids = same_short
    else:
        # several kernels share the base name: match the demangled name by a prefix unique to this one
        prefix = _unique_prefix(name, [k.names[j] for j in same_short if j != i])
        regex = "regex:^" + _rx(prefix)
        base = " --kernel-name-base demangled"
        match_ids = [j for j, x in enumerate(k.names) if x.startswith(prefix)]
    skip = max(1, int(p.n_warm[match_ids].sum()))
    # Application replay only for cooperative launches (CUPTI launchType 2/3), never guessed
    # from the grid shape. Kernel replay saves the device memory a kernel writes and restores
    # it before every pass, so a persistent kernel that loops over a work queue in global
    # memory replays correctly; a grid of exactly 1-4x the SM count (cuBLAS's nvjet GEMMs
    # launch 132 blocks on an H200) is no evidence of anything else. A cooperative launch
    # synchronizes the whole grid, which kernel replay breaks (docs/inputs.md); application replay
    # reruns the program once per pass instead, far slower, so it is kept for those.
    return commands.ncu_command(  # kprof's capture flags, as `kprof profile ncu` runs them
        regex,
        out,
        exact=False,
        program=app,
        launch_skip=skip,
        kernel_name_base="demangled" if base else None,
        replay_mode="application" if p.coop[i] else None,
    )


def _ncu_commands(
    ctx: _Context, w: _Window
) -> tuple[list[Evidence], list[str], list[tuple[str, float, str]], _Comm]:
    """Top compute kernels by share of GPU time in the steady state, with an ncu command each, and the
    NCCL kernels' time apart.

    NCCL collective kernels are communication, not compute to profile with ncu: a collective runs
    until the last rank joins it, so its duration holds the wait for the other ranks (and ncu's
    replay of one rank's collective would deadlock or time the wait). They are left out of the
    ranking and the commands and reported as their share of GPU time.
    """
    tl = ctx.tl
    k = tl.kernels
    ev: list[Evidence] = []
    cmds: list[str] = []
    tops: list[tuple[str, float, str]] = []
    """(short name, share of GPU time, full name) of the top compute kernels."""
    if len(k) == 0:
        return ev, cmds, tops, _Comm()
    p = _per_name(ctx, w.windows)
    per_name, n_launches = (p.time_steady, p.n_steady) if p.n_steady.any() else (p.time_all, p.n_all)
    kernel_ns = float(per_name.sum())
    total_gpu = max(float(w.busy_ns), kernel_ns, 1.0)
    # Kernels on several streams overlap: their summed time exceeds the GPU-busy time (the union), and the shares
    # are of that sum, which the words then name with its value (a share of "it", the busy time, would not add up).
    overlap = kernel_ns > w.busy_ns * (1 + th.SHARE_BASE_TOLERANCE)
    is_comm = np.array([is_nccl_kernel(n) for n in k.names] or [False], bool)
    comm_ns = float(per_name[is_comm].sum())
    comm = _Comm(
        ns=comm_ns,
        launches=int(n_launches[is_comm].sum()),
        share=min(1.0, comm_ns / total_gpu),
        base=f"the kernel time ({_ms(kernel_ns)} summed over streams that overlap)" if overlap else "",
    )
    compute = np.where(is_comm, 0.0, per_name)
    order = np.argsort(-compute, kind="stable")[: th.TOP_KERNELS]
    app = _app(tl) or commands.PROGRAM
    short = k.short_names or k.names
    seen_cmd: set[str] = set()
    for i in order.tolist():
        if compute[i] <= 0:
            continue
        name = k.names[i]
        sname = short[i]
        share = float(per_name[i]) / total_gpu
        tops.append((sname, share, name))
        shown = sname if sum(1 for x in short if x == sname) == 1 else _clip_name(name)
        ev.append(
            Evidence(
                name=f"GPU time share: {shown}",
                value=round(100 * share, 1),
                unit="%",
                reference=f"{int(n_launches[i]):,} launches, {_ms(per_name[i])} in {w.scope}"
                + (f", of {_ms(kernel_ns)} of kernel time (streams overlap)" if overlap else ""),
                metric="gpu_time_share",
            )
        )
        out = commands.kernel_report_stem(
            commands.report_stem(tl.source), len(cmds) + 1, sname
        )  # beside the capture
        cmd = _ncu_command(k, i, short, p, app, out)
        if cmd not in seen_cmd:
            seen_cmd.add(cmd)
            cmds.append(cmd)
    return ev, cmds, tops, comm


def _comm_evidence(comm: _Comm, scope: str = "the steady state") -> Evidence:
    return Evidence(
        name="GPU time in NCCL collectives",
        value=round(100 * comm.share, 1),
        unit="%",
        reference=f"{comm.launches:,} launches, {_ms(comm.ns)} in {scope}"
        + (f", of {comm.base.removeprefix('the ')}" if comm.base else "")
        + "; communication, left out of the ncu commands: a collective runs until the last rank joins, so its "
        "time includes waiting",
    )


def _comm_finding(comm: _Comm, scope: str = "the steady state") -> Finding:
    return Finding(
        bottleneck=Bottleneck.COMMUNICATION_BOUND,
        headline=f"NCCL collective kernels hold {_ms(comm.ns)}, {_pct(comm.share)} of {comm.of('the GPU time')}: "
        "a collective runs until every rank has joined it, so this time is transfer plus waiting for the "
        "slowest rank, which one rank's capture cannot tell apart.",
        evidence=(_comm_evidence(comm, scope),),
        share=comm.share,
    )
