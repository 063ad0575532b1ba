"""Token-by-token decoding of a small transformer, batch 1 (whole process, no NVTX).

4 layers, width 512, KV cache in preallocated tensors, greedy argmax kept on the GPU (no read-back).
Every token dispatches ~65 small kernels (layer norms, 1x512 GEMVs, attention over the cache, GELU,
residual adds) one PyTorch call at a time; each kernel runs a few microseconds, less than the host
needs to dispatch it, so the GPU idles between launches. 48 tokens.
"""

import math

from _whole import run, torch

D, LAYERS, VOCAB, MAX_T = 512, 4, 1000, 64


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D)
        self.qkv = torch.nn.Linear(D, 3 * D)
        self.o = torch.nn.Linear(D, D)
        self.ln2 = torch.nn.LayerNorm(D)
        self.ff1 = torch.nn.Linear(D, 4 * D)
        self.ff2 = torch.nn.Linear(4 * D, D)

    def forward(self, h, kc, vc, t):
        q, k, v = self.qkv(self.ln1(h)).chunk(3, dim=-1)
        kc[t] = k[0]
        vc[t] = v[0]
        att = torch.softmax(q @ kc[: t + 1].T / math.sqrt(D), dim=-1) @ vc[: t + 1]
        h = h + self.o(att)
        return h + self.ff2(torch.nn.functional.gelu(self.ff1(self.ln2(h))))


def setup():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(VOCAB, D).cuda()
    blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS)).cuda().eval()
    head = torch.nn.Linear(D, VOCAB).cuda()
    kc = torch.zeros(LAYERS, MAX_T, D, device="cuda")
    vc = torch.zeros(LAYERS, MAX_T, D, device="cuda")
    tok = torch.ones(1, dtype=torch.long, device="cuda")
    return {"emb": emb, "blocks": blocks, "head": head, "kc": kc, "vc": vc, "tok": tok}


def step(s, t):
    with torch.no_grad():
        h = s["emb"](s["tok"])
        for layer, blk in enumerate(s["blocks"]):
            h = blk(h, s["kc"][layer], s["vc"][layer], t)
        s["tok"] = s["head"](h).argmax(dim=-1)


run(setup, step, steps=48, nvtx=False)
