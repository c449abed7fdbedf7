"""The local control plane's gang-aware scheduler: an ordinary API client that binds pending
pods to nodes, a whole gang or none of it (DESIGN.md "Scheduling").

Pure modules (no I/O, no clock, no logging), lowest first::

    amounts     resource lists as exact numbers: add, subtract, what is short, formatting
    timestamps  API times to and from seconds since the epoch
    requests    a pod's effective requests and limits, as kube-scheduler and quota count them
    fit         NodeInfo / PodInfo and kube's filters: resources, pod count, selector and
                affinity, taints, host ports, unschedulable nodes; kube's reason strings
    quotas      namespace ResourceQuotas checked for a whole gang at once
    estimates   when a running pod is expected to end (activeDeadlineSeconds, annotation)
    timeline    the nodes as expected from now on: running pods ending, units reserved
    gangs       PodGroup membership and spec (scheduler-plugins and Volcano), their status
    queue       schedulable units (a pod, or a gang's pending pods) and their order
    queues      Volcano Queues: admission (missing, closed, capability), fair shares by
                weight (the proportion plugin), the turns queues take, Queue status
    policy      one scheduling cycle's decisions: fit now, or a reservation for every
                waiting unit; conservative backfill with a bound on any unit's hold-up
    preemption  which running gangs to evict for a waiting one: by priority within a
                queue, reclaim across queues; never for a unit that would still not fit
    messages    kube's reasons and messages, word for word, and our own
    events      the Event objects and pod condition patches the controller writes

The controller, :mod:`kubetrain.local.scheduler.scheduler`, runs the policy on what its
cache saw and writes bindings, evictions, pod conditions and events; beside it:

    cache        the watched stores, kept by watches, and discovery of the optional kinds
    groupstatus  PodGroup and Queue status, and Volcano's enqueue verdicts
"""
