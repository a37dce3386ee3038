"""Workspaces and experiments against the local service, through Microsoft's clients."""
from __future__ import annotations

import pytest
from azure.core.exceptions import ResourceNotFoundError

from horovod_batchai import HorovodBatchAIError, InvalidSpecError, NotFoundError, Target, Workspace

from sdk_support import RG


def test_create_is_get_or_create(target: Target) -> None:
    first = Workspace.create(target, RG, "batchaidev", location="East US")
    again = Workspace.create(target, RG, "batchaidev", location="eastus")
    assert first == again and first.location == "eastus"
    assert Workspace.list(target, RG) == [first]
    assert Workspace.list(target) == [first]
    assert Workspace.get(target, RG, "batchaidev").id.endswith("/workspaces/batchaidev")
    assert target.resources().resource_groups.get(RG).location == "eastus"


def test_get_missing_raises_not_found_that_is_also_azure_core(target: Target) -> None:
    Workspace.create(target, RG, "batchaidev")
    with pytest.raises(NotFoundError) as info:
        Workspace.get(target, RG, "nope")
    assert isinstance(info.value, ResourceNotFoundError) and isinstance(info.value, HorovodBatchAIError)
    assert info.value.status_code == 404 and "nope" in str(info.value)


def test_usages(workspace: Workspace) -> None:
    usages = workspace.usages()
    assert usages, "the service reports Batch AI quotas for the region"
    assert all(u.limit >= u.current_value >= 0 and u.name for u in usages)


def test_experiments(workspace: Workspace) -> None:
    exp = workspace.create_experiment("cifar")
    assert workspace.create_experiment("cifar") == exp
    assert workspace.get_experiment("cifar") == exp
    assert workspace.list_experiments() == [exp]
    assert exp.list_jobs() == []
    exp.delete()
    exp.delete()  # already gone: still fine
    assert workspace.list_experiments() == []
    with pytest.raises(NotFoundError):
        workspace.get_experiment("cifar")


def test_delete_workspace_and_resource_group(target: Target) -> None:
    ws = Workspace.create(target, RG, "batchaidev")
    ws.create_experiment("cifar")
    ws.delete()
    ws.delete()
    assert Workspace.list(target, RG) == []
    ws = Workspace.create(target, RG, "batchaidev")
    ws.delete(delete_resource_group=True)
    with pytest.raises(ResourceNotFoundError):
        target.resources().resource_groups.get(RG)


@pytest.mark.parametrize("rg, name, location", [
    ("bad/rg", "ws", "eastus"), ("rg.", "ws", "eastus"), ("rg", "bad name", "eastus"), ("rg", "w" * 65, "eastus"),
    ("rg", "ws", "East-US!"),
])
def test_bad_names_raise_before_any_request(offline_target: Target, rg: str, name: str, location: str) -> None:
    with pytest.raises(InvalidSpecError):
        Workspace.create(offline_target, rg, name, location=location)


def test_bad_experiment_name_raises_before_any_request(workspace: Workspace) -> None:
    with pytest.raises(InvalidSpecError, match="experiment"):
        workspace.create_experiment("cifar 10")
    assert workspace.list_experiments() == []
