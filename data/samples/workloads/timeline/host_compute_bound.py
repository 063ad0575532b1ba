"""host_compute_bound: a training loop starved by its DataLoader (num_workers=0, numpy augmentation).

Each step takes a batch of 64 images (3x64x64) from a DataLoader with num_workers=0: every sample is
made and augmented in numpy in the main process (random crop, flip, 3x3 box blur through 9 np.roll
shifts, brightness/contrast jitter, per-channel normalisation), then collated and copied to the GPU
(pageable, pin_memory=False). The model (two 3x3 convolutions, pooling, a linear layer) needs about a
millisecond of GPU work per step; the numpy work takes tens of milliseconds, during which the host
makes no CUDA call and the GPU waits. Fix: DataLoader workers (num_workers>0, pin_memory=True,
prefetch), or augmentation on the GPU; not CUDA graphs.
"""

import numpy as np
import torch

from _harness import main


class Augmented(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, idx):
        rng = np.random.default_rng(idx)
        img = rng.standard_normal((3, 72, 72), dtype=np.float32)  # stands in for a decoded image
        y0, x0 = rng.integers(0, 9, 2)
        img = img[:, y0:y0 + 64, x0:x0 + 64]  # random crop
        if rng.random() < 0.5:
            img = img[:, :, ::-1]  # horizontal flip
        blur = sum(np.roll(np.roll(img, dy, 1), dx, 2) for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9
        img = blur * rng.uniform(0.8, 1.2) + rng.uniform(-0.1, 0.1)
        img = (img - img.mean(axis=(1, 2), keepdims=True)) / (img.std(axis=(1, 2), keepdims=True) + 1e-5)
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), int(rng.integers(0, 10))


torch.manual_seed(0)
loader = torch.utils.data.DataLoader(Augmented(), batch_size=64, shuffle=False, num_workers=0, pin_memory=False)
batches = iter(loader)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(), torch.nn.Linear(64, 10),
).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)


def step(i: int) -> None:
    x, y = next(batches)
    x, y = x.cuda(), y.cuda()
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


main(step, warmup=3, steps=10)
