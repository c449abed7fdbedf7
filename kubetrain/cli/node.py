"""``kubetrain node``: run a node agent in the foreground, as this machine's kubelet.

It joins the API server of a kubeconfig (by default the local control plane's) as a Node and
runs the pods bound to it as local processes until SIGTERM or Ctrl-C. Its pods keep running
when it stops; started again on the same ``--root`` it adopts them.

This module owns the command line (flags, defaults from ``$KUBECONFIG`` and
``$KUBETRAIN_HOME``, the environment pods inherit); the agent is
:mod:`kubetrain.local.node.agent`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys

from kubetrain import kube
from kubetrain.cli import apiserver, up
from kubetrain.local import daemon
from kubetrain.local.node import agent, settings

log = logging.getLogger(__name__)

INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER")  # what pods get from this process


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "node",
        help="run a node agent: the pods bound to this machine's Node, as local processes",
        description="Register this machine as a Node of the API server in the kubeconfig and "
        "run the pods bound to it as local processes, reporting their status as a kubelet "
        "does, until stopped. Pods keep running when it stops and are adopted when it starts "
        "again on the same --root.",
    )
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig of the API server (default: $KUBECONFIG, else the local control "
        "plane's, $KUBETRAIN_HOME/kubeconfig)",
    )
    parser.add_argument("--context", help="kubeconfig context (default: its current context)")
    parser.add_argument(
        "--name", help="the Node's name (default: this host's name, lowercased, as a DNS label)"
    )
    parser.add_argument(
        "--root", help="where pods and their logs live (default: $KUBETRAIN_HOME/node)"
    )
    parser.add_argument(
        "--address",
        default=settings.DEFAULT_ADDRESS,
        help="the node's address: its InternalIP, every pod's IP, where logs and exec are "
        "served (default: %(default)s)",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port of the logs/exec endpoint (default: any free)"
    )
    parser.add_argument(
        "--tls-cert-file",
        help="the endpoint's serving certificate, as the kubelet's flag: issued by the CA of "
        "kube-apiserver's --kubelet-certificate-authority for the node's address (and name); "
        "instead of --ca-cert/--ca-key",
    )
    parser.add_argument(
        "--tls-private-key-file", help="the key of --tls-cert-file, as the kubelet's flag"
    )
    parser.add_argument(
        "--client-ca-file",
        help="accept callers whose client certificate this CA issued, as the kubelet's flag: "
        "the CA of kube-apiserver's --kubelet-client-certificate (default: only the local "
        "control plane's token is accepted)",
    )
    parser.add_argument(
        "--ca-cert",
        help="the control plane's CA certificate, to issue the endpoint's certificate "
        "(default: pki/ca.crt beside the kubeconfig, when there and no --tls-cert-file)",
    )
    parser.add_argument("--ca-key", help="the CA's key (default: pki/ca.key beside the kubeconfig)")
    parser.add_argument(
        "--isolation",
        choices=("auto", "namespace", "none"),
        default="auto",
        help="private mount namespace per container (auto: when this host permits)",
    )
    up.add_container_runtime_argument(parser)
    parser.add_argument(
        "--gpus", type=int, help="number of GPUs to offer (default: what nvidia-smi -L lists)"
    )
    parser.add_argument(
        "--backoff-initial",
        type=float,
        default=settings.Settings.backoff_initial,
        help="crash back-off: first wait in seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--backoff-max",
        type=float,
        default=settings.Settings.backoff_max,
        help="crash back-off: longest wait in seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="log line format"
    )
    parser.add_argument(
        "--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), default="INFO"
    )
    parser.set_defaults(func=run)


def _kubeconfig(args: argparse.Namespace) -> str:
    if args.kubeconfig:
        return str(args.kubeconfig)
    from_env = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    if from_env:
        return from_env
    return daemon.Paths(daemon.resolve_home(os.environ)).kubeconfig


def _check_tls(args: argparse.Namespace) -> None:
    """The TLS flags make sense together and name readable files (else exit saying which);
    their paths are made absolute."""
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise SystemExit("kubetrain node: --tls-cert-file and --tls-private-key-file go together")
    if args.tls_cert_file and (args.ca_cert or args.ca_key):
        raise SystemExit(
            "kubetrain node: --tls-cert-file serves a certificate of your own; --ca-cert and "
            "--ca-key issue one: give one or the other"
        )
    for flag, path in (
        ("--tls-cert-file", args.tls_cert_file),
        ("--tls-private-key-file", args.tls_private_key_file),
        ("--client-ca-file", args.client_ca_file),
    ):
        if path and not os.access(path, os.R_OK):
            raise SystemExit(f"kubetrain node: {flag} {path}: no such readable file")
    for attribute in ("tls_cert_file", "tls_private_key_file", "client_ca_file"):
        if getattr(args, attribute):
            setattr(args, attribute, os.path.abspath(getattr(args, attribute)))


def _ca(args: argparse.Namespace, kubeconfig: str) -> tuple[str, str]:
    if args.tls_cert_file:
        return "", ""
    if args.ca_cert or args.ca_key:
        if not (args.ca_cert and args.ca_key):
            raise SystemExit("kubetrain node: --ca-cert and --ca-key go together")
        return str(args.ca_cert), str(args.ca_key)
    pki = daemon.Paths(os.path.dirname(os.path.abspath(kubeconfig))).pki
    cert, key = os.path.join(pki, "ca.crt"), os.path.join(pki, "ca.key")
    if os.path.exists(cert) and os.path.exists(key):
        return cert, key
    return "", ""


async def _serve(args: argparse.Namespace, kubeconfig: str, root: str) -> None:
    cluster = await kube.from_kubeconfig(kubeconfig, context=args.context)
    ca_cert, ca_key = await asyncio.to_thread(_ca, args, kubeconfig)
    config = settings.Settings(
        root=root,
        name=args.name or "",
        address=args.address,
        port=args.port,
        ca_cert=ca_cert,
        ca_key=ca_key,
        tls_cert_file=args.tls_cert_file or "",
        tls_key_file=args.tls_private_key_file or "",
        client_ca_file=args.client_ca_file or "",
        token=settings.token_of(cluster.configuration),
        gpus=args.gpus,
        isolation=args.isolation,
        container_runtime=args.container_runtime,
        backoff_initial=args.backoff_initial,
        backoff_max=args.backoff_max,
        environment=tuple((k, os.environ[k]) for k in INHERITED if k in os.environ),
    )
    async with kube.Client(cluster, user_agent="kubetrain-node", field_manager="kubelet") as client:
        main = asyncio.current_task()
        assert main is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, main.cancel)
        try:
            await agent.run(client, config)
        except asyncio.CancelledError:
            log.info("node agent stopped; its pods keep running")


def run(args: argparse.Namespace) -> int:
    apiserver.setup_logging(args.log_format, args.log_level)
    _check_tls(args)
    kubeconfig = _kubeconfig(args)
    root = os.path.abspath(args.root or os.path.join(daemon.resolve_home(os.environ), "node"))
    try:
        with daemon.private_files():  # pod directories and logs: 0700 and 0600, as the daemon's
            asyncio.run(_serve(args, kubeconfig, root))
    except kube.ConfigError as exc:
        print(f"kubetrain node: {exc}", file=sys.stderr)
        return 1
    except kube.ApiError as exc:
        print(f"kubetrain node: the API server at {kubeconfig}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"kubetrain node: {exc}", file=sys.stderr)
        return 1
    return 0
