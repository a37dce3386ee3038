"""A datastore's storage, reached with this package's own storage clients (the target's
transport, retries and proxy): the account's endpoint for a service, and the short-lived secret
azure-ai-ml's own transfers ask the datastore for.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from azure.ai.ml import MLClient

__all__ = ["account_url", "datastore_secret"]


def account_url(datastore: Any, service: str) -> str:
    """``https://<account>.<service>.<endpoint>`` of azure-ai-ml's datastore entity (``service``:
    'blob' or 'file'), with the protocol and endpoint suffix the datastore names."""
    return f"{datastore.protocol or 'https'}://{datastore.account_name}.{service}.{datastore.endpoint}"


def datastore_secret(ml: "MLClient", name: str) -> Optional[str]:
    """The datastore's secret as ``listSecrets`` hands it out with ``expirableSecret``: a SAS
    token (the account key from older services); None when it holds neither."""
    # Below azure-ai-ml's public surface: the short-lived secret its own transfers ask for, with
    # the request azure-ai-ml's _list_secrets sends; its answer is kept out of network traces even
    # when the caller turned them on (logging_enable=True logs response bodies).
    datastores = ml.datastores
    operations: Any = datastores._operation  # the generated client's overloads type the body as its model
    secrets = operations.list_secrets(
        name=name, body={"expirableSecret": True, "expireAfterHours": 1},
        resource_group_name=datastores._operation_scope.resource_group_name,
        workspace_name=datastores._workspace_name, **{**datastores._init_kwargs, "logging_enable": False})
    return getattr(secrets, "sas_token", None) or getattr(secrets, "key", None)
