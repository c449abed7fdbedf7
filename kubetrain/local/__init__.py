"""The single-machine control plane: API server, scheduler, garbage collector, node agent, daemon.

Every component here is an ordinary Kubernetes API client except the API server itself, so
each can also be pointed at a real cluster. ``local`` never imports ``operator`` (they meet
only through the API server).
"""
