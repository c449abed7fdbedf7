"""A torch.distributed all-reduce over gloo, configured only by the env a PyTorchJob injects
(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK): every rank contributes rank + 1, so the sum
is WORLD_SIZE * (WORLD_SIZE + 1) / 2 and a test can check it in the master's log.

Two options let a test steer a run from outside, through files in a directory it gives:

- ``--hold-dir D --hold-rank R``: rank R, on its first attempt only, writes its pid to
  ``D/rank-R.pid`` and waits (before joining the group) to be killed; a restarted attempt
  finds the file and joins. The other ranks wait for it in the rendezvous.
- ``--barrier-dir D --barrier-count N``: before joining, each rank leaves a file in D and
  waits until N files are there, so that N processes of several jobs bind their ports at
  the same time.

Exit codes: 0 after the all-reduce; 3 when a hold or barrier was not released in time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import timedelta

WAIT = 60.0  # seconds a hold or barrier waits before giving up


def hold(directory: str, rank: int) -> None:
    marker = os.path.join(directory, f"rank-{rank}.pid")
    if os.path.exists(marker):
        print(f"rank {rank}: restarted; joining", flush=True)
        return
    partial = marker + ".part"
    with open(partial, "w", encoding="ascii") as f:
        f.write(str(os.getpid()))
    os.replace(partial, marker)
    print(f"rank {rank}: pid {os.getpid()} waits to be killed", flush=True)
    time.sleep(WAIT)
    print(f"rank {rank}: nobody killed me", flush=True)
    sys.exit(3)


def barrier(directory: str, count: int) -> None:
    mine = os.path.join(directory, f"{os.getpid()}.ready")
    with open(mine, "w", encoding="ascii") as f:
        f.write(os.environ.get("MASTER_PORT", ""))
    deadline = time.monotonic() + WAIT
    while len([n for n in os.listdir(directory) if n.endswith(".ready")]) < count:
        if time.monotonic() > deadline:
            print(f"barrier: fewer than {count} arrived in {WAIT:.0f}s", flush=True)
            sys.exit(3)
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hold-dir")
    parser.add_argument("--hold-rank", type=int, default=1)
    parser.add_argument("--barrier-dir")
    parser.add_argument("--barrier-count", type=int, default=0)
    args = parser.parse_args()
    rank = int(os.environ["RANK"])
    if args.hold_dir and rank == args.hold_rank:
        hold(args.hold_dir, rank)
    if args.barrier_dir:
        barrier(args.barrier_dir, args.barrier_count)

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=WAIT))
    world = dist.get_world_size()
    value = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(value)
    port = os.environ["MASTER_PORT"]
    print(f"rank {dist.get_rank()}/{world} port {port} all-reduce sum {value.item():g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
