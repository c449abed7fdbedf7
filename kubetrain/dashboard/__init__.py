"""``kubetrain dashboard``: a web UI over any Kubernetes API where kubetrain's jobs run.

Pages: every job (all kinds, all namespaces the user may list) with its state and progress;
one job with its condition timeline, replicas, a Gantt chart of its pods, live merged logs,
events, YAML and runtime; a TrainJob's training curves; the nodes' capacity and allocation.
Everything is live: the server watches the API once per kind and pushes changes to every
open page as server-sent events.

Layout:

- :mod:`.hub`: the watches and their stores, shared by every browser tab;
- :mod:`.views`: what each page shows, computed by the command line's own modules;
- :mod:`.curves` and :mod:`.recorder`: the training curves' history and its keeping;
- :mod:`.logs`: a job's merged logs for a tab;
- :mod:`.access`: the token and the cross-site rules;
- :mod:`.server`: the routes and the streams;
- ``static/``: the page, built from ``frontend/`` (``make dashboard-assets``), shipped in
  the package so that running it needs no Node.js.
"""
