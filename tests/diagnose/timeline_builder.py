"""A small program-like builder of synthetic timelines: host calls, GPU queueing, ranges, host operators.

Times advance on one host thread; GPU work queues on one stream (a kernel starts when both its launch
call has returned and the previous GPU work has finished), as CUDA runs it.
"""

from __future__ import annotations

import numpy as np

from kprof.timeline_model import (
    ApiTable,
    CopyTable,
    GpuInfo,
    HostOpTable,
    KernelTable,
    RangeTable,
    StepTable,
    Timeline,
)

US = 1_000
MS = 1_000_000


class Builder:
    def __init__(self, gpu: str = "NVIDIA H200") -> None:
        self.t = 0
        self.gpu_free = 0
        self.corr = 1
        self.gpu = gpu
        self.kernels: list[tuple[int, int, int, str, int]] = []  # start, end, corr, name, device
        self.dims: list[tuple[int, int]] = []  # per kernel: grid x, block x
        self.api: list[tuple[int, int, int, str]] = []
        self.copies: list[tuple[int, int, int, int, int, int]] = []  # start, end, corr, dir, bytes, host kind
        self.ranges: list[tuple[int, int, str]] = []
        self.ops: list[tuple[int, int, str]] = []
        self.steps: list[tuple[int, int, int]] = []

    # ------------------------------------------------------------------ host
    def call(self, name: str, dur: int) -> int:
        """A CUDA API call of ``dur`` ns that gives the GPU no work; returns its correlation id."""
        c = self.corr
        self.corr += 1
        self.api.append((self.t, self.t + dur, c, name))
        self.t += dur
        return c

    def host(self, dur: int, op: str | None = None, nvtx: str | None = None) -> None:
        """``dur`` ns of host work with no CUDA call (optionally inside a CPU operator or an NVTX range)."""
        if op:
            self.ops.append((self.t, self.t + dur, op))
        if nvtx:
            self.ranges.append((self.t, self.t + dur, nvtx))
        self.t += dur

    # ------------------------------------------------------------------ GPU work
    def launch(
        self, kernel: str, kdur: int, call: int = 5 * US, device: int = 0, grid: int = 1, block: int = 128
    ) -> None:
        c = self.corr
        self.corr += 1
        self.api.append((self.t, self.t + call, c, "cudaLaunchKernel_v7000"))
        self.t += call
        start = max(self.gpu_free, self.t + 1 * US)
        self.kernels.append((start, start + kdur, c, kernel, device))
        self.dims.append((grid, block))
        self.gpu_free = start + kdur

    def copy(
        self, nbytes: int, dur: int, direction: int = 1, host_kind: int = 0, blocking: bool = True
    ) -> None:
        """A copy on the stream; a blocking call returns when it is done (pageable copies always block)."""
        c = self.corr
        self.corr += 1
        t0 = self.t
        start = max(self.gpu_free, t0 + 2 * US)
        self.copies.append((start, start + dur, c, direction, nbytes, host_kind))
        self.gpu_free = start + dur
        end = start + dur + 2 * US if blocking else t0 + 4 * US
        self.api.append((t0, end, c, "cudaMemcpyAsync_v3020"))
        self.t = end

    def sync(self) -> None:
        """cudaStreamSynchronize: the host waits until the GPU has finished."""
        c = self.corr
        self.corr += 1
        end = max(self.t + 2 * US, self.gpu_free + 500)
        self.api.append((self.t, end, c, "cudaStreamSynchronize_v3020"))
        self.t = end

    def mark(self, name: str, start: int) -> None:
        """An NVTX range from ``start`` to now."""
        self.ranges.append((start, self.t, name))

    def step(self, number: int, start: int) -> None:
        """A profiler step (``ProfilerStep#N``) from ``start`` to now."""
        self.steps.append((start, self.t, number))

    # ------------------------------------------------------------------ output
    def build(self, source: str = "app.sqlite", fmt: str = "nsys") -> Timeline:
        knames = tuple(dict.fromkeys(k[3] for k in self.kernels)) or ("k",)
        k = np.array([(s, e, c, knames.index(n), d) for s, e, c, n, d in self.kernels], np.int64).reshape(
            -1, 5
        )
        anames = tuple(dict.fromkeys(a[3] for a in self.api)) or ("x",)
        a = np.array([(s, e, c, anames.index(n)) for s, e, c, n in self.api], np.int64).reshape(-1, 4)
        cp = np.array(self.copies, np.int64).reshape(-1, 6)
        rnames = tuple(dict.fromkeys(r[2] for r in self.ranges))
        r = np.array([(s, e, rnames.index(n)) for s, e, n in self.ranges], np.int64).reshape(-1, 3)
        onames = tuple(dict.fromkeys(o[2] for o in self.ops))
        o = np.array([(s, e, onames.index(n)) for s, e, n in self.ops], np.int64).reshape(-1, 3)
        st = np.array(self.steps, np.int64).reshape(-1, 3)
        devices = sorted({int(x) for x in k[:, 4]}) or [0]
        dims = np.array(self.dims, np.int32).reshape(-1, 2)
        grid = np.column_stack([dims[:, 0], np.ones((len(dims), 2), np.int32)]).astype(np.int32)
        block = np.column_stack([dims[:, 1], np.ones((len(dims), 2), np.int32)]).astype(np.int32)
        return Timeline(
            source=source,
            format=fmt,
            command="python3 train.py",
            gpus=tuple(GpuInfo(device=d, name=self.gpu) for d in devices),
            kernels=KernelTable(
                start_ns=k[:, 0],
                end_ns=k[:, 1],
                correlation=k[:, 2],
                name_id=k[:, 3].astype(np.int32),
                device=k[:, 4].astype(np.int16),
                stream=np.full(len(k), 7, np.int32),
                names=knames,
                grid=grid,
                block=block,
            ),
            api=ApiTable(
                start_ns=a[:, 0],
                end_ns=a[:, 1],
                correlation=a[:, 2],
                name_id=a[:, 3].astype(np.int32),
                thread=np.zeros(len(a), np.int32),
                names=anames,
                category=ApiTable.categories_for(anames, a[:, 3].astype(np.int32)),
            ),
            copies=CopyTable(
                start_ns=cp[:, 0],
                end_ns=cp[:, 1],
                correlation=cp[:, 2],
                direction=cp[:, 3].astype(np.int8),
                bytes=cp[:, 4],
                src_kind=np.where(cp[:, 3] == 1, cp[:, 5], 2).astype(np.int8),
                dst_kind=np.where(cp[:, 3] == 2, cp[:, 5], 2).astype(np.int8),
                device=np.zeros(len(cp), np.int16),
                stream=np.full(len(cp), 7, np.int32),
            ),
            ranges=RangeTable(
                start_ns=r[:, 0],
                end_ns=r[:, 1],
                thread=np.zeros(len(r), np.int32),
                name_id=r[:, 2].astype(np.int32),
                names=rnames,
            ),
            host_ops=HostOpTable(
                start_ns=o[:, 0],
                end_ns=o[:, 1],
                thread=np.zeros(len(o), np.int32),
                name_id=o[:, 2].astype(np.int32),
                names=onames,
            ),
            steps=StepTable(
                start_ns=st[:, 0], end_ns=st[:, 1], thread=np.zeros(len(st), np.int32), number=st[:, 2]
            ),
            threads=("main",),
        )


# ---------------------------------------------------------------------- whole-process programs


def start_up(b: Builder, context_ms: float = 250, setup_ms: float = 40) -> None:
    """What a PyTorch process does before its loop: the first CUDA call creates the context, then a few
    ordinary allocations and host-side setup (imports, building the model)."""
    b.call("cuModuleGetLoadingMode", 1 * US)
    b.call("cudaMalloc_v3020", int(context_ms * MS))  # the first runtime call: context creation
    for _ in range(5):
        b.call("cudaMalloc_v3020", 200 * US)
    b.host(int(setup_ms * MS))


KERNELS = tuple(f"void elementwise_{i}(float*)" for i in range(5))


def launch_bound_iteration(b: Builder, first: bool = False, launches: int = 20) -> None:
    """One iteration of a launch-bound loop: short kernels, Python dispatch between the launches; the
    first iteration loads each kernel's module lazily (cuLibraryLoadData)."""
    for j in range(launches):
        if first and j < len(KERNELS):
            b.call("cuLibraryLoadData", 8 * MS)
        b.host(8 * US)  # Python and framework dispatch
        b.launch(KERNELS[j % len(KERNELS)], 2 * US)


def teardown(b: Builder, frees: int = 300, unloads: int = 20) -> None:
    """The end of a process: synchronize, then free everything and unload the modules."""
    b.sync()
    for _ in range(frees):
        b.call("cudaFree_v3020", 500 * US)
    for _ in range(unloads):
        b.call("cuModuleUnload", 5 * MS)


def whole_process_launch_bound(
    iters: int = 400, nvtx: bool = False, end: bool = False, context_ms: float = 250
) -> Timeline:
    """A whole-process capture of a short launch-bound training loop: start-up over half of it."""
    b = Builder()
    start_up(b, context_ms=context_ms)
    for i in range(iters):
        t0 = b.t
        launch_bound_iteration(b, first=i == 0)
        if nvtx:
            b.mark(f"step {i}", t0)
    if end:
        teardown(b)
    return b.build()


def one_pass_program(kernels: int = 30) -> Timeline:
    """Start-up, then one pass through different kernels (an inference script run once): nothing repeats."""
    b = Builder()
    start_up(b)
    b.copy(64 << 20, 3 * MS, host_kind=1)
    for j in range(kernels):
        b.host(20 * US)
        b.launch(f"void layer_{j}(float*)", 200 * US)
    b.sync()
    return b.build()


def dataloader_starved(
    iters: int = 10,
    fmt: str = "kineto",
    op: str | None = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    nvtx: str | None = None,
    load_ms: float = 20,
    item: bool = True,
    steps: bool = True,
) -> Timeline:
    """A training loop whose batches are loaded and augmented in the main process (num_workers=0): each step
    spends ``load_ms`` in the data loader with no CUDA call, then launches its kernels, then reads the
    loss with .item() (a blocking 4-byte copy)."""
    b = Builder()
    for i in range(iters):
        t0 = b.t
        b.host(int(load_ms * MS), op=op, nvtx=nvtx)
        b.copy(3 << 20, 300 * US, host_kind=1, blocking=False)  # the batch, pinned, non_blocking
        for j in range(30):
            b.host(10 * US)
            b.launch(KERNELS[j % len(KERNELS)], 200 * US)
        if item:
            b.copy(4, 2 * US, direction=2, host_kind=0)
        if steps:
            if fmt == "kineto":
                b.step(i, t0)
            else:
                b.mark(f"step {i}", t0)
    return b.build(source="train.pt.trace.json" if fmt == "kineto" else "train.sqlite", fmt=fmt)
