"""The root of kubetrain's own exception tree.

Every error kubetrain raises on purpose derives from :class:`KubetrainError`, so callers at
the edge (the CLI, a worker loop) can tell a reported problem from a bug::

    KubetrainError
    └── api.Invalid            an object failed parsing or validation (carries FieldErrors)
"""


class KubetrainError(Exception):
    """A problem kubetrain detected and can describe to the user."""
