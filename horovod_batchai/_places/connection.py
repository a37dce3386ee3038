"""Where one target's requests go, and Microsoft's clients built for it.

A :class:`Connection` holds what differs between places: the management endpoint (found, for
the local service, by finding or starting its daemon), the credential, how TLS is verified, how
hard the clients retry, and the azure-core client options the caller gave (``transport``,
``retry_total``, ``logging_enable``, ...), which reach every Microsoft client it builds. Backends
are given one (never the public ``Target``, which holds a connection and hands out its backend);
:class:`~horovod_batchai._places.connection_async.AsyncConnection` is its aio twin.

One connection may be shared by any number of threads: its clients are built once, under its
lock, and Microsoft's clients are themselves safe to share.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Union, cast
from urllib.parse import urlparse

from azure.core.credentials import TokenCredential

from .._models.constants import DEFAULT_POLL_INTERVAL, LOCAL_POLL_INTERVAL
from .._models.errors import InvalidSpecError, TargetError
from .._models.names import check_batchai_name, check_resource_group, check_subscription_id
from .._shared.target import AZURE_MANAGEMENT_ENDPOINT, KINDS, check_state_dir
from .local_endpoint import LOOPBACK_HOSTS, FollowLocalService

if TYPE_CHECKING:  # imported lazily at run time: each client package is heavy
    from azure.mgmt.batchai import BatchAI
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient
    from azure.storage.fileshare import ShareFileClient, ShareServiceClient

    from ..local import LocalService, ServiceInfo

__all__ = ["Connection", "ShareFile", "DATA_BLOCK_SIZE"]

log = logging.getLogger(__name__)

#: bytes a data-plane (storage) client reads from a response body at a time: one 4 MiB Files range.
DATA_BLOCK_SIZE = 4 * 1024 * 1024


class ShareFile:
    """A file on an Azure file share, read with azure-storage-file-share (the client carries
    the credential: a SAS link's, or a datastore's)."""

    def __init__(self, client: "ShareFileClient") -> None:
        self._client = client

    def size(self) -> int:
        return int(self._client.get_file_properties().size or 0)

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self._client.download_file(offset=offset, length=length).readall())

    def chunks(self) -> Iterator[bytes]:
        return iter(self._client.download_file().chunks())


class Connection:
    """Where requests go for one target, and the Microsoft clients that send them (built on
    first use, shared, closed by :meth:`close`)."""

    def __init__(self, *, kind: str, subscription_id: str, management_endpoint: str,
                 credential: Optional[TokenCredential] = None,
                 service: Union["LocalService", "ServiceInfo", None] = None, state_dir: Optional[Path] = None,
                 node_runtime: Optional[str] = None, resource_group: Optional[str] = None,
                 workspace: Optional[str] = None, client_options: Optional[Mapping[str, Any]] = None) -> None:
        if kind not in KINDS:
            raise TargetError(f"unknown target kind {kind!r}; use one of {', '.join(KINDS)}")
        if urlparse(management_endpoint).scheme != "https":
            raise TargetError(f"the management endpoint must use https, got {management_endpoint!r}")
        for option in ("credential", "subscription_id", "base_url"):
            if option in (client_options or {}):
                raise TargetError(f"{option} is not a client option; pass it as the target's own argument")
        self.kind = kind
        self.subscription_id = check_subscription_id(subscription_id)
        #: the Azure ML workspace's resource group and name (an azureml connection's scope)
        self.resource_group = resource_group
        self.workspace = workspace
        self.node_runtime = node_runtime
        self.service = service
        self.state_dir = state_dir
        self._management_endpoint = management_endpoint.rstrip("/")
        self._credential = credential
        self._client_options: dict[str, Any] = dict(client_options or {})
        self._info: Optional["ServiceInfo"] = None
        self._lock = threading.RLock()
        self._clients: dict[str, Any] = {}

    # -- the three kinds, their arguments checked ------------------------------------------------
    @classmethod
    def local(cls, service: Union["LocalService", "ServiceInfo", None], *, state_dir: Union[str, Path, None],
              node_runtime: Union[str, Path, None], subscription_id: str,
              client_options: Mapping[str, Any]) -> "Connection":
        """The local service: the one given, else the daemon for ``state_dir`` (see ``Target.local``)."""
        runtime = None
        if node_runtime is not None:
            if service is not None:
                raise TargetError("node_runtime applies to a local service the target starts; a LocalService "
                                  "given as service= has its own (LocalService(node_runtime=...))")
            from ..local.runner.node_runtime import interpreter_of
            try:
                runtime = interpreter_of(node_runtime)  # absolute now: the caller's directory is meant
            except ValueError as exc:
                raise InvalidSpecError("node_runtime", f"{node_runtime!r} is not a path",
                                       "the path of a Python interpreter or of a Python environment's "
                                       "directory") from exc
        endpoint = "https://127.0.0.1"  # placeholder until the service is found; see local_info
        return cls(kind="local", subscription_id=subscription_id, management_endpoint=endpoint, service=service,
                   state_dir=check_state_dir(state_dir) if state_dir is not None else None, node_runtime=runtime,
                   client_options=client_options)

    @classmethod
    def azure(cls, subscription_id: str, credential: Any, *, management_endpoint: str,
              client_options: Mapping[str, Any]) -> "Connection":
        """Batch AI's API on Azure Resource Manager."""
        return cls(kind="azure", subscription_id=subscription_id, management_endpoint=management_endpoint,
                   credential=credential, client_options=client_options)

    @classmethod
    def azureml(cls, subscription_id: str, resource_group: str, workspace: str, credential: Any,
                client_options: Mapping[str, Any]) -> "Connection":
        """One Azure Machine Learning workspace."""
        check_resource_group(resource_group)
        check_batchai_name(workspace, "workspace")
        return cls(kind="azureml", subscription_id=subscription_id, management_endpoint=AZURE_MANAGEMENT_ENDPOINT,
                   credential=credential, resource_group=resource_group, workspace=workspace,
                   client_options=client_options)

    @property
    def client_options(self) -> dict[str, Any]:
        """The azure-core client options the caller gave (a copy)."""
        return dict(self._client_options)

    @property
    def is_local(self) -> bool:
        return self.kind == "local"

    # -- the local service ----------------------------------------------------------------------
    @property
    def found_local_service(self) -> bool:
        """Whether the local service was found (or started) already."""
        return self._info is not None

    def local_info(self) -> "ServiceInfo":
        """The local service this connection sends to: the one given, or the daemon of its state
        directory, found or started now (and again, should it have stopped since)."""
        from ..local.daemon import ensure_running, process_exited
        with self._lock:
            if self._info is not None and self.service is None and process_exited(self._info.pid):
                # The daemon this connection found or started is gone: find the one running now for
                # the same state directory, or start it again. Requests follow (FollowLocalService).
                log.info("the local service at %s stopped; finding or starting it again", self._info.endpoint)
                self._info = None
            in_process = self._in_process()
            if in_process is not None and in_process.running:
                # a service in this process, perhaps started again on another port: follow it
                self._info = in_process.info
            if self._info is None:
                if in_process is not None:
                    self._info = in_process.info
                elif self.service is not None:
                    self._info = cast("ServiceInfo", self.service)
                else:
                    log.info("finding or starting the local service")
                    try:
                        self._info = ensure_running(self.state_dir, node_runtime=self.node_runtime)
                    except OSError as err:  # the state directory cannot be made or used
                        from ..local.core.context import default_state_dir
                        where = self.state_dir or default_state_dir()
                        raise TargetError(f"the local service's state directory {where} cannot be used: "
                                          f"{err.strerror or err}" + (f" ({err.filename})" if err.filename else "")
                                          ) from err
                log.debug("using the local service at %s", self._info.endpoint)
            info: "ServiceInfo" = self._info
            return info

    def _in_process(self) -> Optional["LocalService"]:
        """The service given when it is a ``LocalService`` (running in this process), not a
        ``ServiceInfo``; told apart without importing the service's planes."""
        from ..local.daemon import ServiceInfo
        return None if self.service is None or isinstance(self.service, ServiceInfo) else self.service

    def local_state_dir(self) -> Path:
        """The state directory of the local service this connection uses (or will use)."""
        service = self.service if self.service is not None else self._info
        if service is not None:
            return Path(service.state_dir).absolute()
        if self.state_dir is not None:
            return self.state_dir.absolute()
        from ..local.core.context import default_state_dir  # here: the other process may have another environment
        return default_state_dir().absolute()

    def endpoint_text(self) -> str:
        """Where requests go, for a ``repr``: never starts the local service."""
        if not self.is_local:
            return self._management_endpoint
        return self._info.endpoint if self._info else "not started"

    # -- where things are -----------------------------------------------------------------------
    @property
    def default_poll_interval(self) -> float:
        """Seconds between status polls: short locally, about what ``az batchai job wait`` used on Azure."""
        return LOCAL_POLL_INTERVAL if self.is_local else DEFAULT_POLL_INTERVAL

    def default_file_endpoint(self, account_name: str) -> str:
        """The Files endpoint of ``account_name`` when its account document is not at hand (a mount
        in a job.json names only the account): ``https://<account>.file.core.windows.net/`` on Azure,
        ``<local endpoint>/<account>/`` locally."""
        if self.is_local:
            return self.local_info().files_endpoint(account_name).rstrip("/") + "/"
        return f"https://{account_name}.file.core.windows.net/"

    @property
    def management_endpoint(self) -> str:
        return self.local_info().endpoint if self.is_local else self._management_endpoint

    @property
    def connection_verify(self) -> Union[bool, str]:
        """What ``requests`` verifies TLS with: the local service's own certificate, or the system's."""
        return str(self.local_info().ca_cert) if self.is_local else True

    def mlflow_tracking_uri(self) -> Optional[str]:
        """The local service's MLflow tracking URI (its authenticated ``/_mlflow`` front); None
        elsewhere (an Azure ML workspace's is read from the workspace)."""
        if not self.is_local:
            return None
        from .mlflow import LOCAL_TRACKING_PATH
        return self.local_info().endpoint + LOCAL_TRACKING_PATH

    def credential(self) -> TokenCredential:
        if self.is_local:
            return self.local_info().credential()
        assert self._credential is not None
        return self._credential

    def check_data_url(self, url: str, what: str) -> str:
        """Refuse a storage URL the service handed us unless it is https (and, locally, loopback)."""
        parsed = urlparse(url)
        if parsed.scheme != "https":
            raise TargetError(f"{what} must be an https URL; the service answered scheme {parsed.scheme!r}")
        if self.is_local and parsed.hostname not in LOOPBACK_HOSTS:
            raise TargetError(f"{what} points at {parsed.hostname!r}, not at the local service")
        return url

    # -- the options of Microsoft's clients -----------------------------------------------------
    def management_options(self) -> dict[str, Any]:
        """What every management (ARM) client is built with, the caller's options last."""
        kwargs: dict[str, Any] = {"base_url": self.management_endpoint}
        if self.is_local:
            # Keep retries on, with short waits: the local service answers in milliseconds, and
            # its fault injection asks for retries that Azure would space out over minutes.
            kwargs.update(connection_verify=self.connection_verify, retry_total=10, retry_backoff_factor=0.05,
                          retry_backoff_max=1.0, polling_interval=0.2)
        kwargs.update(self._client_options)  # the caller's options win over our defaults
        for name in ("per_call_policies", "per_retry_policies"):
            # a list of each client's own: azure-mgmt-core's ARMPipelineClient appends to the one
            # it is given, which would reach the caller's list and every client built after
            if isinstance(kwargs.get(name), list):
                kwargs[name] = list(kwargs[name])
        if self.is_local:
            kwargs["per_retry_policies"] = [*self._client_options.get("per_retry_policies", []),
                                            self._follow_service()]
        return kwargs

    def data_plane_options(self, *, asynchronous: bool = False) -> dict[str, Any]:
        """What every data-plane (storage) client is built with; ``asynchronous`` for the aio
        clients, whose retry policies are their own classes."""
        from . import retry
        linear = retry.AsyncThrottleAwareLinearRetry if asynchronous else retry.ThrottleAwareLinearRetry
        exponential = retry.AsyncThrottleAwareExponentialRetry if asynchronous else retry.ThrottleAwareExponentialRetry
        options = {k: v for k, v in self._client_options.items() if k != "polling_interval"}
        kwargs: dict[str, Any]
        if self.is_local:
            # Short, steady waits for the local service; azure-storage's defaults otherwise.
            kwargs = {"connection_verify": self.connection_verify,
                      "retry_policy": linear(backoff=0.1, retry_total=10,  # type: ignore[arg-type]
                                             random_jitter_range=0.05)}  # type: ignore[arg-type]
        else:
            kwargs = {"retry_policy": exponential()}
        if any(k.startswith("retry_") for k in options):
            kwargs.pop("retry_policy")  # the caller's retry options configure the storage client's own policy
        # A response body is read in blocks of this size (azure-storage's default is 256 KiB): one
        # block per 4 MiB range saves ~0.8 CPU-s per GiB downloaded (benchmarks/bench_files.py).
        kwargs["connection_data_block_size"] = DATA_BLOCK_SIZE
        kwargs.update(options)
        if self.is_local:
            # azure-storage's clients take extra policies under this name and run them on every attempt
            kwargs["_additional_pipeline_policies"] = [*options.get("_additional_pipeline_policies", []),
                                                       self._follow_service()]
        return kwargs

    def _follow_service(self) -> FollowLocalService:
        return FollowLocalService(lambda: self.local_info().endpoint, self._down_message)

    def _down_message(self, reason: str) -> str:
        """What a :class:`LocalServiceDownError` says: what happened, and how to start the service."""
        if self._in_process() is not None:
            return (f"the local service this target was given is down: {reason}; start it again "
                    "(service.start()) and try again: this target follows it, on whatever port it gets")
        if self.service is not None:
            return (f"the local service this target was given is down: {reason}; start it again and build the "
                    "Target with its new ServiceInfo (or use Target.local() to have the daemon started on demand)")
        where = f" --state-dir {self.state_dir}" if self.state_dir is not None else ""
        return (f"the local service is down: {reason}; start it with `horovod-batchai local start{where}` "
                f"(or `python -m horovod_batchai.local start{where}`) and try again")

    # -- Microsoft's clients --------------------------------------------------------------------
    def _client(self, key: str, factory: Any) -> Any:
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = factory()
            return client

    def batchai(self) -> "BatchAI":
        from azure.mgmt.batchai import BatchAI
        return self._client("batchai", lambda: BatchAI(self.credential(), self.subscription_id,
                                                       **self.management_options()))

    def batchai_rest(self) -> Any:
        """An ARM pipeline client with the policies of :meth:`batchai`'s, for Batch AI requests
        sent and read as JSON (see :mod:`.pipeline`)."""
        from .pipeline import ARM_SCOPE, pipeline_client
        return self._client("batchai-rest", lambda: pipeline_client(self.credential(), [ARM_SCOPE],
                                                                   self.management_options(), arm=True))

    def resources(self) -> "ResourceManagementClient":
        from azure.mgmt.resource.resources import ResourceManagementClient
        return self._client("resources", lambda: ResourceManagementClient(
            self.credential(), self.subscription_id, **self.management_options()))

    def storage(self) -> "StorageManagementClient":
        from azure.mgmt.storage import StorageManagementClient
        return self._client("storage", lambda: StorageManagementClient(
            self.credential(), self.subscription_id, **self.management_options()))

    def share_service(self, account_url: str, account_key: str) -> "ShareServiceClient":
        """A ``ShareServiceClient`` for ``account_url`` (the account's ``primaryEndpoints.file``)
        signing with the shared key; the key lives only inside the client (the caller closes it)."""
        from azure.storage.fileshare import ShareServiceClient
        self.check_data_url(account_url, "the storage account's file endpoint")
        return ShareServiceClient(account_url, credential=account_key, **self.data_plane_options())

    def file_from_sas_url(self, url: str) -> "ShareFileClient":
        """A client for one file reached through a SAS download URL (no other credential sent)."""
        from azure.storage.fileshare import ShareFileClient
        self.check_data_url(url.split("?", 1)[0], "the download URL")
        return ShareFileClient.from_file_url(url, **self.data_plane_options())

    def open_output(self, url: str) -> ShareFile:
        """A job's output file behind a SAS link, for ranged reads."""
        return ShareFile(self.file_from_sas_url(url))

    def adopt(self, client: Any) -> None:
        """Close ``client`` (a share's data-plane client) with the connection."""
        with self._lock:
            self._clients[f"adopted-{id(client)}"] = client

    def disown(self, client: Any) -> None:
        with self._lock:
            self._clients.pop(f"adopted-{id(client)}", None)

    def holds(self, client: Any) -> bool:
        """Whether ``client`` was adopted and not closed since (by :meth:`close`)."""
        with self._lock:
            return self._clients.get(f"adopted-{id(client)}") is client

    def close(self) -> None:
        """Close every client this connection opened, the adopted ones included; a credential
        given by the caller stays open. The connection may be used again (its clients are then
        opened anew)."""
        with self._lock:
            clients, self._clients = self._clients, {}
        for client in clients.values():
            try:
                client.close()
            except Exception:  # closing is best effort; a half-open socket must not mask the caller's error
                log.debug("closing %s failed", type(client).__name__, exc_info=True)
