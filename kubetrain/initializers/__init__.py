"""The dataset and model initializers: fill ``/workspace/dataset`` or ``/workspace/model`` from a
storage URI before training starts.

A TrainJob's ``initializer.dataset`` / ``initializer.model`` runs as the replicated job
``dataset-initializer`` / ``model-initializer`` of its runtime, which the trainer job
``dependsOn`` (status ``Complete``); all of them mount the runtime's shared volume (JobSet's
``volumeClaimPolicies`` claim ``initializer``) at ``/workspace``. The container's program is

    python3 -m kubetrain.initializers dataset|model

configured by upstream's environment contract (``pkg/initializers``), which the TrainJob
controller fills from the TrainJob: ``STORAGE_URI`` (required), then per scheme
``ACCESS_TOKEN`` and ``IGNORE_PATTERNS`` (comma-separated) for Hugging Face, ``ENDPOINT``,
``ACCESS_KEY_ID``, ``SECRET_ACCESS_KEY``, ``REGION`` for S3 (``secretRef`` supplies them as
env too; the AWS SDKs' ``AWS_*`` variables fill what they leave unset, see :mod:`.config`);
``OUTPUT_PATH`` overrides the destination, as the Kubeflow SDK's container backend
sets it.

    hf://<org>/<name>             huggingface_hub.snapshot_download (a dataset repo for the
                                  dataset initializer, a model repo for the model one; the
                                  model keeps upstream's file patterns); HF_ENDPOINT names a
                                  mirror, ACCESS_TOKEN is sent as the bearer token
    s3://<bucket>/<prefix>        every object under the prefix (or the object it names),
                                  through the MinIO client; ENDPOINT for S3-compatible
                                  services, ROLE_ARN to assume a role, AWS_* as fallbacks
    file:///<path>                a file or directory of the node's filesystem, copied
    pvc://<claim>/<path>          a path in another PersistentVolumeClaim, copied; the
                                  controller mounts that claim read-only at /mnt/source

The initializer runs once per TrainJob, before any node starts, into the volume every node
mounts: the nodes read what it fetched and fetch nothing themselves. Its log says how far it
has come (files and bytes, :mod:`.progress`), readable with ``kubectl logs``.

Upstream has ``hf://``, ``s3://`` and ``cache://``; ``file://`` and ``pvc://`` are kubetrain's
(data that is already on the machine or in a volume), and ``cache://`` (a Rust data cache
cluster) is not supported. Every failure is an :class:`InitializerError` whose message names
the initializer and the URI, e.g. ``dataset initializer: hf://org/data: cannot download: ...``;
the program prints it and exits 1, so the initializer pod fails and so does the TrainJob,
before any trainer pod starts.

    config     the environment contract, read into a :class:`~.config.Config`
    files      file:// and pvc:// copies
    huggingface   the Hugging Face source (its library is imported only when used)
    s3         the S3 source (its library, too, is imported only when used)
    progress   files and bytes done, as log lines
    __main__   the program

Must not: import ``kubetrain.cli`` or the operator (an initializer pod runs only this), or
import huggingface_hub or minio unless the URI asks for it, or log a token, key or header.
"""

from __future__ import annotations

from kubetrain.errors import KubetrainError


class InitializerError(KubetrainError):
    """The initializer cannot fill its destination; the message names the URI and why."""
