"""S3 (must-not-fire twin of S1): a GPU-bound loop of big GEMMs with one .item() per step at its end.

Each step: h = x @ W (BF16, 8192 x 4096 @ 4096 x 8192: ~550 GFLOP, ~0.7-0.8 ms on the H200), then
peaks.append(h.amax().item()). The .item() blocks the host once per step, but the GPU only idles for the
return-from-sync + relaunch (~tens of us) against ~0.8 ms of GEMM: the time is in the GEMM.
step_fixed (the control timed by plain_runner.py, never captured): keep the peak on the GPU
(peaks_gpu[i].copy_(h.amax())) and read the buffer once at the end.
"""

from _b9 import DEV, run, torch, warm_up

M, K, N = 8192, 4096, 8192


def step(s, i):
    h = s["x"] @ s["w"]
    s["peaks"].append(h.amax().item())  # one blocking read per step, after the step's GPU work


def step_fixed(s, i):
    h = s["x"] @ s["w"]
    s["peaks_gpu"][i % 256].copy_(h.amax())


def make():
    torch.manual_seed(0)
    m, k, n = (M, K, N) if DEV == "cuda" else (64, 64, 64)
    x = torch.randn(m, k, device=DEV).to(torch.bfloat16)
    w = (torch.randn(k, n, device=DEV) / k**0.5).to(torch.bfloat16)
    return {"x": x, "w": w, "peaks": [], "peaks_gpu": torch.zeros(256, device=DEV, dtype=torch.bfloat16)}


def setup():
    s = make()
    warm_up(s, step)
    return s


def setup_fixed():
    s = make()
    warm_up(s, step_fixed)
    return s


if __name__ == "__main__":
    run(setup, step, steps=100)
