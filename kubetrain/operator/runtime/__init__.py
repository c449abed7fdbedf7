"""The controller machinery the operator's reconcilers run on, as controller-runtime and
client-go provide it in Go, in asyncio (STYLE.md §1, python-operator-stack.md §5).

    manager.Manager         starts informers, endpoints, leader election and controllers
    informer.Informer       list + watch of one resource (on kube.watch.Watch) into a Store
    cache.Store             the shared objects of one resource, with an owner index
    handler                 events → keys: the object's own, or its controller owner's
    controller.Controller   the worker loop: Key → Reconciler.reconcile → Result
    workqueue.WorkQueue     de-duplicated keys, one worker per key, rate-limited retries
    expectations            creations/deletions the cache has not shown yet
    leader.Elector          a coordination.k8s.io/v1 Lease, client-go's semantics
    events.Recorder         core/v1 Events, aggregated like client-go's
    metrics                 the Prometheus registry and upstream's metric names
    server                  /metrics, /healthz, /readyz
    logcontext              controller, key and reconcile ID in every log line

Must not: know about jobs or any kind (reconcilers bring that), or import ``kubetrain.local``.
"""
