"""The workload of ``bench/launch.py``: one gloo all-reduce across the processes of a job.

Each process joins the group from the environment both launchers give it (``torchrun`` and
a PyTorchJob's pods set ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and ``RANK``),
all-reduces a tensor holding its rank plus one, checks the sum, and exits. It prints one line
for the benchmark: the rank, the sum, and the wall-clock instants (``time.time()``, seconds)
at which it began, had imported torch, had joined the group, had all-reduced and had left
the group, so the benchmark can tell ``import torch`` and the interpreter's exit from
rendezvous time on either launcher::

    allreduce rank=0 world=4 sum=10 start=... imported=... joined=... reduced=... left=...

Owns: that line and the exit status (1 when the sum is wrong). Must not: read anything but
the distributed environment, or take longer than the collective itself needs.
"""

import time

START = time.time()  # before anything heavy: the script's first instant

import os  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

IMPORTED = time.time()


def main() -> int:
    dist.init_process_group("gloo")
    joined = time.time()
    rank, world = dist.get_rank(), dist.get_world_size()
    tensor = torch.tensor([float(rank + 1)])
    dist.all_reduce(tensor)
    reduced = time.time()
    total = int(tensor.item())
    expected = world * (world + 1) // 2
    dist.destroy_process_group()
    left = time.time()
    # One write of the whole line: the ranks of torchrun share one pipe, and print() writes
    # the text and its newline separately when output is unbuffered.
    sys.stdout.write(
        f"allreduce rank={rank} world={world} sum={total} start={START:.6f} "
        f"imported={IMPORTED:.6f} joined={joined:.6f} reduced={reduced:.6f} left={left:.6f} "
        f"pid={os.getpid()}\n"
    )
    sys.stdout.flush()
    return 0 if total == expected else 1


if __name__ == "__main__":
    sys.exit(main())
