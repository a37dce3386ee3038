"""Fixtures shared by every test: a real local service on loopback and Microsoft's own clients for it.

The service fixture has the httpx test-server shape: bind port 0, wait until ready, yield, shut
down, join. Each test gets a fresh state directory.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

# MLflow's tracking server takes seconds to start: only the tests of tracking turn it on (their
# settings say so); every other service of the suite, daemons included, runs without it.
os.environ.setdefault("HOROVOD_BATCHAI_MLFLOW_TRACKING", "0")

from horovod_batchai.local import LocalService  # noqa: E402

from service_support import FAST, SUBSCRIPTION, TRACKED, client_kwargs


@pytest.fixture
def service(tmp_path: Path) -> Iterator[LocalService]:
    svc = LocalService(tmp_path / "state", settings=FAST).start()
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture
def tracked(tmp_path: Path) -> Iterator[LocalService]:
    """A service with MLflow tracking on."""
    svc = LocalService(tmp_path / "state", settings=TRACKED).start()
    try:
        yield svc
    finally:
        svc.stop()


#: a busy loop that ends once the process that started it is gone (a killed test run, a crashed
#: xdist worker): no spinner outlives its test run, whatever stops it.
SPIN = ("import os\n"
        "parent = os.getppid()\n"
        "while os.getppid() == parent:\n"
        "    for _ in range(100_000):\n"
        "        pass\n")


@pytest.fixture
def busy_cores() -> Iterator[int]:
    """Every core of the machine kept busy by a spinning process of the fixture's own, for the
    length of the test (what a loaded machine does to the service's timing); yields how many."""
    count = os.cpu_count() or 2
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        yield count
    finally:
        for proc in spinners:
            proc.kill()
        for proc in spinners:
            proc.wait()


@pytest.fixture
def batchai(service: LocalService):
    from azure.mgmt.batchai import BatchAI
    with BatchAI(service.credential(), SUBSCRIPTION, **client_kwargs(service)) as client:
        yield client


@pytest.fixture
def resources(service: LocalService):
    from azure.mgmt.resource.resources import ResourceManagementClient
    with ResourceManagementClient(service.credential(), SUBSCRIPTION, **client_kwargs(service)) as client:
        yield client


@pytest.fixture
def storage(service: LocalService):
    from azure.mgmt.storage import StorageManagementClient
    with StorageManagementClient(service.credential(), SUBSCRIPTION, **client_kwargs(service)) as client:
        yield client


# -- the order tests start in ------------------------------------------------------------------------
#: the tests that use what `make test` builds while the others run: a client virtualenv or the 3.13 chroot
USES_BUILT_CLIENTS = ("tests/azure_cli/", "tests/client_versions/", "tests/python313/")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The `slow` tests first, so that the workers of `make test` end together instead of one
    running a long test alone at the end; after them those that use a built client, whose builds
    run meanwhile; then the rest, in file order."""
    def group(item: pytest.Item) -> int:
        if item.nodeid.startswith(USES_BUILT_CLIENTS):
            return 1
        return 0 if item.get_closest_marker("slow") is not None else 2
    items.sort(key=group)  # stable: file order within each group


# -- the conformance figures of tests/local/batchai/test_conformance.py, at the end of a run ----------
# Under pytest-xdist (`make test`) the tests run in worker processes and the summary is written by
# the controller, which imports no test module: each worker hands its figures over on the way out.

#: recording -> (matched, known differences, interactions), as the workers handed them over
_CONFORMANCE_FROM_WORKERS: dict[str, tuple[int, int, int]] = {}


def _conformance_here() -> dict[str, tuple[int, int, int]]:
    module = next((m for name, m in sys.modules.items() if name.endswith("test_conformance")), None)
    return dict(getattr(module, "CONFORMANCE", None) or {})


def pytest_sessionfinish(session: pytest.Session) -> None:
    handed_over = getattr(session.config, "workeroutput", None)  # set in an xdist worker only
    if handed_over is not None:
        handed_over["conformance"] = {name: list(figures) for name, figures in _conformance_here().items()}


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown without xdist
def pytest_testnodedown(node: Any, error: Any) -> None:
    for name, figures in (getattr(node, "workeroutput", None) or {}).get("conformance", {}).items():
        _CONFORMANCE_FROM_WORKERS[name] = tuple(figures)  # type: ignore[assignment]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    figures = {**_CONFORMANCE_FROM_WORKERS, **_conformance_here()}
    if not figures:
        return
    terminalreporter.section("conformance with the recorded service")
    for name, (matched, known, total) in sorted(figures.items()):
        terminalreporter.write_line(f"{name}: {matched}/{total} recorded interactions match"
                                    + (f", {known} more differ only in documented ways" if known else ""))
