"""Dense PageRank by power iteration with a convergence test that reads the residual back every
iteration (whole process, Kineto). The Google matrix G = d * M + (1 - d) / n (column-stochastic,
n = 7168, FP32, 205 MB) is built once; each iteration is r_next = G @ r (one GEMV, ~50 us of DRAM
traffic), delta = torch.dist(r_next, r, 1), and ``delta.item()`` (a 4-byte device-to-host copy and a
stream synchronize) decides whether to stop. The tolerance is 0 (a fixed-iteration benchmark setting),
so all 300 iterations run, and every one of them pays the read-back."""

from _kineto import run, torch

N, D, TOL = 7168, 0.85, 0.0  # TOL 0: never met (delta >= 0), so all 300 iterations run


def setup():
    torch.manual_seed(0)
    adj = (torch.rand(N, N, device="cuda") < 0.01).float()
    adj += torch.eye(N, device="cuda")
    m = adj / adj.sum(dim=0, keepdim=True)  # column-stochastic
    g = D * m + (1.0 - D) / N
    del adj, m
    return {"G": g, "r": torch.full((N,), 1.0 / N, device="cuda"), "done": False, "deltas": []}


def step(s, i):
    if s["done"]:
        return
    r_next = torch.mv(s["G"], s["r"])
    delta = torch.dist(r_next, s["r"], 1).item()
    s["deltas"].append(delta)
    s["r"] = r_next
    if delta < TOL:
        s["done"] = True


run(setup, step, steps=300)
