#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""torch_ddp.py JOB RANK WORLD ADDR PORT STEPS: the PyTorch DDP twin of a
dtrain MLP run on simulated hosts, for bench/cluster.sh --ddp.

JOB is mlp (jobs/fashion-mnist-mlp.yaml: 784-512-256-10, ReLU, batch 96,
535 818 parameters) or mlp1m (bench/mlp-1m.yaml: 784-1024-1024-10, ReLU,
batch 256, 1 863 690 parameters). One process per simulated host, RANK of
WORLD, joined by torch.distributed with the gloo backend, initialised over
TCP at tcp://ADDR:PORT (rank 0's namespace address, 198.18.0.1 under
cluster.sh). The global batch is the job's, split evenly (WORLD must
divide it): each rank draws batch / WORLD samples of Fashion-MNIST a step,
runs forward and backward under DistributedDataParallel (its gradient
all-reduce in buckets overlapped with backward, PyTorch's defaults:
25 MiB buckets) and takes one Adam step (lr 1e-3, betas 0.9 0.999, eps
1e-8, as both jobs). One intra-op thread per rank, as cluster.sh runs
dtrain (parallel.blas_threads 1); OPENBLAS_NUM_THREADS and
OMP_NUM_THREADS are set to 1 before torch loads (Debian's torch does its
products in the system OpenBLAS).

After 5 warm-up steps it trains STEPS steps, and rank 0 prints one line:
"ddp JOB samples/s S step_ms T" (S: global samples a second over the
timed steps; T: wall milliseconds a step). Asserts nothing; needs
python3-torch (Debian's 1.13) and numpy. Set GLOO_SOCKET_IFNAME to the
interface the ranks talk over (eth0 in the namespaces).
"""
import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_twin import fashion_mnist  # noqa: E402

# JOB: (hidden layer widths, global batch), from the job files.
JOBS = {"mlp": ((512, 256), 96), "mlp1m": ((1024, 1024), 256)}
WARMUP = 5


def model_of(hidden):
    """784 -> hidden... (ReLU after each) -> 10, as the job's dense
    layers (the loss's softmax is in F.cross_entropy)."""
    layers, width = [nn.Flatten()], 784
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def main():
    if len(sys.argv) != 7 or sys.argv[1] not in JOBS:
        sys.exit(__doc__)
    job = sys.argv[1]
    rank, world = int(sys.argv[2]), int(sys.argv[3])
    addr, port, steps = sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
    hidden, batch = JOBS[job]
    if batch % world:
        sys.exit("torch_ddp.py: %d ranks do not divide the batch %d"
                 % (world, batch))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (addr, port),
                            rank=rank, world_size=world)
    torch.manual_seed(1)
    model = DistributedDataParallel(model_of(hidden))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999),
                           eps=1e-8)
    x, y = fashion_mnist()
    g = torch.Generator().manual_seed(1 + rank)
    micro = batch // world

    def step():
        i = torch.randint(0, x.shape[0], (micro,), generator=g)
        opt.zero_grad(set_to_none=False)
        F.cross_entropy(model(x[i]), y[i]).backward()
        opt.step()

    for _ in range(WARMUP):
        step()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    dt = time.perf_counter() - t0
    if rank == 0:
        print("ddp %s samples/s %.1f step_ms %.2f"
              % (job, steps * batch / dt, 1e3 * dt / steps))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
