"""P1 after (also P3's null program and P4's before): p1_sync_pairs_before.py without the synchronizes.

Each step: (sin, cos), (sin, cos); the host only enqueues, so it runs ahead of the GPU and the kernels run
back to back. Captured twice (two processes) as the P3 null pair.
"""

from _b9 import run, warm_up
from _p1 import make, pair


def step(s, i):
    pair(s)
    pair(s)


def setup():
    s = make()
    warm_up(s, step)
    return s


if __name__ == "__main__":
    run(setup, step, steps=120)
