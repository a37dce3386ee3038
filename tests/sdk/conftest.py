"""Fixtures for the SDK's tests: the public classes pointed at a fresh in-process local service."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from horovod_batchai import FileShare, GpuCluster, Target, Workspace
from horovod_batchai.local import LocalService, ServiceInfo

from sdk_support import ACCOUNT, RG, SSH_KEY


@pytest.fixture
def target(service: LocalService) -> Iterator[Target]:
    with Target.local(service=service) as t:
        yield t


@pytest.fixture
def offline_target(tmp_path: Path) -> Target:
    """A target whose endpoint refuses connections: a call that raises InvalidSpecError against it
    proves the mistake was caught before any request was sent."""
    return Target.local(service=ServiceInfo("https://127.0.0.1:9", tmp_path / "none.pem", tmp_path, 0))


@pytest.fixture
def workspace(target: Target) -> Workspace:
    return Workspace.create(target, RG, "batchaidev", location="eastus")


@pytest.fixture
def share(target: Target) -> FileShare:
    return FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")


@pytest.fixture
def cluster(workspace: Workspace) -> GpuCluster:
    cluster = workspace.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=2,
                                       admin_user_name="demo", ssh_public_key=SSH_KEY)
    cluster.wait_until_ready(timeout=120)
    return cluster
