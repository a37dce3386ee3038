"""Where one aio target's requests go, and Microsoft's aio clients built for it.

An :class:`AsyncConnection` is a sync :class:`~.connection.Connection` (which holds the
endpoints, the local service's certificate, the retry settings and the caller's client options)
plus the asynchronous clients it hands out: ``azure.mgmt.batchai.aio``,
``azure.mgmt.resource.resources.aio``, ``azure.mgmt.storage.aio`` and
``azure.storage.fileshare.aio``, sending through azure-core's aiohttp transport, each told to
verify TLS the way the sync clients are (the local service's own certificate).

TLS: azure-core's aiohttp transport, given ``connection_verify=<CA file>``, builds a new
``ssl.SSLContext`` for every request, and aiohttp then opens a new connection for each (its pool
is keyed by the context): a TLS handshake and a CA file parse per request, on the event loop.
So the connection makes one context (the local service's certificate, or the system's CAs) and
one aiohttp session whose connector holds it, shared by every client it builds (one connection
pool), unless the caller gave a ``transport`` of their own.
"""
from __future__ import annotations

import asyncio
import importlib
import logging
import ssl
from typing import TYPE_CHECKING, Any, AsyncIterator, Optional

from azure.core.credentials import AccessToken, AccessTokenInfo, TokenCredential
from azure.core.credentials_async import AsyncTokenCredential

from .._models.errors import import_optional
from .connection import Connection

if TYPE_CHECKING:
    from azure.mgmt.batchai.aio import BatchAI
    from azure.mgmt.resource.resources.aio import ResourceManagementClient
    from azure.mgmt.storage.aio import StorageManagementClient
    from azure.storage.fileshare.aio import ShareFileClient, ShareServiceClient

__all__ = ["AsyncConnection", "AsyncShareFile", "AIO_RANGE"]

log = logging.getLogger(__name__)

#: bytes per request of the aio data-plane clients (see AsyncConnection.data_plane_options)
AIO_RANGE = 512 * 1024
#: what the aio clients import when first used: imported off the loop by AsyncConnection.ready()
_FIRST_NEEDED = ("horovod_batchai._places.pipeline", "azure.core.configuration", "azure.mgmt.core",
                 "azure.mgmt.batchai.aio", "azure.mgmt.batchai.models", "azure.mgmt.resource.resources.aio",
                 "azure.mgmt.storage.aio", "azure.mgmt.storage.models", "azure.storage.fileshare.aio")
_TRANSPORT = ("aiohttp", "azure.core.pipeline.transport")


class SyncCredentialAsAsync:
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

    async def __aenter__(self) -> "SyncCredentialAsAsync":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        pass


class AsyncShareFile:
    """A job output file behind a SAS link, read with ``azure.storage.fileshare.aio``."""

    def __init__(self, client: "ShareFileClient") -> None:
        self._client = client

    async def size(self) -> int:
        return int((await self._client.get_file_properties()).size or 0)

    async def read(self, offset: int, length: int) -> bytes:
        return bytes(await (await self._client.download_file(offset=offset, length=length)).readall())

    async def chunks(self) -> AsyncIterator[bytes]:
        async for chunk in (await self._client.download_file()).chunks():
            yield chunk

    async def close(self) -> None:
        await self._client.close()


class AsyncConnection:
    """Where requests go for one aio target, and the aio clients that send them (built on first
    use, shared, closed by ``await close()``)."""

    def __init__(self, sync: Connection, credential: Optional[AsyncTokenCredential] = None, *,
                 owns_credential: bool = False) -> None:
        #: the sync connection with the same settings (its clients are its own)
        self.sync = sync
        self._credential = credential
        self._owns_credential = owns_credential
        self._clients: dict[str, Any] = {}
        self._lock = asyncio.Lock()
        self._session: Any = None  # the aiohttp session every client's transport shares
        self._prepared = False
        self._ssl: Optional[ssl.SSLContext] = None  # what the shared session verifies TLS with

    @property
    def kind(self) -> str:
        return self.sync.kind

    @property
    def subscription_id(self) -> str:
        return self.sync.subscription_id

    @property
    def is_local(self) -> bool:
        return self.sync.is_local

    @property
    def default_poll_interval(self) -> float:
        return self.sync.default_poll_interval

    def default_file_endpoint(self, account_name: str) -> str:
        return self.sync.default_file_endpoint(account_name)

    def check_data_url(self, url: str, what: str) -> str:
        return self.sync.check_data_url(url, what)

    def mlflow_tracking_uri(self) -> Optional[str]:
        """The sync connection's (no request once :meth:`ready` has found the local service)."""
        return self.sync.mlflow_tracking_uri()

    async def ready(self) -> None:
        """What the first request needs that would hold the event loop, done in a worker thread:
        importing Microsoft's aio clients and models (tens to hundreds of milliseconds each), and
        finding (or starting) the local service (seconds)."""
        if not self._prepared or (self.is_local and not self.sync.found_local_service):
            await asyncio.to_thread(self._prepare)
            self._prepared = True

    def _prepare(self) -> None:
        for module in _FIRST_NEEDED + (_TRANSPORT if self._own_transport() else ()):
            importlib.import_module(module)
        if self.is_local:
            self.sync.local_info()
        if self._own_transport() and self._ssl is None:
            # reading the CA file (or the system's CAs) takes ~20 ms
            verify = self.sync.connection_verify
            self._ssl = ssl.create_default_context(cafile=verify) if isinstance(verify, str) else \
                ssl.create_default_context()

    # -- the options of Microsoft's aio clients -------------------------------------------------
    def _own_transport(self) -> bool:
        """Whether the aio clients send through the connection's aiohttp session (the caller gave
        no transport of their own; an Azure ML target's is a sync one, for azure-ai-ml)."""
        return "transport" not in self.sync.client_options or self.kind == "azureml"

    def _check_transport(self) -> None:
        """aiohttp is the aio extra's: without it, say what to install before anything starts."""
        if self._own_transport():
            import_optional("aiohttp", "horovod_batchai.aio (azure-core's asynchronous transport)", extra="aio")

    def _with_transport(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` (a client's options) with the connection's shared transport, unless the
        caller gave one."""
        if not self._own_transport():
            return kwargs
        if self._session is None:
            aiohttp = import_optional("aiohttp", "horovod_batchai.aio (azure-core's asynchronous transport)",
                                      extra="aio")
            if self._ssl is None:  # a client built before ready() (never, by this class's own methods)
                self._prepare()
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._ssl), trust_env=True)
        from azure.core.pipeline.transport import AioHttpTransport
        # the context is the connector's: a request that named a CA file would get a context of its own
        return {**kwargs, "connection_verify": True,
                "transport": AioHttpTransport(session=self._session, session_owner=False)}

    def management_options(self) -> dict[str, Any]:
        return self._with_transport(self.sync.management_options())

    def data_plane_options(self) -> dict[str, Any]:
        # Ranges of 512 KiB rather than azure-storage's 4 MiB (and a first GET of 512 KiB, not 32 MiB):
        # each range is encrypted, decrypted and joined in one go on the event loop, so its size
        # is how long the loop is held. The caller's options win.
        ranges = {"max_range_size": AIO_RANGE, "max_single_get_size": AIO_RANGE, "max_chunk_get_size": AIO_RANGE}
        return self._with_transport({**ranges, **self.sync.data_plane_options(asynchronous=True)})

    def credential(self) -> AsyncTokenCredential:
        if self._credential is not None:
            return self._credential
        # the local service's, or an Azure ML target's sync one (its storage accounts are ARM's)
        credential = SyncCredentialAsAsync(self.sync.credential(), in_thread=not self.is_local)
        return credential  # type: ignore[return-value]

    # -- Microsoft's aio clients ----------------------------------------------------------------
    async def _client(self, module: str, name: str) -> Any:
        """The management client ``module.name``, built on first use (its module imported off the loop)."""
        return await self._built(name, lambda: getattr(importlib.import_module(module), name)(
            self.credential(), self.subscription_id, **self.management_options()))

    async def _built(self, key: str, factory: Any) -> Any:
        """The client kept under ``key``, built by ``factory`` on first use, once ready()."""
        client = self._clients.get(key)
        if client is None:
            self._check_transport()
            await self.ready()
            async with self._lock:
                client = self._clients.get(key)
                if client is None:
                    client = self._clients[key] = factory()
        return client

    async def batchai(self) -> "BatchAI":
        client: "BatchAI" = await self._client("azure.mgmt.batchai.aio", "BatchAI")
        return client

    async def batchai_rest(self) -> Any:
        """The aio twin of :meth:`Connection.batchai_rest`."""
        from .pipeline import ARM_SCOPE, pipeline_client
        return await self._built("batchai-rest", lambda: pipeline_client(
            self.credential(), [ARM_SCOPE], self.management_options(), arm=True, asynchronous=True))

    async def resources(self) -> "ResourceManagementClient":
        client: "ResourceManagementClient" = await self._client("azure.mgmt.resource.resources.aio",
                                                                "ResourceManagementClient")
        return client

    async def storage(self) -> "StorageManagementClient":
        client: "StorageManagementClient" = await self._client("azure.mgmt.storage.aio", "StorageManagementClient")
        return client

    async def share_service(self, account_url: str, account_key: str) -> "ShareServiceClient":
        """An aio ``ShareServiceClient`` signing with the shared key (the caller closes it)."""
        self._check_transport()
        await self.ready()
        from azure.storage.fileshare.aio import ShareServiceClient
        self.check_data_url(account_url, "the storage account's file endpoint")
        return ShareServiceClient(account_url, credential=account_key, **self.data_plane_options())

    async def file_from_sas_url(self, url: str) -> "ShareFileClient":
        """An aio client for one file reached through a SAS download URL (the caller closes it)."""
        self._check_transport()
        await self.ready()
        from azure.storage.fileshare.aio import ShareFileClient
        self.check_data_url(url.split("?", 1)[0], "the download URL")
        return ShareFileClient.from_file_url(url, **self.data_plane_options())

    async def open_output(self, url: str) -> AsyncShareFile:
        """A job's output file behind a SAS link, for ranged reads (the caller closes it)."""
        return AsyncShareFile(await self.file_from_sas_url(url))

    def adopt(self, client: Any) -> None:
        """Close ``client`` (a share's data-plane client) with the connection."""
        self._clients[f"adopted-{id(client)}"] = client

    def disown(self, client: Any) -> None:
        self._clients.pop(f"adopted-{id(client)}", None)

    def holds(self, client: Any) -> bool:
        """Whether ``client`` was adopted and not closed since (by :meth:`close`)."""
        return self._clients.get(f"adopted-{id(client)}") is client

    async def close(self) -> None:
        """Close every client this connection opened, its session, the credential it made, and
        the sync connection's clients; a credential given by the caller stays open. The
        connection may be used again (its clients are then opened anew)."""
        clients, self._clients = self._clients, {}
        for client in clients.values():
            try:
                await client.close()
            except Exception:  # closing is best effort; a half-open socket must not mask the caller's error
                log.debug("closing %s failed", type(client).__name__, exc_info=True)
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        if self._owns_credential and self._credential is not None:
            await self._credential.close()
        await asyncio.to_thread(self.sync.close)
