"""What the sync and the aio Target share without a request: the environment variables
``from_env`` reads, the target kinds, the default credential, and the checks of a target's
arguments."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Optional, Union
from urllib.parse import urlparse

from azure.core.credentials import TokenCredential

from .._models.errors import InvalidSpecError, TargetError

__all__ = ["TARGET_ENV", "SUBSCRIPTION_ENV", "STATE_DIR_ENV", "NODE_RUNTIME_ENV", "RESOURCE_GROUP_ENV", "WORKSPACE_ENV",
           "KINDS", "LOCAL_SUBSCRIPTION", "AZURE_MANAGEMENT_ENDPOINT", "CREDENTIAL_OPTIONS", "default_credential",
           "check_state_dir", "target_from_env", "holds_credentials"]


TARGET_ENV = "HOROVOD_BATCHAI_TARGET"
SUBSCRIPTION_ENV = "AZURE_SUBSCRIPTION_ID"
STATE_DIR_ENV = "HOROVOD_BATCHAI_STATE_DIR"
NODE_RUNTIME_ENV = "HOROVOD_BATCHAI_NODE_RUNTIME"
RESOURCE_GROUP_ENV = "AZURE_RESOURCE_GROUP"
WORKSPACE_ENV = "AZUREML_WORKSPACE_NAME"
KINDS = ("local", "azure", "azureml")
LOCAL_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
AZURE_MANAGEMENT_ENDPOINT = "https://management.azure.com"


#: client options that say how requests travel, which the default credential's token requests take too
CREDENTIAL_OPTIONS = ("transport", "proxies", "retry_total", "connection_verify")


def default_credential(client_options: Mapping[str, Any]) -> TokenCredential:
    """``DefaultAzureCredential``, its own token requests sent the way the target's are (the
    same transport and proxy, the same retries)."""
    from azure.identity import DefaultAzureCredential
    return DefaultAzureCredential(**{k: v for k, v in client_options.items() if k in CREDENTIAL_OPTIONS})


def check_state_dir(state_dir: Union[str, Path], field: str = "state_dir") -> Path:
    """A local state directory: an existing directory, or a path where one can be made."""
    if not isinstance(state_dir, (str, os.PathLike)) or not str(state_dir).strip():
        raise InvalidSpecError(field, f"{state_dir!r} is not a path",
                               "a directory for the local service's state (made if missing), or None for the default")
    path = Path(state_dir).expanduser()
    if path.exists() and not path.is_dir():
        raise InvalidSpecError(field, f"{str(path)!r} is a file, not a directory",
                               "a directory for the local service's state (made if missing)")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InvalidSpecError(field, f"{str(path)!r} cannot be made: {str(parent)!r} is a file",
                                       "a directory for the local service's state (made if missing)")
            break
    return path


def target_from_env(cls: Any, environ: Optional[Mapping[str, str]], **client_options: Any) -> Any:
    """``cls.local``, ``cls.azure`` or ``cls.azureml`` (a sync or an aio ``Target``) as the
    environment says (see :meth:`Target.from_env`)."""
    env = os.environ if environ is None else environ
    kind = env.get(TARGET_ENV, "local").strip().lower() or "local"
    if kind == "local":
        state_dir = env.get(STATE_DIR_ENV) or None
        return cls.local(state_dir=check_state_dir(state_dir, STATE_DIR_ENV) if state_dir else None,
                         node_runtime=env.get(NODE_RUNTIME_ENV, "").strip() or None,
                         subscription_id=env.get(SUBSCRIPTION_ENV) or LOCAL_SUBSCRIPTION, **client_options)
    if kind not in KINDS:
        raise TargetError(f"{TARGET_ENV}={kind!r} is not a target; use one of {', '.join(KINDS)}")
    needed = [SUBSCRIPTION_ENV] + ([RESOURCE_GROUP_ENV, WORKSPACE_ENV] if kind == "azureml" else [])
    missing = [name for name in needed if not env.get(name)]
    if missing:
        raise TargetError(f"{TARGET_ENV}={kind} needs {' and '.join(missing)} to be set")
    if kind == "azure":
        return cls.azure(env[SUBSCRIPTION_ENV], **client_options)
    return cls.azureml(env[SUBSCRIPTION_ENV], env[RESOURCE_GROUP_ENV], env[WORKSPACE_ENV], **client_options)


def holds_credentials(name: str, value: Any) -> bool:
    """Whether a client option carries a secret: a proxy URL with a user name or password, or an
    Authorization header."""
    if name == "proxies" and isinstance(value, Mapping):
        return any("@" in urlparse(str(url)).netloc for url in value.values())
    if name == "headers" and isinstance(value, Mapping):
        return any(str(key).lower() in ("authorization", "proxy-authorization") for key in value)
    return False
