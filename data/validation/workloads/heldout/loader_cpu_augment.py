"""A small CNN training loop starved by its DataLoader (num_workers=0), whole process, Kineto.

Each sample is "decoded" (a seeded 3x144x144 uint8 image) and augmented on the CPU with torch CPU
ops, torchvision-style: random 128x128 crop, bilinear resize to 112x112 (F.interpolate on the CPU),
random horizontal flip decided by ``torch.rand(1) < 0.5`` (a CPU tensor compared and read back:
aten::is_nonzero / aten::item on the CPU, no GPU involved), colour jitter, normalisation. Batches of
32 are collated in the main process (pin_memory off) and copied to the GPU. The CNN (3 strided convs
+ linear) needs well under a millisecond of GPU time per step; the CPU work per batch is tens of ms.
"""

import torch.nn.functional as F

from _kineto import run, torch

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


class Images(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 14

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        img = torch.randint(0, 256, (3, 144, 144), dtype=torch.uint8, generator=g)
        x = img.float().div_(255.0)
        top, left = (int(v) for v in torch.randint(0, 17, (2,), generator=g))
        x = x[:, top:top + 128, left:left + 128]
        x = F.interpolate(x[None], size=(112, 112), mode="bilinear", align_corners=False)[0]
        if torch.rand(1, generator=g) < 0.5:
            x = x.flip(-1)
        x = (x * (0.8 + 0.4 * torch.rand(3, 1, 1, generator=g))).clamp_(0.0, 1.0)
        return (x - MEAN) / STD, idx % 10


def setup():
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(Images(), batch_size=32, shuffle=True, num_workers=0,
                                         pin_memory=False, drop_last=True)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 128, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 10),
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    return {"it": iter(loader), "model": model, "opt": opt}


def step(s, i):
    x, y = next(s["it"])
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    s["opt"].zero_grad(set_to_none=True)
    loss = F.cross_entropy(s["model"](x), y)
    loss.backward()
    s["opt"].step()


run(setup, step, steps=10)
