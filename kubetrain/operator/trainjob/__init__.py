"""Kubeflow Trainer v2's TrainJob controller: runtimes, runtime plugins, and the workload.

A TrainJob names a runtime (a namespaced TrainingRuntime or a ClusterTrainingRuntime); the
controller freezes that runtime in a snapshot, merges the TrainJob over it, runs the runtime
plugins in a fixed order, and realises the result itself, as JobSet would, as pods and a
headless Service, plus the Secrets, ConfigMaps and PodGroups the plugins ask for.

    setup.setup(manager, settings)   registers the controller on an operator Manager
    reconciler.TrainJobReconciler    one reconcile: fetch (snapshot, host port, plugins'
                                     build) → plan → carry it out
    plan                             one pass decided: status, pods to create and delete,
                                     what else to write, events (pure)
    snapshot                         the runtime frozen in ``<job>-runtime-snapshot``
    runtime_info.RuntimeInfo         the working object plugins edit (new_info builds it)
    phases / framework               the phase protocols, ``PLUGINS`` and their order, ``run``
    plugins/                         plainml, torch (+ torchtune), mpi, jax, xgboost,
                                     coscheduling, volcano, trainerstatus (where the trainer
                                     reports progress), jobset
    workload                         a JobSet as pods, a Service and its volumeClaimPolicies'
                                     claims: naming and identity (pure)
    observation                      what the pods say: Job states, success and failure
                                     policies, restarts (pure)
    status                           conditions (Suspended, Complete, Failed, Running), deadline
    messages                         upstream's reasons and messages, word for word
    upserts, podrequests             keyed-list upserts into containers, pod resource sums (pure)
    hostport                         a job's port when its pods share the host's network
    kinds, conditions, sshkeys       resources, condition lists, MPI key pairs

Everything but ``reconciler`` and ``setup`` is pure (no I/O, no clock, no logging; ``sshkeys``
only draws randomness). Must not: import ``kubetrain.local``, or talk HTTP other than through
``kubetrain.kube``.
"""
