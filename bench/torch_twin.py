#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""torch_twin.py JOB THREADS BATCH MICRO SECONDS [PRECISION]: PyTorch
twins of the shipped jobs and of the GPT-2-shaped job, for
bench/side-by-side.sh.

JOB is mlp (jobs/fashion-mnist-mlp.yaml), cnn (jobs/fashion-mnist-cnn.yaml),
gpt (jobs/char-gpt.yaml) or gpt2 (bench/gpt2-small-untied.yaml at a context
of 64 tokens: 12 pre-norm blocks of dim 768, 12 heads, the 4x MLP, the
position table of 1024 rows of which the first 64 are used, vocabulary
50257, the head untied and without bias; no dropout). The twin builds the
same model (layer sizes, activations, dropout, pre-norm blocks, the tanh
GELU), the same loss and optimizer with the job's settings (Adam; AdamW
with clipping for char-GPT and gpt2),
runs on THREADS intra-op threads (torch.set_num_threads) and trains on the
same data (Fashion-MNIST from dataset-fashion-mnist, the fortunes cookie
file), BATCH samples per optimizer step in micro-batches of MICRO
(gradient accumulation, as the job's micro_batch). After a few warm-up
steps (one for gpt2) it trains for SECONDS of wall time, at least two
steps, and prints one line: the samples per second. PRECISION is f32
(the default) or bf16: the forward and the loss under
torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's mixed precision
(its products in bfloat16 through oneDNN, float weights and optimizer),
beside dtrain's train.precision: bf16. For gpt2 it prints the parameter
count to standard error ("params N"), which equals dtrain plan's
(163,037,184). The learning-rate schedule and evaluation are left out: they
cost nothing measurable per step in either program.

Debian's torch does its products in the system BLAS (BLAS_INFO=generic,
OpenBLAS through libblas.so.3), whose threads torch.set_num_threads does
not set: OPENBLAS_NUM_THREADS and OMP_NUM_THREADS are set to THREADS too,
before torch loads.

Asserts nothing; needs python3-torch (Debian's 1.13) and numpy.
"""
import gzip
import math
import os
import sys
import time

if len(sys.argv) in (6, 7):
    os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[2]
    os.environ["OMP_NUM_THREADS"] = sys.argv[2]

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

FMNIST = "/usr/share/datasets/fashion-mnist/"
FORTUNES = "/usr/share/games/fortunes/cookie"


def fashion_mnist():
    with gzip.open(FMNIST + "train-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16)
    with gzip.open(FMNIST + "train-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    x = torch.from_numpy(x.reshape(-1, 1, 28, 28).astype(np.float32) / 255.0)
    return x, torch.from_numpy(y.astype(np.int64))


class Block(nn.Module):
    """A pre-norm GPT block as in jobs/char-gpt.yaml: layernorm, causal
    multi-head attention (qkv and output projections with biases),
    dropout, residual; layernorm, dense 4x with the tanh GELU, dense back,
    dropout, residual."""

    def __init__(self, dim, heads, rate):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(rate)

    def forward(self, x):
        b, t, c = x.shape
        hs = c // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, hs).transpose(1, 2)
        k = k.view(b, t, self.heads, hs).transpose(1, 2)
        v = v.view(b, t, self.heads, hs).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        s = s.masked_fill(mask, float("-inf"))
        y = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)),
                                             approximate="tanh")))


class Gpt(nn.Module):
    """char-GPT's model by default; with the GPT-2 sizes and bias=False
    the GPT-2-shaped one. The position table has LENGTH rows, the first
    T of them used for a context of T tokens (dtrain's pos_embedding)."""

    def __init__(self, vocab=96, dim=128, length=64, heads=4, blocks=4,
                 rate=0.2, bias=True):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(length, dim))
        self.blocks = nn.Sequential(*[Block(dim, heads, rate)
                                      for _ in range(blocks)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=bias)

    def forward(self, x):
        h = self.blocks(self.tok(x) + self.pos[:x.shape[1]])
        return self.head(self.ln_f(h))


JOBS = ("mlp", "cnn", "gpt", "gpt2")


def setup(job):
    """The model, optimizer, a batch sampler and the loss of JOB."""
    if job in ("mlp", "cnn"):
        x, y = fashion_mnist()
        if job == "mlp":
            model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512),
                                  nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                  nn.Linear(256, 10))
        else:
            model = nn.Sequential(
                nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(),
                nn.Dropout(0.3), nn.Linear(128, 10))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3,
                               betas=(0.9, 0.999), eps=1e-8)

        def batch(n):
            i = torch.randint(0, x.shape[0], (n,))
            return x[i], y[i]

        def loss(out, target):
            return F.cross_entropy(out, target)
        clip = None
    else:
        data = np.frombuffer(open(FORTUNES, "rb").read(), np.uint8)
        if job == "gpt":
            _, ids = np.unique(data, return_inverse=True)
            ids = np.minimum(ids, 95)
            model = Gpt()
            lr, beta2 = 3e-3, 0.99
        else:
            # text_unit: bytes: a token is the byte's value
            ids = data
            model = Gpt(vocab=50257, dim=768, length=1024, heads=12,
                        blocks=12, rate=0.0, bias=False)
            lr, beta2 = 6e-4, 0.95
            print("params %d" % sum(p.numel() for p in model.parameters()),
                  file=sys.stderr)
        ids = torch.from_numpy(ids.astype(np.int64))
        # dtrain's train.decay: weights: decay the tensors of rank >= 2
        # only (nanoGPT's grouping).
        decay = [p for p in model.parameters() if p.dim() >= 2]
        rest = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                 {"params": rest, "weight_decay": 0.0}],
                                lr=lr, betas=(0.9, beta2), eps=1e-8)

        def batch(n):
            i = torch.randint(0, ids.shape[0] - 65, (n, 1)) + \
                torch.arange(65)
            w = ids[i]
            return w[:, :64], w[:, 1:]

        def loss(out, target):
            return F.cross_entropy(out.reshape(-1, out.shape[-1]),
                                   target.reshape(-1))
        clip = 1.0
    return model, opt, batch, loss, clip


def main():
    if len(sys.argv) not in (6, 7) or sys.argv[1] not in JOBS or \
            sys.argv[6:] not in ([], ["f32"], ["bf16"]):
        sys.exit(__doc__)
    job, threads = sys.argv[1], int(sys.argv[2])
    bf16 = sys.argv[6:] == ["bf16"]
    batch_size, micro, seconds = int(sys.argv[3]), int(sys.argv[4]), \
        float(sys.argv[5])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model, opt, batch, loss, clip = setup(job)
    model.train()
    k = max(1, batch_size // micro)

    def step():
        opt.zero_grad(set_to_none=False)
        for _ in range(k):
            x, y = batch(micro)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                part = loss(model(x), y) / k
            part.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()

    for _ in range(1 if job == "gpt2" else 3):
        step()
    steps, t0 = 0, time.perf_counter()
    while steps < 2 or time.perf_counter() - t0 < seconds:
        step()
        steps += 1
    rate = steps * k * micro / (time.perf_counter() - t0)
    print("%.1f" % rate if rate >= 100 else "%.4g" % rate)


if __name__ == "__main__":
    main()
