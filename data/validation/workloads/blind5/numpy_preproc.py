"""Training loop whose batches are augmented with NumPy on the host, in the loop, whole process (Kineto).

Each step takes 32 uint8 images (3 x 224 x 224) from a pre-generated host pool, applies a random crop (from
256 x 256), a random horizontal flip and a per-image brightness/contrast jitter in FP32 NumPy, converts to
FP32 CHW, then copies the batch to the GPU (`torch.from_numpy(...).cuda()`, 19 MB pageable) and runs one
training step of a small conv net (Conv 3->64 7x7/2, Conv 64->128 3x3/2, Conv 128->256 3x3/2, mean pool,
Linear 256->1000, cross entropy, SGD) in BF16 autocast, channels_last. The host never waits for the GPU inside
the loop except through the blocking pageable copy. `--time`: plain ms per step, and of the NumPy part alone,
and of the GPU step alone on a fixed batch.
"""

import sys
import time

import numpy as np

from _driver import run, torch

B, S, CROP = 32, 256, 224
STEPS = 10


def setup():
    rng = np.random.default_rng(0)
    pool = rng.integers(0, 256, size=(4 * B, S, S, 3), dtype=np.uint8)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 7, stride=2, padding=3), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 128, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(128, 256, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 1000),
    ).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    labels = torch.randint(0, 1000, (B,), device="cuda")
    return {"pool": pool, "rng": rng, "net": net, "opt": opt, "labels": labels}


MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32) * 255
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32) * 255


def augment(s, i):
    rng = s["rng"]
    out = np.empty((B, 3, CROP, CROP), dtype=np.float32)
    for j in range(B):
        img = s["pool"][(i * B + j) % len(s["pool"])]
        y0, x0 = rng.integers(0, S - CROP + 1, size=2)
        crop = img[y0:y0 + CROP, x0:x0 + CROP].astype(np.float32)
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        a, b = rng.uniform(0.8, 1.2), rng.uniform(-20, 20)
        crop = np.clip(crop * a + b, 0, 255)
        out[j] = ((crop - MEAN) / STD).transpose(2, 0, 1)
    return out


def gpu_step(s, xb):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(s["net"](xb), s["labels"])
    loss.backward()
    s["opt"].step()
    s["opt"].zero_grad(set_to_none=True)


def step(s, i):
    xb = torch.from_numpy(augment(s, i)).cuda().contiguous(memory_format=torch.channels_last)
    gpu_step(s, xb)


if __name__ == "__main__":
    if "--time" in sys.argv:
        s = setup()
        for i in range(3):
            step(s, i)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(10):
            step(s, i)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        for i in range(10):
            augment(s, i)
        t2 = time.perf_counter()
        xb = torch.from_numpy(augment(s, 0)).cuda().contiguous(memory_format=torch.channels_last)
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        for i in range(10):
            gpu_step(s, xb)
        torch.cuda.synchronize()
        t4 = time.perf_counter()
        print(f"numpy_preproc: full step {(t1 - t0) / 10 * 1e3:.2f} ms, numpy augment alone {(t2 - t1) / 10 * 1e3:.2f} ms, "
              f"GPU step alone (fixed batch) {(t4 - t3) / 10 * 1e3:.2f} ms (plain, 10 steps each)")
    else:
        run(setup, step, steps=STEPS)
