"""Where requests go, for :mod:`horovod_batchai.aio`: the aio :class:`Target`, and through its
connection (:class:`~horovod_batchai._places.connection_async.AsyncConnection`) Microsoft's aio
clients, sending through azure-core's aiohttp transport."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from azure.core.credentials import TokenCredential
from azure.core.credentials_async import AsyncTokenCredential

from .._models.errors import TargetError
from .._places import build_async_backend
from .._places.connection_async import AsyncConnection
from .._shared.target import AZURE_MANAGEMENT_ENDPOINT, CREDENTIAL_OPTIONS, LOCAL_SUBSCRIPTION, target_from_env
from .._target import Target as SyncTarget
from .._target import connection_of
from ._workspace import Workspace

if TYPE_CHECKING:
    from azure.mgmt.batchai.aio import BatchAI
    from azure.mgmt.resource.resources.aio import ResourceManagementClient
    from azure.mgmt.storage.aio import StorageManagementClient
    from azure.storage.fileshare.aio import ShareFileClient, ShareServiceClient

    from .._places.base import AsyncBackend
    from ..local import LocalService, ServiceInfo

__all__ = ["Target"]

log = logging.getLogger(__name__)


class Target:
    """Where requests go, for :mod:`horovod_batchai.aio`. Built like the sync
    :class:`horovod_batchai.Target` (:meth:`local`, :meth:`azure`, :meth:`azureml`,
    :meth:`from_env`), with the same keyword client options -- an async ``transport`` among them.

    Its clients are created on first use, shared, and closed by ``await target.close()`` or on
    leaving ``async with target``. On Azure the credential is an async one
    (``azure.identity.aio.DefaultAzureCredential()`` unless given). On Azure ML, whose client
    (azure-ai-ml) has no async API, the sync backend does the work in worker threads and its
    ``credential`` is a sync one.
    """

    #: the side of the API this target serves
    _asynchronous = True

    def __init__(self, sync: SyncTarget, credential: Optional[AsyncTokenCredential] = None, *,
                 owns_credential: bool = False) -> None:
        self._sync = sync
        self._connection = AsyncConnection(connection_of(sync), credential, owns_credential=owns_credential)
        self._backend: Optional["AsyncBackend"] = None

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def local(cls, service: Union["LocalService", "ServiceInfo", None] = None, *,
              state_dir: Optional[Union[str, Path]] = None, node_runtime: Optional[Union[str, Path]] = None,
              subscription_id: str = LOCAL_SUBSCRIPTION, **client_options: Any) -> "Target":
        """The local service, found or started (off the event loop, on first use) as by
        :meth:`horovod_batchai.Target.local`, with the same ``node_runtime``."""
        return cls(SyncTarget.local(service, state_dir=state_dir, node_runtime=node_runtime,
                                    subscription_id=subscription_id, **client_options))

    @classmethod
    def azure(cls, subscription_id: str, credential: Optional[AsyncTokenCredential] = None, *,
              management_endpoint: str = AZURE_MANAGEMENT_ENDPOINT, **client_options: Any) -> "Target":
        """Azure Batch AI; ``credential`` is an async credential, by default
        ``azure.identity.aio.DefaultAzureCredential()`` sending its token requests the way the
        target's go."""
        sync = SyncTarget(kind="azure", subscription_id=subscription_id, management_endpoint=management_endpoint,
                          client_options=client_options)
        if credential is not None:
            return cls(sync, credential)
        from azure.identity.aio import DefaultAzureCredential
        default = DefaultAzureCredential(**{k: v for k, v in client_options.items() if k in CREDENTIAL_OPTIONS})
        return cls(sync, default, owns_credential=True)

    @classmethod
    def azureml(cls, subscription_id: str, resource_group: str, workspace: str,
                credential: Optional[TokenCredential] = None, **client_options: Any) -> "Target":
        """An Azure Machine Learning workspace. azure-ai-ml has no async API: its calls run in
        worker threads, so ``credential`` is a sync one (default
        ``azure.identity.DefaultAzureCredential()``) and ``transport`` a sync transport."""
        return cls(SyncTarget.azureml(subscription_id, resource_group, workspace, credential, **client_options))

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None, **client_options: Any) -> "Target":
        """From the environment variables :meth:`horovod_batchai.Target.from_env` reads."""
        target: Target = target_from_env(cls, environ, **client_options)
        return target

    def __repr__(self) -> str:
        return repr(self._sync).replace("Target(", "aio.Target(", 1)

    def __reduce__(self) -> tuple[Any, ...]:
        # Its clients, session and credential belong to this process's event loop.
        raise TargetError("a horovod_batchai.aio Target (and what was made from it) is not pickled; hand over the "
                          "resource's id and rebuild it in the receiving process, or pickle the sync API's objects")

    @property
    def sync(self) -> SyncTarget:
        """The sync :class:`horovod_batchai.Target` with the same settings (its clients are its own)."""
        return self._sync

    @property
    def kind(self) -> str:
        """``'local'``, ``'azure'`` or ``'azureml'``: where the requests go."""
        return self._connection.kind

    @property
    def subscription_id(self) -> str:
        """The Azure subscription the target's resource ids name."""
        return self._connection.subscription_id

    @property
    def is_local(self) -> bool:
        """True for the local service, False for Azure and Azure ML."""
        return self._connection.is_local

    @property
    def backend(self) -> "AsyncBackend":
        """The backend that does this target's requests, built on first use (found for its kind
        in :mod:`horovod_batchai._places`)."""
        if self._backend is None:
            self._backend = build_async_backend(self._connection)
        return self._backend

    async def mlflow_tracking_uri(self) -> Optional[str]:
        """Where this target's jobs are tracked, as MLflow takes it: the sync
        :attr:`horovod_batchai.Target.mlflow_tracking_uri`, awaited (the local service is found,
        or the Azure ML workspace read, without holding the loop).

        :returns: the tracking URI, or None on Azure Batch AI."""
        uri: Optional[str] = await self.backend.mlflow_tracking_uri()
        return uri

    def _workspace(self, resource_group: str, name: str) -> Workspace:
        """The workspace ``name``, not fetched (``from_id`` of its children starts here)."""
        return Workspace(self, resource_group, name)

    # -- Microsoft's aio clients ----------------------------------------------------------------
    async def batchai(self) -> "BatchAI":
        """The target's ``azure.mgmt.batchai.aio.BatchAI`` client (shared; closed with the target)."""
        return await self._connection.batchai()

    async def resources(self) -> "ResourceManagementClient":
        """The target's aio ``ResourceManagementClient`` (shared; closed with the target)."""
        return await self._connection.resources()

    async def storage(self) -> "StorageManagementClient":
        """The target's aio ``StorageManagementClient`` (shared; closed with the target)."""
        return await self._connection.storage()

    async def share_service(self, account_url: str, account_key: str) -> "ShareServiceClient":
        """An aio ``ShareServiceClient`` signing with the shared key (the caller closes it)."""
        return await self._connection.share_service(account_url, account_key)

    async def file_from_sas_url(self, url: str) -> "ShareFileClient":
        """An aio client for one file reached through a SAS download URL (the caller closes it)."""
        return await self._connection.file_from_sas_url(url)

    # -- lifetime -------------------------------------------------------------------------------
    async def close(self) -> None:
        """Close every client this target opened (and, on Azure ML, the sync backend's); a
        credential given by the caller stays open. The target may be used again (its clients are
        then opened anew)."""
        backend, self._backend = self._backend, None
        if backend is not None:
            await backend.close()
        await self._connection.close()

    async def __aenter__(self) -> "Target":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
