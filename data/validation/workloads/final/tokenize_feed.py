"""A text classifier fed by a pure-Python tokenizer, whole process (captured with nsys).

Every step tokenizes 256 sentences in Python (lower-casing, punctuation stripping, a vocabulary
lookup, and a 3-character sub-word split with a hashed fallback for unknown words), pads them to 64
ids, builds the batch with torch.tensor (a CPU op) and only then runs a tiny model on the GPU:
embedding (32768 x 256), mean over the sequence, one Linear(256, 512), argmax, accumulated on the
GPU (no read-back). NVTX ranges "tokenize" and "model" mark the two halves of every step.
"""

import random

from _driver import run, torch

B, L, V, D = 256, 64, 32768, 256


def setup():
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 11))) for _ in range(12000)]
    vocab = {w: i + 1 for i, w in enumerate(words[:6000])}  # the other half is out of vocabulary
    pieces = {}
    for w in words[:6000]:
        for k in range(0, len(w), 3):
            pieces.setdefault(w[k:k + 3], len(pieces) + 6001)
    punct = [",", ".", ";", "!", "?"]
    sentences = []
    for _ in range(B * 40):
        ws = [rng.choice(words).capitalize() if rng.random() < 0.1 else rng.choice(words) for _ in range(rng.randint(20, 60))]
        sentences.append(" ".join(w + (rng.choice(punct) if rng.random() < 0.15 else "") for w in ws))
    torch.manual_seed(0)
    emb = torch.nn.Embedding(V, D).cuda()
    head = torch.nn.Linear(D, 512).cuda()
    correct = torch.zeros((), dtype=torch.int64, device="cuda")
    return {"sentences": sentences, "vocab": vocab, "pieces": pieces, "emb": emb, "head": head, "correct": correct}


def tokenize(sentence, vocab, pieces):
    ids = []
    for raw in sentence.split():
        w = raw.lower().strip(",.;!?")
        t = vocab.get(w)
        if t is not None:
            ids.append(t)
            continue
        for k in range(0, len(w), 3):  # unknown word: 3-character pieces, hashed when unseen
            p = w[k:k + 3]
            ids.append(pieces.get(p, 20000 + (sum(ord(c) * 31 ** j for j, c in enumerate(p)) % 12000)))
    ids = ids[:L]
    return ids + [0] * (L - len(ids))


def step(s, i):
    torch.cuda.nvtx.range_push("tokenize")
    batch = s["sentences"][(i % 40) * B:(i % 40 + 1) * B]
    ids = torch.tensor([tokenize(x, s["vocab"], s["pieces"]) for x in batch], dtype=torch.int64)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("model")
    with torch.no_grad():
        h = s["emb"](ids.cuda()).mean(dim=1)
        s["correct"] += (s["head"](h).argmax(dim=-1) == 7).sum()
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    run(setup, step, steps=30)
