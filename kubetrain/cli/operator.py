"""``kubetrain operator``: run the training operator against a cluster, in the foreground.

This is the command of the operator's Deployment in ``deploy/`` (in-cluster service account),
and works from a laptop with ``--kubeconfig``. Flag names are upstream's
(``cmd/training-operator.v1``) where upstream has the flag, so manifests carry over; the local
control plane runs its own operator and needs none of this.

This module owns the flags and logging set-up; the operator is
:mod:`kubetrain.operator.process`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Mapping

from kubetrain import _collector, frameworks, kube
from kubetrain.cli import apiserver
from kubetrain.operator import process
from kubetrain.operator.jobs import settings as job_settings
from kubetrain.operator.runtime import logcontext, manager
from kubetrain.operator.trainjob import setup as trainjob_setup
from kubetrain.operator.webhook import settings as webhook_settings

DEFAULT_PORT_RANGE = "20000-29999"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "operator",
        help="run the training operator against a cluster",
        description="Run the training operator (v1 job controllers and the TrainJob "
        "controller) until stopped. In a pod it uses the pod's service account; elsewhere "
        "name the cluster with --kubeconfig.",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig of the cluster (default: in-cluster)")
    parser.add_argument("--context", help="context of --kubeconfig")
    parser.add_argument(
        "--namespace",
        default=None,
        help="watch one namespace only (default: $KUBEFLOW_NAMESPACE, else all namespaces)",
    )
    parser.add_argument(
        "--leader-elect", action="store_true", help="elect a leader among replicas (a Lease)"
    )
    parser.add_argument("--leader-election-id", default=manager.LEASE_NAME)
    parser.add_argument(
        "--leader-election-namespace",
        default=None,
        help="namespace of the Lease (default: the pod's namespace, else kubeflow)",
    )
    parser.add_argument("--metrics-bind-address", default=":8080", help="'0' disables")
    parser.add_argument("--health-probe-bind-address", default=":8081", help="'0' disables")
    parser.add_argument(
        "--enable-scheme",
        action="append",
        default=[],
        metavar="KIND",
        help="run the controller of this v1 kind (repeatable; default: all)",
    )
    parser.add_argument(
        "--disable-trainjob",
        action="store_true",
        help="do not run the TrainJob controller (trainer.kubeflow.org CRDs not installed)",
    )
    parser.add_argument(
        "--gang-scheduler-name",
        default="",
        help="volcano, or the scheduler name of scheduler-plugins (default: no gang scheduling)",
    )
    parser.add_argument(
        "--disable-controllers",
        action="store_true",
        help="run no controller: serve the admission webhooks (and the probes) only",
    )
    parser.add_argument("--controller-threads", type=int, default=1, metavar="N")
    parser.add_argument(
        "--host-network",
        action="store_true",
        help="put every pod the operator creates on the host network, with a port of its own",
    )
    parser.add_argument(
        "--host-port-range",
        default=DEFAULT_PORT_RANGE,
        metavar="LOW-HIGH",
        help=f"ports given to host-network pods (default {DEFAULT_PORT_RANGE})",
    )
    parser.add_argument(
        "--watch-timeout-seconds",
        type=int,
        default=kube.watch.Settings.timeout_seconds,
        metavar="N",
        help="how long the API server is asked to hold each watch open before the operator "
        "opens it again (timeoutSeconds, shortened by up to 20%%; default "
        f"{kube.watch.Settings.timeout_seconds})",
    )
    webhooks = parser.add_argument_group(
        "admission webhooks",
        "In the cluster the webhooks are served on --webhook-server-port behind the Service "
        "--webhook-service-name; out of it (--kubeconfig) only with --webhook-url.",
    )
    webhooks.add_argument(
        "--webhook-server-port",
        type=int,
        default=webhook_settings.PORT,
        metavar="PORT",
        help=f"port of the webhook server in the cluster (default {webhook_settings.PORT}); "
        "0 turns the webhooks off",
    )
    webhooks.add_argument(
        "--webhook-service-name",
        default=webhook_settings.SERVICE_NAME,
        help="the Service kube-apiserver calls the webhooks through, which the serving "
        f"certificate names (default {webhook_settings.SERVICE_NAME})",
    )
    webhooks.add_argument(
        "--webhook-secret-name",
        default=webhook_settings.SECRET_NAME,
        help=f"the Secret holding the webhook's CA and certificate (default "
        f"{webhook_settings.SECRET_NAME})",
    )
    webhooks.add_argument(
        "--webhook-namespace",
        default=None,
        help="namespace of that Service and Secret (default: $POD_NAMESPACE, else "
        f"{webhook_settings.NAMESPACE})",
    )
    webhooks.add_argument(
        "--webhook-url",
        default="",
        metavar="https://HOST:PORT",
        help="out of the cluster: serve the webhooks at this address and register the webhook "
        "configurations with it and the operator's own CA (removed again on a clean stop)",
    )
    webhooks.add_argument(
        "--cert-management",
        choices=webhook_settings.CERT_MANAGEMENT,
        default=webhook_settings.INTERNAL,
        help="internal: make, renew and publish the webhook's certificate (default); none: "
        "serve what the Secret holds (cert-manager issues it and injects the CA)",
    )
    parser.add_argument("--log-format", choices=("text", "json"), default="json")
    parser.add_argument(
        "--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), default="INFO"
    )
    parser.set_defaults(func=run)


def options(args: argparse.Namespace, environ: Mapping[str, str]) -> process.Options:
    """The operator's options from its flags; ValueError names a flag and what it accepts."""
    namespace = args.namespace if args.namespace is not None else environ.get("KUBEFLOW_NAMESPACE")
    gang = args.gang_scheduler_name
    if gang == "volcano":
        gang_scheduler, scheduler_name = job_settings.VOLCANO, ""
    elif gang:
        # Upstream: any other non-empty name is scheduler-plugins with that scheduler name.
        gang_scheduler, scheduler_name = job_settings.SCHEDULER_PLUGINS, gang
    else:
        gang_scheduler, scheduler_name = "", ""
    if args.controller_threads < 1:
        raise ValueError(f"--controller-threads: {args.controller_threads}; accepted: 1 or more")
    if args.watch_timeout_seconds < 1:
        raise ValueError(
            f"--watch-timeout-seconds: {args.watch_timeout_seconds}; accepted: 1 or more"
        )
    process.enabled_frameworks(args.enable_scheme)  # an unknown kind fails here, before connecting
    lease_namespace = (
        args.leader_election_namespace or environ.get("POD_NAMESPACE") or manager.LEASE_NAMESPACE
    )
    webhook = _webhook(args, environ)
    if args.disable_controllers and webhook is None:
        raise ValueError(
            "--disable-controllers: nothing would run, since the webhooks are off; accepted "
            "with the webhooks on (in the cluster, or with --webhook-url)"
        )
    return process.Options(
        manager=manager.Settings(
            namespace=namespace or None,
            leader_election=args.leader_elect,
            lease_name=args.leader_election_id,
            lease_namespace=lease_namespace,
            metrics_address=_address(args.metrics_bind_address),
            probe_address=_address(args.health_probe_bind_address),
            workers=args.controller_threads,
            watch=kube.watch.Settings(timeout_seconds=args.watch_timeout_seconds),
        ),
        jobs=job_settings.Settings(
            pod=frameworks.Settings(),
            gang_scheduler=gang_scheduler,
            scheduler_name=scheduler_name,
            host_port_range=port_range(args.host_port_range),
            force_host_network=args.host_network,
        ),
        trainjob=trainjob_setup.Settings(
            force_host_network=args.host_network, host_port_range=port_range(args.host_port_range)
        ),
        schemes=tuple(args.enable_scheme),
        trainjobs=not args.disable_trainjob,
        webhook=webhook,
        controllers=not args.disable_controllers,
    )


def _webhook(
    args: argparse.Namespace, environ: Mapping[str, str]
) -> webhook_settings.Settings | None:
    """The webhook's settings, or None when it is off: ``--webhook-server-port 0``, or out of
    the cluster (``--kubeconfig``) without ``--webhook-url``."""
    port = args.webhook_server_port
    if not 0 <= port <= 65535:
        raise ValueError(f"--webhook-server-port: {port}; accepted: 0 (off) or 1-65535")
    if args.webhook_url:
        webhook_settings.url_host_port(args.webhook_url)  # ValueError names the flag
        if port == 0:
            raise ValueError(
                "--webhook-url: the webhooks are off (--webhook-server-port 0); accepted: "
                "either flag, not both"
            )
    elif port == 0 or args.kubeconfig:
        return None
    return webhook_settings.Settings(
        port=port,
        service_name=args.webhook_service_name,
        secret_name=args.webhook_secret_name,
        namespace=(
            args.webhook_namespace or environ.get("POD_NAMESPACE") or webhook_settings.NAMESPACE
        ),
        url=args.webhook_url,
        cert_management=args.cert_management,
    )


def port_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("-")
    try:
        bounds = (int(low), int(high)) if sep else (0, 0)
    except ValueError:
        bounds = (0, 0)
    if not 0 < bounds[0] <= bounds[1] <= 65535:
        raise ValueError(f"--host-port-range: {text!r}; accepted: LOW-HIGH within 1-65535")
    return bounds


def _address(value: str) -> str:
    return "" if value in ("0", "") else value


async def _connect(args: argparse.Namespace, environ: Mapping[str, str]) -> kube.ClusterConfig:
    if args.kubeconfig:
        return await kube.from_kubeconfig(args.kubeconfig, context=args.context)
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return await kube.from_incluster(environ)
    raise kube.ConfigError(
        "no cluster named: pass --kubeconfig (outside a pod); the local control plane "
        "runs its own operator (`kubetrain up`)"
    )


async def _serve(args: argparse.Namespace, opts: process.Options) -> None:
    cluster = await _connect(args, os.environ)
    # SIGTERM (the kubelet's stop; in a container this process is PID 1 and gets no default
    # handler) is a clean stop: the manager then releases its Lease for a standby.
    main = asyncio.current_task()
    assert main is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, main.cancel)
    async with kube.Client(cluster, user_agent="kubetrain-operator") as client:
        try:
            await process.run(client, opts)
        except asyncio.CancelledError:
            logging.getLogger(__name__).info("operator stopped")


def run(args: argparse.Namespace) -> int:
    apiserver.setup_logging(args.log_format, args.log_level)
    for handler in logging.getLogger().handlers:
        handler.addFilter(logcontext.Filter())
    try:
        opts = options(args, os.environ)
        with _collector.long_lived():
            asyncio.run(_serve(args, opts))
    except (ValueError, kube.ConfigError) as exc:
        print(f"kubetrain operator: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
