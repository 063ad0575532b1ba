"""Inference of a 3-layer 3x3 convolution stack, BF16 channels_last, batch 64 x 256 x 56 x 56, whole
process (Kineto). ~237 GFLOP per convolution (~0.7 TFLOP per step); the host enqueues a step's
five ops in well under a millisecond and never waits (no read-back until the final synchronize)."""

from _driver import run, torch


def setup():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(256, 256, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(256, 256, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(256, 256, 3, padding=1),
    ).to(device="cuda", dtype=torch.bfloat16, memory_format=torch.channels_last).eval()
    x = torch.randn(64, 256, 56, 56, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    return {"net": net, "x": x}


def step(s, i):
    with torch.no_grad():
        s["y"] = s["net"](s["x"])


if __name__ == "__main__":
    run(setup, step, steps=40)
