"""kubetrain's operator: the controllers that make jobs happen, against any Kubernetes API.

It is the drop-in replacement for the Kubeflow Training Operator (and, later, Kubeflow
Trainer's controller manager). There is no local mode: the same code runs against a real
cluster and against kubetrain's local control plane, and meets the rest of kubetrain only
through the API server.

    runtime/   the controller machinery, as controller-runtime and client-go provide it:
               informers and their shared cache (with an owner index), the rate-limited work
               queue, the worker loop, expectations, leader election on a Lease, the event
               recorder, Prometheus metrics and the health probes, all wired by the Manager
    jobs/      the v1 job reconciler (PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob,
               MXJob): one generic reconciler over ``kubetrain.frameworks``
    trainjob/  the TrainJob reconciler and its runtime plugins
    webhook/   the admission webhooks: kubetrain's admission (``kubetrain.api.review``) served
               to kube-apiserver, with their certificate kept in a Secret

Must not: import ``kubetrain.local`` (the operator and the local control plane are side by
side, never on top of each other), speak HTTP other than through ``kubetrain.kube`` (serving
its own metrics, probes and webhooks aside), or keep state that is not in the API server.
"""
