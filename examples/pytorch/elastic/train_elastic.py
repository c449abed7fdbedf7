"""Elastic data-parallel training under torchrun that survives changes of its world size.

torchrun (the elastic agent, one per pod) gathers the pods through the c10d rendezvous the
PyTorchJob's PET_* variables describe. When a pod joins or leaves, every agent stops its
worker and starts a new one with the new world size, so this script starts over from the top:
it resumes from the checkpoint that rank 0 writes to a directory all pods share after every
epoch, and re-shards the data for the new world. Every epoch prints the world size it ran with.

The data is synthetic (a fixed random teacher, generated from a seed on every rank), so
nothing is downloaded and every rank sees the same dataset. ``--epoch-seconds`` paces the
epochs, so that there is time to scale the job while it trains.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

CHECKPOINT = "checkpoint.pt"
SAMPLES = 2048
FEATURES = 32
CLASSES = 4


def dataset() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(SAMPLES, FEATURES, generator=generator)
    teacher = torch.randn(FEATURES, CLASSES, generator=generator)
    return x, (x @ teacher).argmax(dim=1)


def load(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """The first epoch still to train: 0 without a checkpoint."""
    if not path.exists():
        return 0
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["epoch"]) + 1


def save(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, epoch: int) -> None:
    """Write then rename: a worker stopped mid-write never leaves a torn checkpoint behind."""
    partial = path.with_suffix(".partial")
    state = {"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save(state, partial)
    os.replace(partial, path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epoch-seconds", type=float, default=0.0)
    parser.add_argument("--checkpoint-dir", type=Path, required=True)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    restarts = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    torch.manual_seed(0)

    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, CLASSES)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    checkpoint = args.checkpoint_dir / CHECKPOINT
    start = load(checkpoint, model, optimizer)
    ddp = DistributedDataParallel(model)
    print(
        f"rank {rank}: world size {world}, resuming at epoch {start + 1}/{args.epochs}"
        f" (restart {restarts})",
        flush=True,
    )

    x, y = dataset()
    x, y = x[rank::world], y[rank::world]  # this rank's shard of the current world
    for epoch in range(start, args.epochs):
        began = time.monotonic()
        for first in range(0, len(x), args.batch_size):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                ddp(x[first : first + args.batch_size]), y[first : first + args.batch_size]
            )
            loss.backward()
            optimizer.step()
        total = torch.tensor([loss.item()])
        dist.all_reduce(total)
        if rank == 0:
            args.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            save(checkpoint, model, optimizer, epoch)
            print(
                f"epoch {epoch + 1}/{args.epochs} world size {world} "
                f"loss {total.item() / world:.4f}",
                flush=True,
            )
        time.sleep(max(0.0, args.epoch_seconds - (time.monotonic() - began)))
    dist.barrier()
    if rank == 0:
        print(f"done: {args.epochs} epochs, last world size {world}", flush=True)
    # DDP holds the process group: free it before the group goes, or a gloo worker thread may
    # free its last tensor during interpreter shutdown and abort the rank (see train_ddp.py).
    del ddp, model, optimizer
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
