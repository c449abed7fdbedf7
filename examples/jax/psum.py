"""A cross-process all-reduce with JAX on CPU, configured only by env vars.

Two env contracts name the same thing, and this script reads whichever it is given:

- a JAXJob (Training Operator v1) sets COORDINATOR_ADDRESS (worker 0's name, no port),
  COORDINATOR_PORT, NUM_PROCESSES and PROCESS_ID;
- a TrainJob on the ``jax-distributed`` runtime (Trainer v2) sets JAX_COORDINATOR_ADDRESS
  (``host:port``), JAX_NUM_PROCESSES and JAX_PROCESS_ID.

Every process calls ``jax.distributed.initialize`` with them (process 0 runs the coordinator
service), so ``jax.devices()`` lists the CPU devices of all processes. One global array holds
``process_id + 1`` from each process, and ``jax.lax.psum`` over the mesh axis sums them across
processes (gloo on CPU): every process prints n(n+1)/2 for n processes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


@dataclass(frozen=True)
class Contract:
    coordinator: str  # host:port
    num_processes: int
    process_id: int


def contract() -> Contract:
    """The coordinator, process count and id, from whichever env contract is set."""
    env = os.environ
    if "JAX_COORDINATOR_ADDRESS" in env:
        return Contract(
            coordinator=env["JAX_COORDINATOR_ADDRESS"],
            num_processes=int(env["JAX_NUM_PROCESSES"]),
            process_id=int(env["JAX_PROCESS_ID"]),
        )
    return Contract(
        coordinator=f"{env['COORDINATOR_ADDRESS']}:{env['COORDINATOR_PORT']}",
        num_processes=int(env["NUM_PROCESSES"]),
        process_id=int(env["PROCESS_ID"]),
    )


def main() -> None:
    job = contract()
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=job.coordinator,
        num_processes=job.num_processes,
        process_id=job.process_id,
        initialization_timeout=60,
    )
    print(
        f"process {jax.process_index()}/{jax.process_count()} coordinator {job.coordinator}: "
        f"{jax.local_device_count()} local of {jax.device_count()} devices",
        flush=True,
    )

    mesh = jax.make_mesh((jax.device_count(),), ("i",))
    sharding = NamedSharding(mesh, P("i"))
    local = np.full((jax.local_device_count(),), job.process_id + 1, dtype=np.float32)
    values = jax.make_array_from_process_local_data(sharding, local)

    @jax.jit
    def total(x: jax.Array) -> jax.Array:
        return jax.shard_map(
            lambda shard: jax.lax.psum(jnp.sum(shard), "i"),
            mesh=mesh,
            in_specs=P("i"),
            out_specs=P(),
        )(x)

    result = float(total(values).addressable_data(0))
    expected = sum(range(1, job.num_processes + 1)) * jax.local_device_count()
    print(f"psum {result:g} (expected {expected})", flush=True)
    jax.distributed.shutdown()
    if result != expected:
        raise SystemExit(f"psum gave {result:g}, expected {expected}")


if __name__ == "__main__":
    main()
