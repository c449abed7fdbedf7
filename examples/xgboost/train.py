"""Distributed XGBoost training over xgboost's collective, configured only by env vars.

Two env contracts name the same thing, and this script reads whichever it is given:

- an XGBoostJob (Training Operator v1) sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK;
  the Master is rank 0, the Workers rank 1..N;
- a TrainJob on the ``xgboost-distributed`` runtime (Trainer v2) sets DMLC_TRACKER_URI,
  DMLC_TRACKER_PORT, DMLC_NUM_WORKER and DMLC_TASK_ID.

Rank 0 starts the tracker (``xgboost.tracker.RabitTracker``) on the tracker port, and every
rank, rank 0 included, joins it with ``xgboost.collective.CommunicatorContext``. Each rank
trains on its own shard of scikit-learn's breast-cancer data (it ships inside the package:
nothing is downloaded); the ``hist`` tree method sums the shards' histograms across ranks, so
every rank ends with the same model, and rank 0 prints its metrics on the held-out split.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from dataclasses import dataclass

import numpy as np
import xgboost
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from xgboost import collective
from xgboost.tracker import RabitTracker


@dataclass(frozen=True)
class Contract:
    tracker_host: str
    tracker_port: int
    world_size: int
    rank: int


def contract() -> Contract:
    """The tracker address, world size and rank, from whichever env contract is set."""
    env = os.environ
    if "DMLC_TRACKER_URI" in env:
        return Contract(
            tracker_host=env["DMLC_TRACKER_URI"],
            tracker_port=int(env["DMLC_TRACKER_PORT"]),
            world_size=int(env["DMLC_NUM_WORKER"]),
            rank=int(env["DMLC_TASK_ID"]),
        )
    return Contract(
        tracker_host=env["MASTER_ADDR"],
        tracker_port=int(env["MASTER_PORT"]),
        world_size=int(env.get("WORLD_SIZE", "1")),
        rank=int(env.get("RANK", "0")),
    )


def train(job: Contract, rounds: int) -> None:
    data = load_breast_cancer()
    x_train, x_test, y_train, y_test = train_test_split(
        data.data, data.target, test_size=0.25, random_state=0, stratify=data.target
    )
    shard = slice(job.rank, None, job.world_size)  # this rank's rows
    train_set = xgboost.DMatrix(x_train[shard], label=y_train[shard])
    test_set = xgboost.DMatrix(x_test, label=y_test)
    params = {
        "objective": "binary:logistic",
        "eval_metric": ["logloss", "error"],
        "tree_method": "hist",
        "max_depth": 3,
        "eta": 0.3,
        "nthread": 1,
        "seed": 0,
    }
    if job.rank == 0:
        print(
            f"training on {len(data.target)} samples across {collective.get_world_size()} workers",
            flush=True,
        )
    history: dict[str, dict[str, list[float]]] = {}
    booster = xgboost.train(
        params,
        train_set,
        num_boost_round=rounds,
        evals=[(test_set, "test")],
        evals_result=history,
        verbose_eval=False,
    )
    accuracy = float(np.mean((booster.predict(test_set) > 0.5) == y_test))
    if job.rank == 0:
        logloss, error = history["test"]["logloss"][-1], history["test"]["error"][-1]
        print(f"round {rounds} test-logloss {logloss:.4f} test-error {error:.4f}", flush=True)
        print(f"test accuracy {accuracy:.3f}", flush=True)


def start_tracker(job: Contract, wait: float) -> RabitTracker:
    """The tracker, listening on the tracker port on every address.

    The workers reach this pod by its name, which resolves to the pod's address on a cluster
    and to the node's on kubetrain's local node. There every pod shares the host's ports: a
    job run again under the same name gets the same port, which the last run's tracker may
    still hold for a minute (TIME_WAIT, as the tracker closes its connections first and does
    not set SO_REUSEADDR), so a busy port is tried again for up to ``wait`` seconds.
    """
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            tracker = RabitTracker(
                n_workers=job.world_size, host_ip="0.0.0.0", port=job.tracker_port, sortby="task"
            )
        except xgboost.core.XGBoostError as error:
            if "Address already in use" not in str(error) or time.monotonic() > deadline:
                raise
            if not told:
                print(f"tracker port {job.tracker_port} is still held; waiting", flush=True)
                told = True
            time.sleep(1.0)
            continue
        tracker.start()
        return tracker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    job = contract()
    print(f"rank {job.rank}/{job.world_size} tracker {job.tracker_host}", flush=True)

    # A worker that starts before rank 0's tracker listens retries (dmlc_retry, a growing pause
    # between attempts); xgboost reports each attempt as a warning, which is expected here.
    warnings.filterwarnings(
        "ignore", message=r".*(Failed to connect to|Retrying connection to)", category=UserWarning
    )
    tracker = start_tracker(job, wait=90.0) if job.rank == 0 else None
    with collective.CommunicatorContext(
        dmlc_tracker_uri=job.tracker_host,
        dmlc_tracker_port=job.tracker_port,
        dmlc_task_id=str(job.rank),
        dmlc_retry=10,
    ):
        train(job, args.rounds)
    if tracker is not None:
        tracker.wait_for()


if __name__ == "__main__":
    main()
