"""A small-CNN training loop fed by a DataLoader with 10 worker processes and pinned memory, whole
process (Kineto).

Every sample is "decoded" and augmented in numpy inside a worker (random 112 x 112 crop of a 3 x 128 x 128
image, horizontal flip, a 5-tap binomial blur along x, brightness/contrast jitter, normalization);
DataLoader(batch_size=64, num_workers=10, pin_memory=True, prefetch_factor=4, persistent_workers=True).
The main process only moves each pinned batch to the GPU (non_blocking) and runs forward + backward + SGD
of a BF16 channels_last CNN (stem conv 3->256 stride 2, then 6 x Conv2d(256, 256, 3) + ReLU at 56 x 56,
average pool, Linear(256, 1000)): ~4.3 TFLOP per step, no host read-back.
`--loader-only`: time how fast the loader alone delivers batches (plain, no GPU work).
"""

import sys
import time

import numpy as np

from _driver import run, torch

BATCH, WORKERS = 64, 10
K5 = np.array([1, 4, 6, 4, 1], dtype=np.float32) / 16


class AugmentedImages(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.random((3, 128, 128), dtype=np.float32)  # the "decoded" image
        y0, x0 = rng.integers(0, 17, size=2)
        img = img[:, y0:y0 + 112, x0:x0 + 112]
        if rng.random() < 0.5:
            img = img[:, :, ::-1]
        p = np.pad(img, ((0, 0), (0, 0), (2, 2)), mode="reflect")
        img = sum(K5[k] * p[:, :, k:k + 112] for k in range(5))  # blur along x
        img = (img - img.mean()) * np.float32(rng.uniform(0.8, 1.2)) + np.float32(rng.uniform(-0.1, 0.1))
        img = (img - 0.5) / 0.25
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), int(rng.integers(0, 1000))


def loader():
    return torch.utils.data.DataLoader(AugmentedImages(), batch_size=BATCH, shuffle=False, num_workers=WORKERS,
                                       pin_memory=True, prefetch_factor=4, persistent_workers=True)


def setup():
    torch.manual_seed(0)
    C = 256
    layers = [torch.nn.Conv2d(3, C, 3, stride=2, padding=1), torch.nn.ReLU()]
    for _ in range(6):
        layers += [torch.nn.Conv2d(C, C, 3, padding=1), torch.nn.ReLU()]
    layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(C, 1000)]
    net = torch.nn.Sequential(*layers).to(device="cuda", dtype=torch.bfloat16, memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9, foreach=True)
    return {"net": net, "opt": opt, "it": iter(loader())}


def step(s, i):
    x, y = next(s["it"])
    x = x.to("cuda", non_blocking=True).to(dtype=torch.bfloat16, memory_format=torch.channels_last)
    y = y.to("cuda", non_blocking=True)
    loss = torch.nn.functional.cross_entropy(s["net"](x).float(), y)
    loss.backward()
    s["opt"].step()
    s["opt"].zero_grad(set_to_none=True)
    s["loss"] = loss.detach()


if __name__ == "__main__":
    if "--loader-only" in sys.argv:
        it = iter(loader())
        for _ in range(8):
            next(it)
        t0 = time.perf_counter()
        for _ in range(40):
            next(it)
        print(f"loader alone: {(time.perf_counter() - t0) / 40 * 1e3:.2f} ms per batch of {BATCH} ({WORKERS} workers)")
    else:
        run(setup, step, steps=22)
