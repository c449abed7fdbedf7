"""The process's one host-port book: the v1 controllers and the TrainJob controller of a
manager share it, so a port one hands out is taken for the other before any Service shows."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubetrain import frameworks
from kubetrain.operator import hostports
from kubetrain.operator.jobs import children
from kubetrain.operator.jobs import settings as job_settings
from kubetrain.operator.jobs import setup as job_setup
from kubetrain.operator.runtime import controller, manager
from kubetrain.operator.runtime import metrics as metrics_
from kubetrain.operator.trainjob import reconciler as trainjob_reconciler
from kubetrain.operator.trainjob import setup as trainjob_setup
from tests.builders import pytorchjob
from tests.unit.api.trainers import as_runtime, as_trainjob, runtime, trainjob
from tests.unit.operator.jobs.test_reconciler import FakeApi

ONE_PORT = (20000, 20000)


def test_the_book_follows_services_and_holds_handed_out_ports_for_a_while() -> None:
    now = [0.0]
    book = hostports.Book(clock=lambda: now[0], hold=60.0)

    def service(name: str, port: int) -> dict[str, Any]:
        annotations = {hostports.HOST_PORT_ANNOTATION: str(port)}
        return {"metadata": {"namespace": "ns", "name": name, "annotations": annotations}}

    book.on_service("ADDED", service("a", 20001), None)
    book.reserve([20002])
    assert book.taken() == {20001, 20002}
    book.on_service("ADDED", service("b", 20002), None)
    book.on_service("DELETED", service("a", 20001), None)
    assert book.taken() == {20002}
    book.reserve([20003])
    now[0] = 61.0
    assert book.taken() == {20002}, "a reservation whose Service never showed expires"


def test_a_book_following_a_store_knows_what_it_held_before() -> None:
    class Store:
        def __init__(self) -> None:
            self.handlers: list[hostports.Handler] = []

        def list(self) -> list[dict[str, Any]]:
            annotations = {hostports.HOST_PORT_ANNOTATION: "20005"}
            return [{"metadata": {"namespace": "ns", "name": "a", "annotations": annotations}}]

        def subscribe(self, handler: hostports.Handler) -> None:
            self.handlers.append(handler)

    store = Store()
    book = hostports.following(store)
    assert book.taken() == {20005}
    assert store.handlers == [book.on_service]


def test_a_v1_job_and_a_trainjob_never_get_the_same_port() -> None:
    api = FakeApi()
    mgr = manager.Manager(
        api,  # type: ignore[arg-type]
        manager.Settings(leader_election=False, metrics_address="", probe_address=""),
        metrics=metrics_.Metrics(),
    )
    v1 = job_setup.setup(
        mgr,
        job_settings.Settings(force_host_network=True, host_port_range=ONE_PORT),
        [frameworks.for_kind("PyTorchJob")],
    )["PyTorchJob"]
    made = trainjob_setup.setup(
        mgr, trainjob_setup.Settings(force_host_network=True, host_port_range=ONE_PORT)
    )
    assert v1.book is made.book is hostports.book(mgr, children.SERVICES)

    job = pytorchjob("ns", "a").master().doc()
    job["metadata"].update(uid="job-uid", resourceVersion="1")
    v1.jobs.replace([job])
    for store in (v1.pods, v1.services, *v1.cached.values()):
        store.replace([])
    asyncio.run(v1.reconcile(controller.Key("ns", "a")))
    created = api.objects[("services", "ns", "a-master-0")]
    assert hostports.recorded(created) == 20000, "the v1 job took the range's one port"

    # Its Service is not in the cache yet: the TrainJob still finds the port taken.
    doc = trainjob("job").build()
    memory = made._memory_for("ns/job", "uid")
    host_port = made._host_port(
        doc, as_trainjob(doc), as_runtime(runtime("torch").build()), [], memory
    )
    with pytest.raises(trainjob_reconciler.NoFreePort, match="no free host port in 20000-20000"):
        asyncio.run(host_port)
