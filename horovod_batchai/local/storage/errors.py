"""Microsoft.Storage's own error codes (the ARM envelope itself is ``core/arm_errors.py``; the Files
data plane's XML errors are ``files/errors.py``)."""
from __future__ import annotations

from ..core.arm_errors import ArmError

__all__ = ["AccountNameInvalid", "StorageAccountNotFound", "StorageAccountAlreadyTaken",
           "StorageAccountKindChangeNotAllowed", "FeatureNotSupportedForAccount", "InvalidResourceName"]


class AccountNameInvalid(ArmError):
    status = 400


class StorageAccountNotFound(ArmError):
    """An account another resource refers to (a job's output directory) is gone."""
    status = 404


class StorageAccountAlreadyTaken(ArmError):
    """Account names are global: another resource group holds this one."""
    status = 409


class StorageAccountKindChangeNotAllowed(ArmError):
    status = 409


class FeatureNotSupportedForAccount(ArmError):
    """What the account (or the local service) does not offer: NFS shares on a standard account,
    share soft delete."""
    status = 400


class InvalidResourceName(ArmError):
    """A child resource's name (a share's) is not of the valid form."""
    status = 400
