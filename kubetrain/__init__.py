"""kubetrain: Kubeflow training jobs on any Kubernetes API, or on one machine.

The package is layered (lowest first): ``api`` (job types, defaulting, validation, CRDs),
``frameworks`` (per-framework env contracts), then the command line in ``cli``. Lower layers
never import higher ones; ``lint-imports`` enforces it.
"""

__version__ = "0.1.0"
