"""Training of a torch.compile'd transformer FFN block (LayerNorm -> Linear 4096->16384 -> GELU -> Linear
16384->4096, residual; BF16 weights, 8192 tokens), whole process (nsys). The process imports torch,
compiles the block (Dynamo + AOTAutograd + Inductor; warm caches when run after the check phase), then
runs 30 steps of forward + backward + SGD with no host read-back (~6.6 TFLOP per step)."""

import os

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no compile-worker subprocesses in the capture

from _driver import run, torch  # noqa: E402

T, D, F = 8192, 4096, 16384


class FFN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(D)
        self.up = torch.nn.Linear(D, F)
        self.down = torch.nn.Linear(F, D)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.ln(x))))


def loss_fn(net, x):
    return net(x).float().pow(2).mean()


def setup():
    torch.manual_seed(0)
    net = FFN().to(device="cuda", dtype=torch.bfloat16)
    opt = torch.optim.SGD(net.parameters(), lr=1e-4, foreach=True)
    step_fn = torch.compile(loss_fn)
    x = torch.randn(T, D, device="cuda", dtype=torch.bfloat16)
    return {"net": net, "opt": opt, "f": step_fn, "x": x}


def step(s, i):
    loss = s["f"](s["net"], s["x"])
    loss.backward()
    s["opt"].step()
    s["opt"].zero_grad(set_to_none=True)
    s["loss"] = loss.detach()


if __name__ == "__main__":
    run(setup, step, steps=30)
