"""Where requests go, and Microsoft's aio clients built for it.

An aio :class:`Target` is the sync :class:`horovod_batchai.Target` (which holds the endpoints,
the local service's certificate, the retry settings and the caller's client options) plus the
asynchronous clients it hands out: ``azure.mgmt.batchai.aio``, ``azure.mgmt.resource.resources.aio``,
``azure.mgmt.storage.aio`` and ``azure.storage.fileshare.aio``, sending through azure-core's
aiohttp transport, each told to verify TLS the way the sync clients are (the local service's own
certificate).

TLS: azure-core's aiohttp transport, given ``connection_verify=<CA file>``, builds a new
``ssl.SSLContext`` for every request, and aiohttp then opens a new connection for each (its pool
is keyed by the context): a TLS handshake and a CA file parse per request, on the event loop.
So the target makes one context (the local service's certificate, or the system's CAs) and one
aiohttp session whose connector holds it, shared by every client it builds (one connection
pool), unless the caller gave a ``transport`` of their own.
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from azure.core.credentials import AccessToken, AccessTokenInfo, TokenCredential
from azure.core.credentials_async import AsyncTokenCredential

from .._models.errors import TargetError

from .._target import (AZURE_MANAGEMENT_ENDPOINT, CREDENTIAL_OPTIONS, LOCAL_SUBSCRIPTION, Target as SyncTarget,
                       target_from_env)

if TYPE_CHECKING:
    from azure.mgmt.batchai.aio import BatchAI
    from azure.mgmt.resource.resources.aio import ResourceManagementClient
    from azure.mgmt.storage.aio import StorageManagementClient
    from azure.storage.fileshare.aio import ShareFileClient, ShareServiceClient

    from ..local import LocalService, ServiceInfo
    from .._places.azureml.backend_async import AsyncBackend

__all__ = ["Target"]

log = logging.getLogger(__name__)

#: bytes per request of the aio data-plane clients (see Target._data_plane_kwargs)
AIO_RANGE = 512 * 1024


class _SyncCredentialAsAsync:
    """A sync ``TokenCredential`` as an ``AsyncTokenCredential``. The local service's tokens are
    signed here, from its state directory, with no request (``in_thread`` False); an Azure ML
    target's sync credential may make requests, so it is asked in a worker thread."""

    def __init__(self, credential: TokenCredential, *, in_thread: bool) -> None:
        self._credential = credential
        self._in_thread = in_thread

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._credential!r})"

    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        if self._in_thread:
            return await asyncio.to_thread(self._credential.get_token, *scopes, **kwargs)
        return self._credential.get_token(*scopes)

    async def get_token_info(self, *scopes: str, options: Any = None) -> AccessTokenInfo:
        token = await self.get_token(*scopes)
        return AccessTokenInfo(token.token, token.expires_on)

    async def close(self) -> None:
        pass

    async def __aenter__(self) -> "_SyncCredentialAsAsync":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        pass


class Target:
    """Where requests go, for :mod:`horovod_batchai.aio`. Built like the sync
    :class:`horovod_batchai.Target` (:meth:`local`, :meth:`azure`, :meth:`azureml`,
    :meth:`from_env`), with the same keyword client options -- an async ``transport`` among them.

    Its clients are created on first use, shared, and closed by ``await target.close()`` or on
    leaving ``async with target``. On Azure the credential is an async one
    (``azure.identity.aio.DefaultAzureCredential()`` unless given). On Azure ML, whose client
    (azure-ai-ml) has no async API, the sync target does the work in worker threads and its
    ``credential`` is a sync one.
    """

    def __init__(self, sync: SyncTarget, credential: Optional[AsyncTokenCredential] = None, *,
                 owns_credential: bool = False) -> None:
        self._sync = sync
        self._credential = credential
        self._owns_credential = owns_credential
        self._clients: dict[str, Any] = {}
        self._backend: Optional["AsyncBackend"] = None
        self._lock = asyncio.Lock()
        self._session: Any = None  # the aiohttp session every client's transport shares

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
        return self._sync.kind

    @property
    def subscription_id(self) -> str:
        return self._sync.subscription_id

    @property
    def is_local(self) -> bool:
        return self._sync.is_local

    @property
    def backend(self) -> "AsyncBackend":
        """The backend that does this target's requests, built on first use (see
        :mod:`horovod_batchai._places.azureml.backend_async`)."""
        if self._backend is None:
            from .._places.azureml.backend_async import build_backend
            self._backend = build_backend(self)
        return self._backend

    # -- Microsoft's aio clients ----------------------------------------------------------------
    async def _ready(self) -> None:
        """Find (or start) the local service off the event loop, once: starting it takes seconds."""
        if self.is_local and self._sync._info is None:
            await asyncio.to_thread(self._sync._local_info)

    def _transport_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` (a client's options) with the target's shared transport, unless the caller
        gave one."""
        if "transport" in kwargs and self.kind != "azureml":
            return kwargs
        # (an Azure ML target's transport is a sync one, for azure-ai-ml: the aio clients get ours)
        if self._session is None:
            import aiohttp
            verify = self._sync.connection_verify
            context = ssl.create_default_context(cafile=verify) if isinstance(verify, str) else \
                ssl.create_default_context()
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context), trust_env=True)
        from azure.core.pipeline.transport import AioHttpTransport
        # the context is the connector's: a request that named a CA file would get a context of its own
        return {**kwargs, "connection_verify": True,
                "transport": AioHttpTransport(session=self._session, session_owner=False)}

    def _management_kwargs(self) -> dict[str, Any]:
        return self._transport_kwargs(self._sync._management_kwargs())

    def _data_plane_kwargs(self) -> dict[str, Any]:
        # Ranges of 1 MiB rather than azure-storage's 4 MiB (and a first GET of 1 MiB, not 32):
        # each range is encrypted, decrypted and joined in one go on the event loop, so its size
        # is how long the loop is held. The caller's options win.
        ranges = {"max_range_size": AIO_RANGE, "max_single_get_size": AIO_RANGE, "max_chunk_get_size": AIO_RANGE}
        return self._transport_kwargs({**ranges, **self._sync._data_plane_kwargs(asynchronous=True)})

    def _async_credential(self) -> AsyncTokenCredential:
        if self._credential is not None:
            return self._credential
        # the local service's, or an Azure ML target's sync one (its storage accounts are ARM's)
        credential = _SyncCredentialAsAsync(self._sync.credential(), in_thread=not self.is_local)
        return credential  # type: ignore[return-value]

    async def _client(self, key: str, factory: Any) -> Any:
        client = self._clients.get(key)
        if client is None:
            await self._ready()
            async with self._lock:
                client = self._clients.get(key)
                if client is None:
                    client = self._clients[key] = factory()
        return client

    async def batchai(self) -> "BatchAI":
        from azure.mgmt.batchai.aio import BatchAI
        return await self._client("batchai", lambda: BatchAI(self._async_credential(), self.subscription_id,
                                                             **self._management_kwargs()))

    async def resources(self) -> "ResourceManagementClient":
        from azure.mgmt.resource.resources.aio import ResourceManagementClient
        return await self._client("resources", lambda: ResourceManagementClient(
            self._async_credential(), self.subscription_id, **self._management_kwargs()))

    async def storage(self) -> "StorageManagementClient":
        from azure.mgmt.storage.aio import StorageManagementClient
        return await self._client("storage", lambda: StorageManagementClient(
            self._async_credential(), self.subscription_id, **self._management_kwargs()))

    async def share_service(self, account_url: str, account_key: str) -> "ShareServiceClient":
        """An aio ``ShareServiceClient`` signing with the shared key (the caller closes it)."""
        from azure.storage.fileshare.aio import ShareServiceClient
        await self._ready()
        self._sync.check_data_url(account_url, "the storage account's file endpoint")
        return ShareServiceClient(account_url, credential=account_key,
                                  **self._data_plane_kwargs())

    async def file_from_sas_url(self, url: str) -> "ShareFileClient":
        """An aio client for one file reached through a SAS download URL (the caller closes it)."""
        from azure.storage.fileshare.aio import ShareFileClient
        await self._ready()
        self._sync.check_data_url(url.split("?", 1)[0], "the download URL")
        return ShareFileClient.from_file_url(url, **self._data_plane_kwargs())

    def _adopt(self, client: Any) -> None:
        """Close ``client`` (a share's data-plane client) with the target."""
        self._clients[f"adopted-{id(client)}"] = client

    def _disown(self, client: Any) -> None:
        self._clients.pop(f"adopted-{id(client)}", None)

    def _holds(self, client: Any) -> bool:
        """Whether ``client`` was adopted and not closed since (by :meth:`close`)."""
        return self._clients.get(f"adopted-{id(client)}") is client

    # -- lifetime -------------------------------------------------------------------------------
    async def close(self) -> None:
        """Close every client this target opened (and, on Azure ML, the sync target's); a
        credential given by the caller stays open. The target may be used again (its clients are
        then opened anew)."""
        clients, self._clients = self._clients, {}
        backend, self._backend = self._backend, None
        for client in clients.values():
            try:
                await client.close()
            except Exception:  # closing is best effort; a half-open socket must not mask the caller's error
                log.debug("closing %s failed", type(client).__name__, exc_info=True)
        if backend is not None:
            await backend.close()
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        if self._owns_credential and self._credential is not None:
            await self._credential.close()
        await asyncio.to_thread(self._sync.close)

    async def __aenter__(self) -> "Target":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
