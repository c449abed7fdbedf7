"""Collective data-parallel training with paddle.distributed on CPU (gloo).

Run under ``python -m paddle.distributed.launch``, which reads the PaddleJob's env: every
replica's launcher gets PADDLE_MASTER (``ip:port`` of worker 0's key-value store; worker 0
advertises its own pod IP there and serves it), PADDLE_NNODES and PADDLE_JOB_ID. The
launchers meet at that store, agree on ranks (worker 0 is rank 0) and on every trainer's
endpoint, and start this script with PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM and
PADDLE_TRAINER_ENDPOINTS set.

This script then joins the collective group (gloo on a CPU build), checks it with an
all-reduce of ``rank + 1`` (the exact sum n(n+1)/2 is printed), and trains a small network on
scikit-learn's digits (it ships inside the package: nothing is downloaded) with
``paddle.DataParallel``, each rank on its own shard, gradients all-reduced every step. Rank 0
prints the accuracy on the held-out quarter.
"""

from __future__ import annotations

import argparse

import numpy as np
import paddle
import paddle.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    args = parser.parse_args()

    paddle.set_device("cpu")
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} backend {dist.get_backend()}", flush=True)

    total = paddle.to_tensor([float(rank + 1)])
    dist.all_reduce(total)
    expected = world * (world + 1) // 2
    print(f"all-reduce sum {total.item():g} (expected {expected})", flush=True)
    if total.item() != expected:
        raise SystemExit(f"all-reduce gave {total.item():g}, expected {expected}")

    data = load_digits()
    x = (data.data / 16.0).astype("float32")
    y = data.target.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, random_state=0, stratify=y
    )
    # Every rank takes the same number of steps (each step all-reduces the gradients), so
    # the smallest shard decides how many.
    steps = len(y_train) // world // args.batch_size
    x_train, y_train = x_train[rank::world], y_train[rank::world]  # this rank's shard

    paddle.seed(0)  # the same initial weights on every rank
    model = paddle.DataParallel(
        paddle.nn.Sequential(paddle.nn.Linear(64, 64), paddle.nn.ReLU(), paddle.nn.Linear(64, 10))
    )
    optimizer = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    loss_of = paddle.nn.CrossEntropyLoss()
    shuffle = np.random.default_rng(rank)
    for epoch in range(1, args.epochs + 1):
        order = shuffle.permutation(len(y_train))
        for step in range(steps):
            batch = order[step * args.batch_size : (step + 1) * args.batch_size]
            loss = loss_of(
                model(paddle.to_tensor(x_train[batch])), paddle.to_tensor(y_train[batch])
            )
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)

    model.eval()
    with paddle.no_grad():
        guesses = model(paddle.to_tensor(x_test)).argmax(axis=1).numpy()
    if rank == 0:
        print(f"test accuracy {float(np.mean(guesses == y_test)):.3f}", flush=True)


if __name__ == "__main__":
    main()
