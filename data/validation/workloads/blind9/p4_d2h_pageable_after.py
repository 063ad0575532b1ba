"""P4 after: p1_sync_pairs_after.py plus a copy of p4_bytes (calib.json) to a pageable CPU tensor per step.

Each step: (sin, cos), (sin, cos), then x[:k].to("cpu") (a "log the first values" dump) into a freshly
allocated pageable tensor: cudaMemcpyAsync device -> pageable host, which the host cannot return from until
the GPU has run the step's kernels and the copy (staged through the driver's pinned buffer), then
cudaStreamSynchronize. The host no longer runs ahead: the GPU idles once per step for the copy's
wait + the relaunch. p4_bytes was picked on the device for ~1.2x slower than the before program.
"""

from _b9 import run, warm_up
from _p1 import make, pair


def step(s, i):
    pair(s)
    pair(s)
    s["dump"] = s["x"][: s["p"]["p4_bytes"] // 4].to("cpu")  # pageable D2H every step (the regression)


def setup():
    s = make()
    warm_up(s, step)
    return s


if __name__ == "__main__":
    run(setup, step, steps=120)
