"""Asynchronous parameter-server training with tf.distribute.ParameterServerStrategy.

TF_CONFIG names three roles. The PS and the workers only start TensorFlow's server on their
own address and serve until the job ends: the chief's success ends it, and
``cleanPodPolicy: Running`` stops them (SIGTERM, on which they exit 0). The chief is the
coordinator: the model's variables are created on the PS, and a ClusterCoordinator sends each
training step to whichever worker is free. A worker reads its batch from its own copy of the
dataset, computes the gradients with the variables it reads from the PS and applies them
there, so the workers never wait for each other. Each worker prints a line on its first step
and on every 40th it runs; the chief then evaluates the variables it reads back from the PS
on the held-out quarter of scikit-learn's digits (shipped inside the package: nothing is
downloaded).
"""

from __future__ import annotations

import argparse
import signal
import threading

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def digits() -> list[np.ndarray]:
    data = load_digits()
    x = (data.data / 16.0).astype("float32")
    y = data.target.astype("int64")
    return train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)


def serve(resolver: tf.distribute.cluster_resolver.TFConfigClusterResolver) -> None:
    """A PS or a worker: run TensorFlow's server until the pod is stopped (SIGTERM).

    ``server.join()`` would block in C++ where Python never sees the signal, and the pod
    would end killed (exit 143); waiting here instead, the process reports the stop and
    exits 0.
    """
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stopped.set())
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    name = f"{resolver.task_type}-{resolver.task_id}"
    print(f"{name}: serving at {server.target}", flush=True)
    stopped.wait()
    print(f"{name}: stopped", flush=True)


def coordinate(
    resolver: tf.distribute.cluster_resolver.TFConfigClusterResolver, steps: int
) -> None:
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    x_train, x_test, y_train, y_test = digits()
    batch = 32

    def dataset_fn() -> tf.data.Dataset:
        """One worker's batches, numbered: the number counts the steps that worker ran."""
        batches = (
            tf.data.Dataset.from_tensor_slices((x_train, y_train))
            .shuffle(len(x_train))
            .repeat()
            .batch(batch)
        )
        return tf.data.Dataset.zip(tf.data.Dataset.counter(start=1), batches)

    with strategy.scope():
        hidden = tf.Variable(tf.random.stateless_normal((64, 64), seed=(0, 1)) * 0.1, name="hidden")
        hidden_bias = tf.Variable(tf.zeros((64,)), name="hidden_bias")
        out = tf.Variable(tf.random.stateless_normal((64, 10), seed=(0, 2)) * 0.1, name="out")
        out_bias = tf.Variable(tf.zeros((10,)), name="out_bias")
        step = tf.Variable(0, dtype=tf.int64, name="step")
    weights = [hidden, hidden_bias, out, out_bias]
    workers = len(resolver.cluster_spec().as_dict()["worker"])
    devices = sorted({w.device for w in weights})
    print(f"chief-0: {len(weights)} variables on {devices}, {workers} workers", flush=True)
    per_worker = coordinator.create_per_worker_dataset(dataset_fn)
    batches = iter(per_worker)

    def logits(x: tf.Tensor) -> tf.Tensor:
        return tf.matmul(tf.nn.relu(tf.matmul(x, hidden) + hidden_bias), out) + out_bias

    @tf.function
    def train_step(iterator: tf.data.Iterator) -> tf.Tensor:
        ran, (x, y) = next(iterator)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits(x))
            )
        for weight, gradient in zip(weights, tape.gradient(loss, weights), strict=True):
            weight.assign_sub(0.5 * gradient)
        done = step.assign_add(1)
        if ran == 1 or ran % 40 == 0:  # printed by the worker that ran it, on its stderr
            tf.print("ran its step", ran, "- step", done, "of all, loss", loss)
        return loss

    for _ in range(steps):
        coordinator.schedule(train_step, args=(batches,))
    coordinator.join()
    predictions = np.argmax(logits(x_test).numpy(), axis=1)
    print(f"chief-0: {int(step.numpy())} steps done by the workers", flush=True)
    print(f"test accuracy {float(np.mean(predictions == y_test)):.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        serve(resolver)
    else:
        coordinate(resolver, args.steps)


if __name__ == "__main__":
    main()
