"""P1 before: a loop of small elementwise kernels with torch.cuda.synchronize() after every kernel pair.

Each step: (sin, cos), cudaDeviceSynchronize, (sin, cos), cudaDeviceSynchronize. Each synchronize makes the
host wait until the GPU has drained, so the next launch is only issued after it returns: the GPU then idles
for the return-from-sync + launch latency once per pair. The sizes (p1_n, calib.json) were picked on the
device so that this costs ~1.25x against p1_sync_pairs_after.py (the same loop without the synchronizes).
"""

from _b9 import run, torch, warm_up
from _p1 import make, pair


def step(s, i):
    pair(s)
    torch.cuda.synchronize()  # the sync after every kernel pair (removed in the after program)
    pair(s)
    torch.cuda.synchronize()


def setup():
    s = make()
    warm_up(s, step)
    return s


if __name__ == "__main__":
    run(setup, step, steps=120)
