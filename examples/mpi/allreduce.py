"""An MPI all-reduce with mpi4py: every rank contributes ``rank + 1`` (so a missing rank shows),
rank 0 prints the sum, and each rank says on which host it ran.

Run by the MPIJob in ``mpijob.yaml``: the launcher's ``mpirun`` starts one rank in each worker
pod through ``kubectl exec`` (the operator's kubexec.sh). Locally, without Kubernetes:

    mpirun -np 2 python3 examples/mpi/allreduce.py
"""

from __future__ import annotations

import sys

from mpi4py import MPI


def main() -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    total = comm.allreduce(rank + 1, op=MPI.SUM)
    print(f"rank {rank} of {size} on {MPI.Get_processor_name()}", flush=True)
    comm.Barrier()
    if rank == 0:
        expected = size * (size + 1) // 2
        print(f"all-reduce sum: {total} (expected {expected})", flush=True)
        if total != expected:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
