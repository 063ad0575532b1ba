"""A training loop starved by its DataLoader (whole process, no NVTX).

DataLoader(num_workers=0, pin_memory=False), batch 256 of 1-D signals (4096 floats), augmented in
numpy per sample in the main process: random shift (np.roll), random low-pass through np.fft.rfft /
irfft, additive noise, normalisation. The model is a 3-layer MLP (4096-2048-2048-10) trained with
SGD: well under a millisecond of GPU work per step, against tens of milliseconds of numpy per batch.
The GPU waits while the host augments; those gaps hold no CUDA calls.
"""

import numpy as np

from _whole import run, torch


class Signals(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 16

    def __getitem__(self, idx):
        rng = np.random.default_rng(idx)
        sig = rng.standard_normal(4096).astype(np.float32)
        sig = np.roll(sig, int(rng.integers(-64, 64)))
        spec = np.fft.rfft(sig)
        spec[int(rng.integers(200, 1500)):] = 0  # random low-pass
        sig = np.fft.irfft(spec, n=4096).astype(np.float32)
        sig += rng.normal(0.0, 0.05, 4096).astype(np.float32)
        sig = (sig - sig.mean()) / (sig.std() + 1e-6)
        return torch.from_numpy(sig), int(idx % 10)


def setup():
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(Signals(), batch_size=256, shuffle=True, num_workers=0,
                                         pin_memory=False, drop_last=True)
    model = torch.nn.Sequential(
        torch.nn.Linear(4096, 2048), torch.nn.ReLU(),
        torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
        torch.nn.Linear(2048, 10),
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    return {"it": iter(loader), "model": model, "opt": opt}


def step(s, i):
    x, y = next(s["it"])
    x, y = x.cuda(), y.cuda()
    s["opt"].zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(s["model"](x), y)
    loss.backward()
    s["opt"].step()


run(setup, step, steps=12, nvtx=False)
