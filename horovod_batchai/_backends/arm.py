"""Resource groups, through azure-mgmt-resource: the same on every Azure-shaped target."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Optional

from azure.core.exceptions import ResourceNotFoundError

from .._errors import azure_errors

if TYPE_CHECKING:
    from .._target import Target

__all__ = ["ensure_resource_group", "delete_resource_group", "resource_group_of"]

log = logging.getLogger(__name__)


def ensure_resource_group(target: "Target", resource_group: str, location: str) -> None:
    """Create ``resource_group`` in ``location`` unless it exists (in any location)."""
    client = target.resources()
    resource = f"/subscriptions/{target.subscription_id}/resourceGroups/{resource_group}"
    with azure_errors("creating resource group", resource):
        try:
            client.resource_groups.get(resource_group)
            return
        except ResourceNotFoundError:
            pass
        log.info("creating resource group %s in %s", resource_group, location)
        from azure.mgmt.resource.resources.models import ResourceGroup
        client.resource_groups.create_or_update(resource_group, ResourceGroup(location=location))


def delete_resource_group(target: "Target", resource_group: str, timeout: Optional[float]) -> None:
    resource = f"/subscriptions/{target.subscription_id}/resourceGroups/{resource_group}"
    with azure_errors("deleting resource group", resource):
        try:
            log.info("deleting resource group %s", resource_group)
            poller = target.resources().resource_groups.begin_delete(resource_group)
        except ResourceNotFoundError:
            log.debug("resource group %s was already gone", resource_group)
            return
    from .._lro import MappedPoller
    MappedPoller(poller, lambda _: None, action="deleting resource group", resource=resource).result(timeout)


def resource_group_of(resource_id: str) -> str:
    parts = resource_id.split("/")
    lowered = [p.lower() for p in parts]
    return parts[lowered.index("resourcegroups") + 1] if "resourcegroups" in lowered else ""
