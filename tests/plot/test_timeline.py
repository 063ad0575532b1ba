"""The timeline chart: rows per stream and host thread, idle gaps shaded and labelled, aggregation."""

from __future__ import annotations

import time

import numpy as np
import pytest
from matplotlib.collections import PolyCollection

from kprof.plot import Gaps, default_window, idle_gaps, plot_timeline
from kprof.plot.timeline import PIXELS, UNTRACED
from kprof.timeline_model import ApiTable, KernelTable, Timeline

from .synth import timeline


def _colls(ax, gid):
    return [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_gid() == gid]


def _ytick_labels(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


def test_rows_per_stream_and_host():
    tl = timeline(40, streams=(7, 9))
    ax = plot_timeline(tl)
    labels = _ytick_labels(ax)
    assert labels == ["GPU idle (cause)", "host python3 (main)", "GPU0 stream 7", "GPU0 stream 9"]
    kern = _colls(ax, "row-kernel")
    assert len(kern) == 2  # one collection per stream row
    assert sum(len(c.get_paths()) for c in kern) == 40  # every kernel drawn (no aggregation needed)
    assert len(_colls(ax, "row-api_launch")) == 1
    # x is milliseconds from the window start, covering the whole capture
    span = tl.span_ns()
    assert ax.get_xlim() == pytest.approx((0, (span[1] - span[0]) / 1e6))
    assert ax.get_xlabel() == "time from window start [ms]"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"kernel", "host: launch", "GPU idle"} <= set(legend)


def test_gaps_are_shaded_and_labelled_with_what_the_host_did():
    tl = timeline(20, period_ns=10_000, kernel_ns=4_000)
    g = idle_gaps(tl)
    assert len(g) == 19
    assert np.all(g.end_ns - g.start_ns == 6_000)
    # the host launched during 1 us of each 6 us gap: mostly outside CUDA calls
    assert set(g.cause) == {UNTRACED}
    ax = plot_timeline(tl)
    (shade,) = _colls(ax, "gaps")
    assert len(shade.get_paths()) >= 19
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "gap-label"]
    assert labels and all(t.startswith(UNTRACED) for t in labels)
    assert all(t.endswith("µs") for t in labels)


def test_sync_gaps_and_copies_and_sync_rows():
    tl = timeline(30, sync_every=5)
    ax = plot_timeline(tl)
    assert _colls(ax, "row-copy_dtoh") and _colls(ax, "row-api_sync")
    causes = set(idle_gaps(tl).cause)
    assert "sync" in causes
    # without host rows, the sync records show where the host blocked, on the stream's row
    ax = plot_timeline(tl, host=False)
    assert _colls(ax, "row-sync") and not _colls(ax, "row-api_sync")


def _device_wide_syncs(tl):
    import dataclasses

    return dataclasses.replace(
        tl, syncs=dataclasses.replace(tl.syncs, stream=np.full(len(tl.syncs), -1, np.int32))
    )


@pytest.mark.parametrize("host", [True, False])
def test_device_wide_syncs_draw_no_row_of_their_own(host):
    tl = _device_wide_syncs(timeline(30, sync_every=5))
    ax = plot_timeline(tl, host=host)
    labels = _ytick_labels(ax)
    assert not any("device-wide" in x for x in labels)  # was an empty row on every nsys timeline
    assert [x for x in labels if x.startswith("GPU0")] == ["GPU0 stream 7"]
    if not host:
        (sync,) = _colls(ax, "row-sync")  # drawn on the stream row of its device
        assert len(sync.get_paths()) == len(tl.syncs)


def test_legend_entries_have_distinct_colours():
    from matplotlib.colors import to_hex

    tl = _device_wide_syncs(timeline(30, sync_every=5))
    for host in (True, False):
        leg = plot_timeline(tl, host=host).get_legend()
        colours = [to_hex(h.get_facecolor()) for h in leg.legend_handles]
        names = [t.get_text() for t in leg.get_texts()]
        assert len(set(colours)) == len(colours), dict(zip(names, colours, strict=True))


def test_given_gap_causes_are_used():
    tl = timeline(10)
    lo, _hi = tl.span_ns()
    gaps = [(lo + 20_000, lo + 26_000, "device_wait"), (lo + 50_000, lo + 50_001, "x")]
    ax = plot_timeline(tl, gaps=gaps)
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "gap-label"]
    assert labels == ["device_wait 6 µs"]  # the 1 ns gap is below a pixel: not shaded
    assert isinstance(Gaps(np.array([1]), np.array([2]), ("a",)), Gaps)


def test_window_zooms_and_title_says_where():
    tl = timeline(1000)
    w = default_window(tl, events=100)
    assert w is not None
    ax = plot_timeline(tl, window=w)
    assert ax.get_xlim() == pytest.approx((0, (w[1] - w[0]) / 1e6))
    assert sum(len(c.get_paths()) for c in _colls(ax, "row-kernel")) == 100
    assert " window at +" in ax.get_title()
    assert default_window(timeline(10), events=100) is None


def test_no_host_row_when_asked():
    ax = plot_timeline(timeline(10), host=False)
    assert not any(lab.startswith("host") for lab in _ytick_labels(ax))


def test_names_are_literal_text_even_with_dollars():
    tl = timeline(5, kernel_name="k$x$")
    tl = Timeline(
        source="/c/<b>$run$.sqlite", format="nsys", kernels=tl.kernels, api=tl.api, threads=("py$th$",)
    )
    ax = plot_timeline(tl)
    assert ax.get_title().startswith(r"<b>\$run\$.sqlite")  # matplotlib would read $...$ as math
    assert r"host py\$th\$" in _ytick_labels(ax)
    ax.figure.canvas.draw()  # renders: no mathtext parse error


def _big(n: int) -> Timeline:
    rng = np.random.default_rng(0)
    starts = np.cumsum(rng.integers(1_000, 5_000, n)).astype(np.int64)
    ends = starts + rng.integers(300, 900, n)
    k = KernelTable(
        start_ns=starts,
        end_ns=ends,
        device=np.zeros(n, np.int16),
        stream=(7 + np.arange(n) % 2).astype(np.int32),
        correlation=np.arange(n, dtype=np.int64),
        name_id=np.zeros(n, np.int32),
        names=("k",),
    )
    api = ApiTable(
        start_ns=starts - 800,
        end_ns=starts - 100,
        thread=np.zeros(n, np.int32),
        correlation=np.arange(n, dtype=np.int64),
        name_id=np.zeros(n, np.int32),
        names=("cudaLaunchKernel",),
        category=np.ones(n, np.int8),
    )
    return Timeline(source="big.sqlite", format="nsys", kernels=k, api=api, threads=("main",))


def test_a_million_events_draw_in_seconds_as_an_aggregated_view():
    tl = _big(1_000_000)
    t0 = time.perf_counter()
    ax = plot_timeline(tl)
    ax.figure.canvas.draw()
    elapsed = time.perf_counter() - t0
    assert elapsed < 20  # about 1 s alone on the dev machine; generous for a shared CI box
    assert "aggregated view" in ax.get_title()
    for c in _colls(ax, "row-kernel") + _colls(ax, "row-api_launch"):
        assert len(c.get_paths()) <= PIXELS + 1  # merged at pixel resolution
    # a window of a few hundred events is drawn event by event
    w = default_window(tl, events=300)
    ax = plot_timeline(tl, window=w)
    assert "aggregated" not in ax.get_title()
    assert sum(len(c.get_paths()) for c in _colls(ax, "row-kernel")) == 300
