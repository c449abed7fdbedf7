"""Data-parallel training with torch.distributed on CPU (gloo), configured only by env vars.

The PyTorchJob operator sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK; this script
reads nothing else, so the same file runs under kubetrain, under the Kubeflow Training
Operator, or by hand with those four variables set. The data is synthetic and generated from
a fixed seed, so no download is needed and every rank agrees on it.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    features = torch.randn(4096, 16)
    targets = features @ true_w + 0.01 * torch.randn(4096, 1)
    shard = slice(rank, None, world)  # each rank trains on its own slice of the data
    x, y = features[shard], targets[shard]

    model = DistributedDataParallel(torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(args.epochs):
        for start in range(0, len(x), args.batch_size):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(
                model(x[start : start + args.batch_size]), y[start : start + args.batch_size]
            )
            loss.backward()
            optimizer.step()
        total = torch.tensor([loss.item()])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs} loss {total.item() / world:.5f}", flush=True)
    print(f"rank {rank}/{world} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
