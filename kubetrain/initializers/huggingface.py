"""``hf://<org>/<name>``: a Hugging Face Hub repository, through ``huggingface_hub``.

The dataset initializer downloads a dataset repository; the model initializer a model
repository, with upstream's file patterns (weights as safetensors or gguf, configs, tokenizer
files; no msgpack, h5, bin or pt duplicates unless ``IGNORE_PATTERNS`` says otherwise).
``ACCESS_TOKEN`` is passed to the download only, as the bearer token of every request (never
written to disk or logged). ``HF_ENDPOINT`` names the Hub to ask (a mirror, or a server of
one's own) and ``HF_HUB_OFFLINE`` keeps to what is already in the destination, as
huggingface_hub defines them. Progress is logged as lines (:func:`.progress.log_bar`) instead
of the library's terminal bars.
"""

from __future__ import annotations

from urllib.parse import urlparse

from kubetrain.initializers import config as cfg
from kubetrain.initializers import progress

INSTALL_HINT = "needs the huggingface_hub package; accepted: pip install 'kubetrain[initializers]'"


def repo_id(config: cfg.Config) -> str:
    parsed = urlparse(config.storage_uri)
    name = (parsed.netloc + parsed.path).strip("/")
    if not name:
        raise config.error("an hf:// URI names a repository: hf://<org>/<name>")
    return name


def download(config: cfg.Config) -> None:
    repo = repo_id(config)
    try:
        import huggingface_hub
    except ImportError as exc:
        raise config.error(INSTALL_HINT) from exc
    options: dict[str, object] = {
        "repo_id": repo,
        "repo_type": "dataset" if config.kind == cfg.DATASET else "model",
        "local_dir": config.output_path,
        "token": config.access_token,
        "tqdm_class": progress.log_bar(f"{config.kind} initializer"),
    }
    if config.kind == cfg.MODEL:
        options["allow_patterns"] = list(cfg.MODEL_ALLOW_PATTERNS)
        options["ignore_patterns"] = list(config.ignore_patterns or cfg.MODEL_IGNORE_PATTERNS)
    elif config.ignore_patterns:
        options["ignore_patterns"] = list(config.ignore_patterns)
    try:
        huggingface_hub.snapshot_download(**options)
    except Exception as exc:  # the library's errors have no common base; all mean the same
        raise config.error(
            f"cannot download {options['repo_type']} {repo} from the Hugging Face Hub: "
            f"{type(exc).__name__}: {cfg.one_line(exc)}"
        ) from exc
