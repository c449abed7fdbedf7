"""The controller machinery the operator's reconcilers run on, as controller-runtime
provides it in Go, in asyncio (STYLE.md §1, python-operator-stack.md §5). client-go's pieces
that the local control plane's components share (work queue, informer and cache, event
recorder, task guard) are in :mod:`kubetrain.kube`.

    manager.Manager         starts informers, endpoints, leader election and controllers
    handler                 events → keys: the object's own, or its controller owner's
    controller.Controller   the worker loop: Key → Reconciler.reconcile → Result
    expectations            creations/deletions the cache has not shown yet
    leader.Elector          a coordination.k8s.io/v1 Lease, client-go's semantics
    metrics                 the Prometheus registry and upstream's metric names
    server                  /metrics, /healthz, /readyz
    logcontext              controller, key and reconcile ID in every log line

Must not: know about jobs or any kind (reconcilers bring that), or import ``kubetrain.local``.
"""
