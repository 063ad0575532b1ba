"""The causes besides the first: findings with their share of the steady state's wall time."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.diagnose.timeline.blocking import _sync_fix
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.covers import _host_compute_fix, _named_cover
from kprof.diagnose.timeline.evidence import _cause_times
from kprof.diagnose.timeline.gaps import _Window
from kprof.diagnose.timeline.words import _bytes, _clip_name, _language, _ms, _pct
from kprof.model import (
    Bottleneck,
    Evidence,
    Finding,
    _fmt,
)

_CAUSE_IDS: dict[str, Bottleneck] = {
    "host": Bottleneck.HOST_LAUNCH_BOUND,
    "host_compute": Bottleneck.HOST_COMPUTE_BOUND,
    "sync": Bottleneck.SYNC_BOUND,
    "copy": Bottleneck.TRANSFER_BOUND,
    "startup": Bottleneck.STARTUP_BOUND,
}


def _findings(ctx: _Context, w: _Window, primary: Bottleneck | None) -> list[Finding]:
    """Secondary causes, each with its share of the window's wall time (>= MIN_FINDING_SHARE), largest
    first, never the primary bottleneck again."""
    out: list[Finding] = []
    wall = max(w.wall_ns, 1)
    idle = max(w.idle_ns, 1)
    times = _cause_times(w)
    texts = {
        "host": "the host was still issuing work (dispatch and launch calls) when the GPU ran out of it",
        "sync": "the queue had drained behind a blocking sync",  # the call and its fix are named below
        "startup": "one-time work (module loading, compilation) inside the steady state",
    }
    for cause, b in _CAUSE_IDS.items():
        if b is primary:
            continue
        v = times[cause]
        if cause == "copy":
            v = max(v, w.pageable_copy_ns)
        share = v / wall
        if share < th.MIN_FINDING_SHARE:
            continue
        if cause == "copy":
            text = f"copies not overlapped by compute or waited for ({_bytes(w.copy_bytes)} copied)"
            if w.pageable_bytes:
                text += (
                    f"; {_bytes(w.pageable_bytes)} through pageable host memory ({_ms(w.pageable_copy_ns)}), "
                    "which the driver stages and which blocks the host: pin those buffers"
                )
            ev = Evidence(
                name="copy time not overlapped by compute",
                value=round(w.exposed_copy_ns / 1e6, 4),
                unit="ms",
                reference=f"plus {_ms(w.idle_by_cause.get('copy', 0))} of GPU idle behind blocking copies",
                metric="exposed_copy_ns",
            )
        elif cause == "host_compute":
            top = _named_cover(ctx, w)
            what, fix = _host_compute_fix(top.name if top else None, _language(ctx.tl))
            text = (
                f"the GPU waits while the host is {what}, with no CUDA call for >= "
                f"{_ms(th.HOST_COMPUTE_MIN_STRETCH_NS)} at a time"
                + (
                    f" (the {top.kind} {_clip_name(top.name, 70)} covers {_pct(top.covered_ns / max(v, 1))} of it)"
                    if top
                    else ""
                )
                + f". {fix}"
            )
            ev = Evidence(
                name="GPU idle while the host made no CUDA call",
                value=round(v / 1e6, 3),
                unit="ms",
                reference=f"{len(w.host_compute_gaps[0]):,} gaps of >= {_ms(th.HOST_COMPUTE_MIN_STRETCH_NS)} without "
                "a CUDA call",
                metric="host_compute_idle_ns",
            )
        else:
            text = texts[cause]
            if cause == "sync":
                fix, what = _sync_fix(ctx)
                if what != "a blocking call":
                    text = f"the queue had drained behind {what}. {fix}"
            ev = Evidence(
                name=f"idle time: {cause}",
                value=round(v / 1e3, 3),
                unit="us",
                reference=f"of {_ms(w.idle_ns)} idle",
            )
        head = f"{_pct(share)} of {w.scope} ({_ms(v)}"
        if cause != "copy":
            head += f", {_pct(v / idle)} of the GPU's idle time"
        gain = (
            f" Removing it saves up to {_ms(v)} of the {_ms(w.wall_ns)} ({_fmt(wall / max(wall - v, 1))}x at most)."
            if v < wall
            else ""
        )
        out.append(
            Finding(
                bottleneck=b,
                headline=f"{head}): {text}.{gain}".replace("..", "."),
                evidence=(ev,),
                share=min(1.0, share),
            )
        )
    out.sort(key=lambda f: -(f.share or 0))
    return out
