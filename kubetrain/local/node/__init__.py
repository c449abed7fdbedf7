"""The local node: runs the pods bound to one node as process groups on this machine.

The agent side (agent, podspec, status, hosts, server, settings) speaks the Kubernetes API and
turns pods into fully resolved runtime specs; the runtime side (runtime, shim, logs, sandbox,
memory) runs processes and knows nothing about the API. Between them, stats measures what the
running containers use (the server's ``/stats/summary``) and cpulimit holds them to their CPU
limits (for the workers). Nothing here is imported by the operator: the two meet only through
the API server.
"""
