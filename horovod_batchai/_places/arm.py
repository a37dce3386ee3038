"""Resource groups, through azure-mgmt-resource: the same on every Azure-shaped target, written
once as operations (:mod:`.._shared.steps`) for the sync and the aio clients."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional

from azure.core.exceptions import ResourceNotFoundError

from .._models.errors import azure_errors
from .._shared.lro import poll_options
from .._shared.steps import Steps, begin_delete

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["ensure_resource_group", "begin_delete_resource_group", "resource_group_of", "resource_group_id"]

log = logging.getLogger(__name__)


def resource_group_id(subscription_id: str, resource_group: str) -> str:
    return f"/subscriptions/{subscription_id}/resourceGroups/{resource_group}"


def ensure_resource_group(connection: "Connection", resource_group: str, location: str) -> "Steps[None]":
    """Create ``resource_group`` in ``location`` unless it exists (in any location)."""
    client = yield connection.resources()
    with azure_errors("creating resource group", resource_group_id(connection.subscription_id, resource_group)):
        try:
            yield client.resource_groups.get(resource_group)
            return
        except ResourceNotFoundError:
            pass
        log.info("creating resource group %s in %s", resource_group, location)
        from azure.mgmt.resource.resources.models import ResourceGroup
        yield client.resource_groups.create_or_update(resource_group, ResourceGroup(location=location))


def begin_delete_resource_group(connection: "Connection", resource_group: str, *,
                                continuation_token: Optional[str] = None,
                                polling_interval: Optional[float] = None) -> "Steps[Any]":
    """Start deleting ``resource_group`` with everything in it; finished at once when it is gone."""
    client = yield connection.resources()
    return (yield from begin_delete("deleting resource group",
                                    resource_group_id(connection.subscription_id, resource_group), continuation_token,
                                    lambda **kw: client.resource_groups.begin_delete(resource_group, **kw),
                                    **poll_options(polling_interval)))


def resource_group_of(resource_id: str) -> str:
    parts = resource_id.split("/")
    lowered = [p.lower() for p in parts]
    return parts[lowered.index("resourcegroups") + 1] if "resourcegroups" in lowered else ""
