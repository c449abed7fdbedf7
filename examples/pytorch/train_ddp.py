"""Data-parallel training with torch.distributed on CPU (gloo), configured only by env vars.

The PyTorchJob operator sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK; this script reads
nothing else, so the same file runs under kubetrain, under the Kubeflow Training Operator, or
by hand with those four variables set. The data is scikit-learn's handwritten digits, which
ship inside the package: nothing is downloaded, and every rank loads the same split.
"""

from __future__ import annotations

import argparse
import gc
import os

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data / 16.0, digits.target, test_size=0.25, random_state=0
    )
    x_train = torch.tensor(x_train, dtype=torch.float32)[rank::world]  # this rank's shard
    y_train = torch.tensor(y_train)[rank::world]
    x_test, y_test = torch.tensor(x_test, dtype=torch.float32), torch.tensor(y_test)

    model = DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    if rank == 0:
        print(f"training on {len(digits.data)} digits across {world} processes", flush=True)
    for epoch in range(args.epochs):
        for start in range(0, len(x_train), args.batch_size):
            optimizer.zero_grad()
            logits = model(x_train[start : start + args.batch_size])
            loss = torch.nn.functional.cross_entropy(
                logits, y_train[start : start + args.batch_size]
            )
            loss.backward()
            optimizer.step()
        total = torch.tensor([loss.item()])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs} loss {total.item() / world:.4f}", flush=True)

    with torch.no_grad():
        accuracy = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
    if rank == 0:
        print(f"test accuracy {accuracy:.3f}", flush=True)
    # DDP holds the process group, so destroy_process_group alone leaves gloo's worker threads
    # running into interpreter shutdown; one that frees its last tensor there aborts the rank
    # (SIGABRT, "terminate called without an active exception"). Free DDP first.
    del model, optimizer
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
