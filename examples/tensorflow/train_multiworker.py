"""Synchronous data-parallel training with tf.distribute.MultiWorkerMirroredStrategy.

The strategy reads TF_CONFIG, which the operator writes for every replica of a TFJob: the
cluster (every chief and worker address, each with its own port on a shared host) and this
replica's task. Each replica starts TensorFlow's server on its own address, and every step
the replicas all-reduce their gradients over gRPC ring collectives, so all of them hold the
same weights. The data is scikit-learn's digits (it ships inside the package: nothing is
downloaded); every global batch is split across the replicas. Each replica prints a checksum
of its weights (the same on all of them), and the chief prints the accuracy on the held-out
quarter.
"""

from __future__ import annotations

import argparse
import json
import os

import keras
import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def digits() -> list[np.ndarray]:
    data = load_digits()
    x = (data.data / 16.0).astype("float32")
    y = data.target.astype("int64")
    return train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    args = parser.parse_args()

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    name = f"{task['type']}-{task['index']}"
    cluster = strategy.cluster_resolver.cluster_spec().as_dict()
    addresses = [*cluster.get("chief", []), *cluster.get("worker", [])]
    rank = addresses.index(cluster[task["type"]][task["index"]])  # the chief, if any, is 0
    print(
        f"{name}: {strategy.num_replicas_in_sync} replicas in sync, "
        f"cluster {json.dumps(cluster, sort_keys=True)}",
        flush=True,
    )

    keras.utils.set_random_seed(0)  # the same initial weights on every replica
    x_train, x_test, y_train, y_test = digits()
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    train = (
        tf.data.Dataset.from_tensor_slices((x_train, y_train))
        .shuffle(len(x_train), seed=0, reshuffle_each_iteration=True)
        .repeat()
        .batch(args.batch_size, drop_remainder=True)
        .with_options(options)
    )
    batches = iter(strategy.experimental_distribute_dataset(train))
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.Input(shape=(64,)),
                keras.layers.Dense(64, activation="relu"),
                keras.layers.Dense(10),
            ]
        )
        optimizer = keras.optimizers.Adam(0.01)
    loss_of = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def replica_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            per_example = loss_of(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=args.batch_size)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    @tf.function
    def train_step() -> tf.Tensor:
        x, y = next(batches)
        losses = strategy.run(replica_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    steps = len(x_train) // args.batch_size
    for epoch in range(1, args.epochs + 1):
        total = sum(float(train_step()) for _ in range(steps))
        if rank == 0:
            print(f"epoch {epoch} loss {total / steps:.4f}", flush=True)

    checksum = sum(float(np.abs(w).sum()) for w in model.get_weights())
    print(f"{name}: weights checksum {checksum:.6f}", flush=True)

    # Each replica scores its own share of the test set; one more all-reduce adds them up,
    # and doubles as the barrier after which no replica needs another.
    share = slice(rank, None, strategy.num_replicas_in_sync)
    x_share, y_share = tf.constant(x_test[share]), tf.constant(y_test[share])

    @tf.function
    def count_right() -> tf.Tensor:
        def replica_count() -> tf.Tensor:
            guesses = tf.argmax(model(x_share, training=False), axis=1)
            return tf.reduce_sum(tf.cast(guesses == y_share, tf.float32))

        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_count), axis=None)

    total_right = count_right()
    if rank == 0:  # the chief, or worker 0 in a job without one
        print(f"test accuracy {float(total_right) / len(y_test):.3f}", flush=True)


if __name__ == "__main__":
    main()
