"""Env contracts of Kubeflow Trainer v2 (TrainJob) runtimes, one module per ML policy.

Given a defaulted TrainJob and the runtime it references, each module says what the trainer
containers get: env vars, ports, volumes and (MPI) the hostfile, exactly as upstream's runtime
plugins inject them, so a training script written for Kubeflow finds the same variables here.
``node`` holds what they share: the node count, the resources per node and rank 0's address.

Pure data in, data out: env vars, ports and volumes are plain Kubernetes dicts. These modules
build no objects and decide nothing about when to apply them; the TrainJob controller does.
Import modules, not names: ``from kubetrain.frameworks.trainjob import torch``.
"""
