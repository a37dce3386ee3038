"""Fixtures shared by every test: a real local service on loopback and Microsoft's own clients for it.

The service fixture has the httpx test-server shape: bind port 0, wait until ready, yield, shut
down, join. Each test gets a fresh state directory.
"""
from __future__ import annotations

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
