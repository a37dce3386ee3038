"""Resource groups, through azure-mgmt-resource: the same on every Azure-shaped target."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Optional

from azure.core.exceptions import ResourceNotFoundError

from .._models.errors import azure_errors
from .._shared.lro import begin_delete

if TYPE_CHECKING:
    from azure.core.polling import LROPoller

    from .._target import Target

__all__ = ["ensure_resource_group", "begin_delete_resource_group", "resource_group_of"]

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


def begin_delete_resource_group(target: "Target", resource_group: str, *,
                                continuation_token: Optional[str] = None) -> "LROPoller[None]":
    """Start deleting ``resource_group`` with everything in it; finished at once when it is gone."""
    resource = f"/subscriptions/{target.subscription_id}/resourceGroups/{resource_group}"
    return begin_delete("deleting resource group", resource, continuation_token,
                        lambda **kw: target.resources().resource_groups.begin_delete(resource_group, **kw))


def resource_group_of(resource_id: str) -> str:
    parts = resource_id.split("/")
    lowered = [p.lower() for p in parts]
    return parts[lowered.index("resourcegroups") + 1] if "resourcegroups" in lowered else ""
