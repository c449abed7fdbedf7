"""The v1 job controllers: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob and MXJob,
one generic reconciler over :mod:`kubetrain.frameworks` (the Training Operator's
``controller.v1``).

    setup.setup(manager, settings)   one controller per framework, on a runtime Manager
    settings.Settings                gang scheduler, host ports, forced host networking
    reconciler.JobReconciler         cache in, calls out: creates, deletes, status, events
    plan.plan                        the decision of one reconcile, pure
    conditions, backoff, ports,      the rules plan applies: condition mechanics, retries for
    gang, companions, children       backoffLimit, host ports, PodGroups, MPI's and elastic
                                     PyTorch's extra objects, the objects a job owns
    reasons                          upstream's event reasons and messages, word for word

Must not: know a framework by name outside :mod:`.companions` (whose table stands in for a
``Framework`` field), talk HTTP other than through ``kubetrain.kube``, or change a user's job
other than its status.
"""
