"""Microsoft.Resources' own error codes (the ARM envelope itself is ``core/arm_errors.py``)."""
from __future__ import annotations

from ..core.arm_errors import ArmError

__all__ = ["InvalidSubscriptionId", "LocationRequired", "LocationNotAvailableForResourceGroup", "InvalidTagCount",
           "InvalidTagNameCharacters", "InvalidTagLength", "InvalidResourceGroup", "ResourceGroupNotFound",
           "ResourceGroupBeingDeleted", "InvalidResourceGroupLocation", "ResourceGroupDeletionBlocked"]


class InvalidSubscriptionId(ArmError):
    status = 400


class LocationRequired(ArmError):
    status = 400


class LocationNotAvailableForResourceGroup(ArmError):
    status = 400


class InvalidTagCount(ArmError):
    status = 400


class InvalidTagNameCharacters(ArmError):
    status = 400


class InvalidTagLength(ArmError):
    status = 400


class InvalidResourceGroup(ArmError):
    """A resource group name outside the valid form."""
    status = 400


class ResourceGroupNotFound(ArmError):
    status = 404

    @classmethod
    def named(cls, name: str) -> "ResourceGroupNotFound":
        return cls(f"Resource group '{name}' could not be found.")


class ResourceGroupBeingDeleted(ArmError):
    """A write into a group whose deletion has started."""
    status = 409

    @classmethod
    def named(cls, name: str) -> "ResourceGroupBeingDeleted":
        return cls(f"The resource group '{name}' is in deprovisioning state and cannot perform this operation.")


class InvalidResourceGroupLocation(ArmError):
    """A PUT or PATCH would move an existing group to another region."""
    status = 409

    @classmethod
    def moving(cls, location: str, existing: str) -> "InvalidResourceGroupLocation":
        return cls(f"Invalid resource group location '{location}'. The Resource group already exists in location "
                   f"'{existing}'.")


class ResourceGroupDeletionBlocked(ArmError):
    status = 409
