"""TrainJob manifests from what ``TrainerClient.train`` is given: a runtime, a trainer, an
initializer and options.

How each trainer becomes the TrainJob's ``spec.trainer``:

- :class:`~kubetrain.sdk.CustomTrainer`: the checked function's script
  (:mod:`kubetrain.sdk._functions`) runs as ``python3 -u -c SCRIPT``; under a torch runtime
  as ``torchrun --no-python python3 -u -c SCRIPT``, so torchrun starts the processes of each
  node from the ``PET_*`` variables the controller sets; under an MPI runtime the script is
  the ``args`` of the runtime's ``mpirun`` command. No file is written and no shell parses
  the source: it is one argument of the command. ``PYTHONUNBUFFERED=1`` is set (unless the
  trainer's env sets it) so that logs stream as the function prints;
- :class:`~kubetrain.sdk.CommandTrainer`: its ``command`` and ``args`` as they are;
- :class:`~kubetrain.sdk.BuiltinTrainer`: what its config says (:mod:`kubetrain.sdk._builtin`);
- ``packages_to_install``: the command is wrapped in ``bash -c 'python3 -m pip install ...
  && exec "$@"'`` with the command as the positional arguments, so nothing is re-quoted;
- ``resources_per_node``: requests and limits alike, with Kubeflow's short names (``gpu`` is
  ``nvidia.com/gpu``, ``storage`` is ``ephemeral-storage``, ``mig-*`` is ``nvidia.com/mig-*``).

Names are Kubeflow's: a lowercase letter and 11 hex digits, unless the ``Name`` option gives
one. Must not: do I/O, or check what only the server can (the runtime's existence, admission).
"""

from __future__ import annotations

import random
import shlex
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubetrain.sdk import _builtin, _fields, _functions, _types
from kubetrain.sdk._errors import InvalidTrainer
from kubetrain.sdk._runtimes import dig, policy_of

API_VERSION: Final = "trainer.kubeflow.org/v1alpha1"
GROUP: Final = "trainer.kubeflow.org"
DEFAULT_RUNTIME: Final = "torch-distributed"
PYTHON: Final = ("python3", "-u", "-c")
TORCHRUN: Final = ("torchrun", "--no-python")


def generate_name(rng: random.Random | None = None) -> str:
    """``g4a7de9fbdd4``: a letter first, so the name is a valid DNS label."""
    rng = rng or random.Random()
    return rng.choice("abcdefghijklmnopqrstuvwxyz") + uuid.UUID(int=rng.getrandbits(128)).hex[:11]


def build(
    *,
    name: str,
    namespace: str,
    runtime: Mapping[str, Any],
    trainer: _types.Trainer | _builtin.BuiltinTrainer | None,
    initializer: _types.Initializer | None = None,
    options: _types.Options = (),
) -> dict[str, Any]:
    """The TrainJob to create for ``runtime`` (the runtime object as the server returned it)."""
    kind = str(runtime.get("kind") or _types.RuntimeKind.CLUSTER_TRAINING_RUNTIME.value)
    spec: dict[str, Any] = {
        "runtimeRef": {"name": dig(runtime, "metadata", "name"), "apiGroup": GROUP, "kind": kind}
    }
    if isinstance(trainer, _builtin.BuiltinTrainer):  # the initializer gives it the data's path
        spec["trainer"] = _builtin.trainer_spec(trainer, runtime, initializer)
    elif trainer is not None:
        spec["trainer"] = trainer_spec(trainer, runtime)
    if initializer is not None:
        block = initializer_spec(initializer)
        if block:
            spec["initializer"] = block
    job: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    for option in options:
        if not callable(option):
            raise InvalidTrainer(
                f"options: {option!r} is not an option; accepted: Name, Labels, Annotations"
            )
        option(job)
    return job


def check_options(options: Any) -> list[_types.Option]:
    """``train(options=...)`` as a list, each a known option with values of the right types,
    or InvalidTrainer saying which is not (before anything reaches the server)."""
    if options is None:
        return []
    if isinstance(options, str | Mapping) or not isinstance(options, Iterable):
        raise InvalidTrainer(f"options: {options!r}; accepted: a list of Name, Labels, Annotations")
    checked = []
    for option in options:
        if isinstance(option, _types.Name):
            if not isinstance(option.name, str) or not option.name:
                raise InvalidTrainer(f"options: Name({option.name!r}); accepted: a string")
        elif isinstance(option, _types.Labels | _types.Annotations):
            values = option.labels if isinstance(option, _types.Labels) else option.annotations
            if not isinstance(values, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in values.items()
            ):
                raise InvalidTrainer(f"options: {option!r}; accepted: a dict of strings to strings")
        elif not callable(option):
            raise InvalidTrainer(
                f"options: {option!r} is not an option; accepted: Name, Labels, Annotations"
            )
        checked.append(option)
    return checked


def trainer_spec(trainer: _types.Trainer, runtime: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.trainer`` for ``trainer`` under ``runtime``."""
    where = type(trainer).__name__
    policy = policy_of(runtime)
    block: dict[str, Any] = {}
    env = _fields.env(trainer.env, where)
    if trainer.pip_index_urls is not None:  # checked even when there is nothing to install
        _fields.strings(trainer.pip_index_urls, f"{where}.pip_index_urls")
    if isinstance(trainer, _types.CustomTrainer):
        prepared = _functions.prepare(trainer.func, trainer.func_args, where=where)
        run = [*PYTHON, prepared.script]
        if policy == "mpi":
            if trainer.packages_to_install:
                raise InvalidTrainer(
                    f"{where}.packages_to_install: not supported with an MPI runtime (only the "
                    "launcher would install them); install them in the image instead"
                )
            block["args"] = run
        else:
            command = [*TORCHRUN, *run] if policy == "torch" else run
            block["command"] = _with_packages(command, trainer, where)
        if not any(e["name"] == "PYTHONUNBUFFERED" for e in env):
            env.append({"name": "PYTHONUNBUFFERED", "value": "1"})
    elif isinstance(trainer, _types.CommandTrainer):
        command = _fields.strings(trainer.command, f"{where}.command")
        if not command:
            raise InvalidTrainer(f"{where}.command: empty; accepted: a program and its arguments")
        args = _fields.strings(trainer.args, f"{where}.args") if trainer.args is not None else None
        if trainer.packages_to_install:
            block["command"] = _with_packages([*command, *(args or [])], trainer, where)
        else:
            block["command"] = command
            if args is not None:
                block["args"] = args
    else:
        raise InvalidTrainer(
            f"trainer: {type(trainer).__name__} is not a trainer; accepted: CustomTrainer, "
            "CommandTrainer"
        )
    if trainer.image is not None:
        block["image"] = _fields.string(trainer.image, f"{where}.image")
    if trainer.num_nodes is not None:
        if (
            not isinstance(trainer.num_nodes, int)
            or isinstance(trainer.num_nodes, bool)
            or trainer.num_nodes < 1
        ):
            raise InvalidTrainer(
                f"{where}.num_nodes: {trainer.num_nodes!r}; accepted: a whole number, 1 or more"
            )
        block["numNodes"] = trainer.num_nodes
    if trainer.num_proc_per_node is not None:
        block["numProcPerNode"] = _fields.procs(trainer.num_proc_per_node, where)
    if trainer.resources_per_node:
        block["resourcesPerNode"] = _fields.resources(trainer.resources_per_node, where)
    if env:
        block["env"] = env
    return block


def initializer_spec(initializer: _types.Initializer) -> dict[str, Any]:
    block: dict[str, Any] = {}
    if initializer.dataset is not None:
        block["dataset"] = _source(initializer.dataset, "Initializer.dataset")
    if initializer.model is not None:
        block["model"] = _source(initializer.model, "Initializer.model")
    return block


def _source(source: Any, where: str) -> dict[str, Any]:
    """A dataset or model source: ``storageUri`` and the other fields as upper-cased env, as
    the Kubeflow SDK passes them to the initializer images."""
    prefixes = {
        _types.HuggingFaceDatasetInitializer: "hf://",
        _types.HuggingFaceModelInitializer: "hf://",
        _types.S3DatasetInitializer: "s3://",
        _types.S3ModelInitializer: "s3://",
    }
    prefix = prefixes.get(type(source))
    if prefix is None:
        raise InvalidTrainer(
            f"{where}: {type(source).__name__} is not an initializer; accepted: "
            "HuggingFaceDatasetInitializer, HuggingFaceModelInitializer, S3DatasetInitializer, "
            "S3ModelInitializer"
        )
    uri = source.storage_uri
    if not isinstance(uri, str) or not uri.startswith(prefix):
        raise InvalidTrainer(
            f"{where}.storage_uri: {uri!r}; accepted: a URI starting with {prefix}"
        )
    env = []
    for field_name, value in vars(source).items():
        if field_name == "storage_uri" or value is None:
            continue
        if field_name == "ignore_patterns":
            text = ",".join(_fields.strings(value, f"{where}.ignore_patterns"))
        else:
            text = _fields.string(value, f"{where}.{field_name}")
        env.append({"name": field_name.upper(), "value": text})
    block: dict[str, Any] = {"storageUri": uri}
    if env:
        block["env"] = env
    return block


def _with_packages(command: list[str], trainer: _types.Trainer, where: str) -> list[str]:
    packages = trainer.packages_to_install
    if not packages:
        return command
    listed = _fields.strings(packages, f"{where}.packages_to_install")
    urls = _fields.strings(trainer.pip_index_urls or [], f"{where}.pip_index_urls")
    flags = []
    if urls:
        flags += ["--index-url", urls[0]]
        for url in urls[1:]:
            flags += ["--extra-index-url", url]
    pip = [
        "python3", "-m", "pip", "install", "--quiet", "--no-warn-script-location",
        "--disable-pip-version-check", *flags, *listed,
    ]  # fmt: skip
    script = f'set -e\n{shlex.join(pip)}\nexec "$@"\n'
    return ["bash", "-c", script, "kubetrain-install", *command]
