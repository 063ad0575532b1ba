"""A small data-parallel training loop on 2 GPUs (torch.distributed + NCCL), one process per rank.

Each rank runs an MLP forward/backward on its own batch; DistributedDataParallel all-reduces the
gradients (NCCL kernels) and overlaps that with the backward pass. With ``--slow-rank R --slow-ms T``
rank R does T ms of extra GPU work (a chain of matmuls) before its backward in every step, so the
other ranks wait for it inside the all-reduce: a straggler.

Launch one process per GPU with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set (see
data/samples/generate_multirank.sh). Modes:
  --mode nsys   steady-state steps between cudaProfilerStart/Stop, one NVTX range per step
                (run under ``nsys profile --capture-range=cudaProfilerApi``)
  --mode torch  torch.profiler trace of the steady state (Kineto records distributedInfo), one
                ProfilerStep per step; written to --trace with the rank substituted for {rank}
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

WARMUP = 5
PROFILER_WARMUP = 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["plain", "nsys", "torch"], default="plain")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-ms", type=float, default=0.0)
    ap.add_argument("--trace", default="ddp_rank{rank}.json.gz")
    args = ap.parse_args()

    # NVLink multicast stays off on the lent machines (shared hosts).
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank = dist.get_rank()

    torch.manual_seed(0)
    width, depth, batch = 4096, 6, 2048
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    model = DDP(torch.nn.Sequential(*layers).cuda().to(torch.bfloat16), device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(batch, width, device="cuda", dtype=torch.bfloat16)
    w_slow = torch.randn(width, width, device="cuda", dtype=torch.bfloat16)

    # Extra work for the straggler: about slow_ms of matmuls (one 4096^3 bf16 matmul ~ 0.18 ms on H200).
    n_slow = 0
    if rank == args.slow_rank and args.slow_ms > 0:
        n_slow = max(1, round(args.slow_ms / 0.18))

    def step(i: int) -> None:
        opt.zero_grad(set_to_none=True)
        y = model(x)
        if n_slow:
            z = x
            for _ in range(n_slow):
                z = z @ w_slow
            y = y + 0 * z.mean()
        y.float().pow(2).mean().backward()
        opt.step()

    for i in range(WARMUP):
        step(i)
    torch.cuda.synchronize()
    dist.barrier()

    if args.mode == "torch":
        from torch.profiler import ProfilerActivity, profile, schedule

        total = PROFILER_WARMUP + args.steps
        trace = args.trace.format(rank=rank)
        with profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
            schedule=schedule(wait=0, warmup=PROFILER_WARMUP, active=args.steps, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(trace),
        ) as prof:
            for i in range(total):
                torch.cuda.nvtx.range_push(f"step {i}")
                step(i)
                torch.cuda.nvtx.range_pop()
                if i == total - 1:
                    torch.cuda.synchronize()
                prof.step()
        print(f"rank {rank}: wrote {trace}", flush=True)
    else:
        if args.mode == "nsys":
            torch.cuda.profiler.start()
        t0 = time.perf_counter()
        for i in range(args.steps):
            torch.cuda.nvtx.range_push(f"step {i}")
            step(i)
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if args.mode == "nsys":
            torch.cuda.profiler.stop()
        print(f"rank {rank}: {args.steps} steps, {dt / args.steps * 1e3:.2f} ms per step", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
