"""S1: a loop that blocks on the host every step through .item() used in Python control flow.

Each step: h = x @ W (BF16 GEMM, s1_rows x 4096 x 4096, s1_rows = 2048 from calib.json), then
``if h.amax().item() > LIMIT: x.mul_(0.5)`` -- a guard on the activations' peak. Python needs the value to
choose the branch, so .item() copies it to the host and synchronizes the stream every step; the next step's
GEMM is only launched after the host returns from that sync, so the GPU idles right after each blocking call
while the host re-dispatches. (The branch is taken in the first warm-up step only: it halves x once.)
step_fixed (the control timed by plain_runner.py, never captured): the same guard decided one step late from
a pinned copy: copy the peak with non_blocking=True into pinned memory, record an event, and at the next step
wait on the PREVIOUS step's event (already passed: the GPU is busy with this step's GEMM) before branching.
"""

from _b9 import DEV, params, run, torch, warm_up

D, LIMIT = 4096, 4.0


def step(s, i):
    h = s["x"] @ s["w"]
    if h.amax().item() > LIMIT:  # .item() in Python control flow: D2H copy + stream sync every step
        s["x"].mul_(0.5)
    s["h"] = h


def step_fixed(s, i):
    h = s["x"] @ s["w"]
    peak = h.amax()
    if s["ev"] is not None:  # the previous step's peak, one step late, without draining the GPU
        s["ev"].synchronize()
        if float(s["peak_host"]) > LIMIT:
            s["x"].mul_(0.5)
    s["peak_host"].copy_(peak, non_blocking=True)
    if DEV == "cuda":
        s["ev"] = s["evs"][i % 2]
        s["ev"].record()
    s["h"] = h


def make():
    p = params()
    torch.manual_seed(0)
    x = torch.randn(p["s1_rows"], D, device=DEV).to(torch.bfloat16)
    w = (torch.randn(D, D, device=DEV) / D**0.5).to(torch.bfloat16)
    s = {"x": x, "w": w, "h": None, "p": p, "ev": None}
    s["peak_host"] = torch.zeros((), dtype=torch.bfloat16, pin_memory=DEV == "cuda")
    s["evs"] = [torch.cuda.Event(), torch.cuda.Event()] if DEV == "cuda" else []
    return s


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
