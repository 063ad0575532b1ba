"""A small compiled model run from a fresh process, whole process under nsys (blind7 timelines).

    python3 compile_mlp.py [--steps N] [--eager]

A 4-block pre-LN MLP (x + fc2(gelu(fc1(ln(x)))), D=2048, hidden 8192, then LayerNorm + Linear(2048, 16)),
BF16, built on the GPU, wrapped in torch.compile (mode "default", so no autotuning), and called on one
[4096, 2048] batch under torch.no_grad(): the first call traces and compiles (Dynamo, AOT, Inductor, Triton)
and then runs the forward once (about 19 kernels: 9 cuBLAS GEMMs and the fused LayerNorm / GELU / residual
Triton kernels). With --steps 0 (default) the process then exits: a one-shot program. With --steps 200 the
same forward is repeated 200 times (a steady state); each step starts with a 12-byte pinned host-to-device
copy of the step number (the loop's marker) and is an NVTX range "step". NVTX ranges also mark "setup" and
"compile + first call". --eager: no torch.compile (control, plain only).
TORCHINDUCTOR_COMPILE_THREADS=1 (set here before importing torch): Inductor compiles its kernels in this
process instead of a pool of worker processes (keeps the capture to one process). Where the compile cache
lives is set by the caller (generate.sh gives every run a fresh TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR).
Prints wall-clock phase durations (time.perf_counter) and a checksum.
"""

import os
import sys
import time

T0 = time.perf_counter()
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

T_IMPORT = time.perf_counter()
D, H, T = 2048, 8192, 4096


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, H)
        self.fc2 = nn.Linear(H, D)

    def forward(self, x):
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln(x))))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(4)])
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, 16)

    def forward(self, x):
        return self.head(self.ln(self.blocks(x)))


def main(argv):
    steps = int(argv[argv.index("--steps") + 1]) if "--steps" in argv else 0
    eager = "--eager" in argv
    nvtx = torch.cuda.nvtx
    nvtx.range_push("setup")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = MLP().to(torch.bfloat16).eval()
        x = torch.randn(T, D, dtype=torch.bfloat16)
    marker = torch.zeros(3, dtype=torch.int32, device="cuda")
    host = torch.zeros(3, dtype=torch.int32).pin_memory()
    torch.cuda.synchronize()
    nvtx.range_pop()
    t_setup = time.perf_counter()
    fwd = model if eager else torch.compile(model)  # mode="default"
    nvtx.range_push("compile + first call")
    with torch.no_grad():
        y = fwd(x)
    torch.cuda.synchronize()
    nvtx.range_pop()
    t_first = time.perf_counter()
    per = []
    for i in range(steps):
        t = time.perf_counter()
        nvtx.range_push("step")
        host[0] = i
        marker.copy_(host, non_blocking=True)
        with torch.no_grad():
            y = fwd(x)
        nvtx.range_pop()
        per.append(time.perf_counter() - t)
    torch.cuda.synchronize()
    t_loop = time.perf_counter()
    chk = float(y.float().abs().mean())
    t_end = time.perf_counter()
    loop = ""
    if steps:
        loop = (f", {steps} steps {t_loop - t_first:.3f} s = {1e3 * (t_loop - t_first) / steps:.3f} ms per step "
                f"(host returned after a median {1e3 * sorted(per)[len(per) // 2]:.3f} ms)")
    print(f"compile_mlp ({'eager' if eager else 'torch.compile default'}, steps={steps}): import torch "
          f"{T_IMPORT - T0:.3f} s, setup {t_setup - T_IMPORT:.3f} s, "
          f"{'first call' if eager else 'compile + first call'} {t_first - t_setup:.3f} s{loop}; "
          f"checksum {chk:.5f}; python start to end {t_end - T0:.3f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
