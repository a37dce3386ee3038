"""Microsoft.Storage's own error codes (the ARM envelope itself is ``core/arm_errors.py``; the Files
data plane's XML errors are ``files/errors.py``)."""
from __future__ import annotations

from ..core.arm_errors import ArmError

__all__ = ["AccountNameInvalid", "StorageAccountNotFound", "StorageAccountAlreadyTaken",
           "StorageAccountKindChangeNotAllowed"]


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
