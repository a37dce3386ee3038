"""Fixtures shared by every test: a real local service on loopback and Microsoft's own clients for it.

The service fixture has the httpx test-server shape: bind port 0, wait until ready, yield, shut
down, join. Each test gets a fresh state directory.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from horovod_batchai.local import LocalService

from service_support import FAST, SUBSCRIPTION, client_kwargs


@pytest.fixture
def service(tmp_path: Path) -> Iterator[LocalService]:
    svc = LocalService(tmp_path / "state", settings=FAST).start()
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
