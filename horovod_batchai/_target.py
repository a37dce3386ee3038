"""Where requests go -- the local service, Azure Batch AI or Azure Machine Learning -- and
Microsoft's clients built for it.

A :class:`Target` holds what differs between places: the management endpoint, the credential,
how TLS is verified, how hard the clients retry, and the azure-core client options the caller
gave (``transport``, ``retry_total``, ``logging_enable``, ...), which reach every Microsoft
client it builds. Which backend does the work for each kind is decided in :mod:`._backends`.
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union
from urllib.parse import urlparse

from azure.core.credentials import TokenCredential

from ._models.errors import InvalidSpecError, TargetError
from ._places.local_endpoint import LOOPBACK_HOSTS, FollowLocalService
from ._models.names import check_subscription_id

if TYPE_CHECKING:  # imported lazily at run time: each client package is heavy
    from azure.mgmt.batchai import BatchAI
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient
    from azure.storage.fileshare import ShareFileClient, ShareServiceClient

    from ._places.base import Backend
    from .local import LocalService, ServiceInfo

__all__ = ["Target", "TARGET_ENV", "SUBSCRIPTION_ENV", "RESOURCE_GROUP_ENV", "WORKSPACE_ENV", "LOCAL_SUBSCRIPTION",
           "AZURE_MANAGEMENT_ENDPOINT", "KINDS", "check_state_dir", "target_from_env", "CREDENTIAL_OPTIONS"]

log = logging.getLogger(__name__)

TARGET_ENV = "HOROVOD_BATCHAI_TARGET"
SUBSCRIPTION_ENV = "AZURE_SUBSCRIPTION_ID"
STATE_DIR_ENV = "HOROVOD_BATCHAI_STATE_DIR"
NODE_RUNTIME_ENV = "HOROVOD_BATCHAI_NODE_RUNTIME"
RESOURCE_GROUP_ENV = "AZURE_RESOURCE_GROUP"
WORKSPACE_ENV = "AZUREML_WORKSPACE_NAME"
KINDS = ("local", "azure", "azureml")
LOCAL_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
AZURE_MANAGEMENT_ENDPOINT = "https://management.azure.com"
#: bytes a data-plane (storage) client reads from a response body at a time: one 4 MiB Files range.
DATA_BLOCK_SIZE = 4 * 1024 * 1024


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


class Target:
    """Where requests go. Build one with :meth:`local`, :meth:`azure`, :meth:`azureml` or
    :meth:`from_env`.

    Keyword arguments beyond a constructor's own are azure-core client options
    (``transport=``, ``retry_total=``, ``logging_enable=``, ``user_agent=``, ...): they are passed
    to every Microsoft client the target builds, as Azure SDK clients take them.
    The clients it hands out are created on first use, shared, and closed by :meth:`close`
    (or on leaving a ``with`` block).

    One target may be shared by any number of threads: its clients and backend are built once,
    under its lock, and Microsoft's clients are themselves safe to share. Close it once, when
    every thread is done with it.

    A target pickles without its credential, clients or lock, and reconnects on the other side:
    a local one finds the service of the same state directory (starting it, with the same
    ``node_runtime``, if none runs); an
    azure or azureml one builds ``DefaultAzureCredential()`` again there. A target given a
    credential of the caller's is refused with :class:`TargetError` (a credential may hold a
    secret): build it in the receiving process instead. Client options travel along when they
    can be pickled; one that cannot (a policy holding a lock) or that holds credentials (a proxy
    URL with a password, an ``Authorization`` header) is refused the same way, naming it.
    """

    def __init__(self, *, kind: str, subscription_id: str, management_endpoint: str,
                 credential: Optional[TokenCredential] = None,
                 service: Union["LocalService", "ServiceInfo", None] = None,
                 state_dir: Optional[Path] = None, resource_group: Optional[str] = None,
                 workspace: Optional[str] = None, client_options: Optional[Mapping[str, Any]] = None,
                 node_runtime: Optional[str] = None) -> None:
        if kind not in KINDS:
            raise TargetError(f"unknown target kind {kind!r}; use one of {', '.join(KINDS)}")
        if urlparse(management_endpoint).scheme != "https":
            raise TargetError(f"the management endpoint must use https, got {management_endpoint!r}")
        self.kind = kind
        self.subscription_id = check_subscription_id(subscription_id)
        self._management_endpoint = management_endpoint.rstrip("/")
        self._credential = credential
        self._service = service
        self._state_dir = state_dir
        self._node_runtime = node_runtime
        self.resource_group = resource_group
        self.workspace = workspace
        self._client_options: dict[str, Any] = dict(client_options or {})
        for option in ("credential", "subscription_id", "base_url"):
            if option in self._client_options:
                raise TargetError(f"{option} is not a client option; pass it as the target's own argument")
        self._info: Optional["ServiceInfo"] = None
        self._lock = threading.RLock()
        self._clients: dict[str, Any] = {}
        #: the backend doing this target's requests, built on first use (see the backend property)
        self._backend: Any = None
        #: True when the target built DefaultAzureCredential itself (then it is rebuilt after pickling)
        self._default_credential = False

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def local(cls, service: Union["LocalService", "ServiceInfo", None] = None, *,
              state_dir: Optional[Union[str, Path]] = None, node_runtime: Optional[Union[str, Path]] = None,
              subscription_id: str = LOCAL_SUBSCRIPTION, **client_options: Any) -> "Target":
        """The local service: the one given (a started ``LocalService`` or its ``ServiceInfo``),
        else the daemon for ``state_dir`` (default ``$HOROVOD_BATCHAI_STATE_DIR`` or
        ``~/.horovod-batchai/local``), reused if running and started on first use if not.

        ``node_runtime`` is the Python environment the daemon runs jobs with (its interpreter or its
        directory; default ``$HOROVOD_BATCHAI_NODE_RUNTIME``, else the SDK's own Python). A daemon
        already running with another one raises ``NodeRuntimeMismatch`` when first used. A
        ``LocalService`` is given its runtime when it is built, so ``service`` and
        ``node_runtime`` do not go together."""
        runtime = None
        if node_runtime is not None:
            if service is not None:
                raise TargetError("node_runtime applies to a local service the target starts; a LocalService "
                                  "given as service= has its own (LocalService(node_runtime=...))")
            from .local.runner.node_runtime import interpreter_of
            try:
                runtime = interpreter_of(node_runtime)  # absolute now: the caller's directory is meant
            except ValueError as exc:
                raise InvalidSpecError("node_runtime", f"{node_runtime!r} is not a path",
                                       "the path of a Python interpreter or of a Python environment's "
                                       "directory") from exc
        endpoint = "https://127.0.0.1"  # placeholder until the service is found; see _local_info
        return cls(kind="local", subscription_id=subscription_id, management_endpoint=endpoint,
                   service=service, state_dir=check_state_dir(state_dir) if state_dir is not None else None,
                   client_options=client_options, node_runtime=runtime)

    @classmethod
    def azure(cls, subscription_id: str, credential: Optional[TokenCredential] = None, *,
              management_endpoint: str = AZURE_MANAGEMENT_ENDPOINT, **client_options: Any) -> "Target":
        """Azure Batch AI (retired in 2019; kept because the local service speaks its API):
        ``credential`` defaults to ``azure.identity.DefaultAzureCredential()``. Only https
        endpoints are accepted."""
        default = credential is None
        if credential is None:
            credential = default_credential(client_options)
        target = cls(kind="azure", subscription_id=subscription_id, management_endpoint=management_endpoint,
                     credential=credential, client_options=client_options)
        target._default_credential = default
        return target

    @classmethod
    def azureml(cls, subscription_id: str, resource_group: str, workspace: str,
                credential: Optional[TokenCredential] = None, **client_options: Any) -> "Target":
        """An Azure Machine Learning workspace: clusters are AmlCompute, shares are AzureFile
        datastores, jobs are command jobs with MPI distribution. ``credential`` defaults to
        ``azure.identity.DefaultAzureCredential()``. Needs ``pip install horovod-batchai[azureml]``."""
        from ._models.names import check_batchai_name, check_resource_group
        check_resource_group(resource_group)
        check_batchai_name(workspace, "workspace")
        default = credential is None
        if credential is None:
            credential = default_credential(client_options)
        target = cls(kind="azureml", subscription_id=subscription_id, management_endpoint=AZURE_MANAGEMENT_ENDPOINT,
                     credential=credential, resource_group=resource_group, workspace=workspace,
                     client_options=client_options)
        target._default_credential = default
        return target

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None, **client_options: Any) -> "Target":
        """From ``HOROVOD_BATCHAI_TARGET`` (``local``, the default, ``azure`` or ``azureml``),
        ``AZURE_SUBSCRIPTION_ID`` (required for azure and azureml), ``AZURE_RESOURCE_GROUP`` and
        ``AZUREML_WORKSPACE_NAME`` (azureml) and ``HOROVOD_BATCHAI_STATE_DIR`` and
        ``HOROVOD_BATCHAI_NODE_RUNTIME`` (local)."""
        return target_from_env(cls, environ, **client_options)

    def __repr__(self) -> str:
        where = self._management_endpoint if self.kind != "local" else (
            self._info.endpoint if self._info else "not started")
        scope = f", resource_group={self.resource_group!r}, workspace={self.workspace!r}" if self.kind == "azureml" else ""
        return f"Target(kind={self.kind!r}, subscription_id={self.subscription_id!r}{scope}, endpoint={where!r})"

    # -- handing it to another process ----------------------------------------------------------
    def __reduce__(self) -> tuple[Any, ...]:
        import pickle
        for name, value in self._client_options.items():
            if _holds_credentials(name, value):
                raise TargetError(f"the client option {name}= holds a user name or password, which is never pickled; "
                                  "build the Target in the receiving process (a proxy's credentials can come from "
                                  "$HTTPS_PROXY there) and reach resources with from_id(target, id)")
            try:
                pickle.dumps(value)
            except Exception:  # noqa: BLE001 -- any failure means the same: it cannot travel
                raise TargetError(f"the client option {name}= ({type(value).__name__}) cannot be pickled; build the "
                                  "Target in the receiving process and reach resources there with from_id(target, id)"
                                  ) from None
        if self.is_local:
            return (_local_target, (self._local_state_dir(), self.subscription_id, self._client_options,
                                    self._node_runtime))
        if not self._default_credential:
            raise TargetError(f"a {self.kind} target built with a credential of the caller's is not pickled (a "
                              "credential may hold a secret); build the target without one (it then uses "
                              "DefaultAzureCredential in every process), or build it in the receiving process and "
                              "reach resources there with from_id(target, id)")
        if self.kind == "azure":
            return (_azure_target, (self.subscription_id, self._management_endpoint, self._client_options))
        return (_azureml_target, (self.subscription_id, self.resource_group, self.workspace, self._client_options))

    def _local_state_dir(self) -> Path:
        """The state directory of the service this target uses (or will use)."""
        service = self._service if self._service is not None else self._info
        if service is not None:
            return Path(service.state_dir).absolute()
        if self._state_dir is not None:
            return self._state_dir.absolute()
        from .local import default_state_dir  # resolved here: the other process may have another environment
        return default_state_dir().absolute()

    @property
    def client_options(self) -> dict[str, Any]:
        """The azure-core client options given when the target was built (a copy)."""
        return dict(self._client_options)

    # -- where things are -----------------------------------------------------------------------
    @property
    def backend(self) -> "Backend":
        """The backend that does this target's requests (:mod:`horovod_batchai._places`), built on
        first use, shared by every object of the target, closed with it."""
        with self._lock:
            if self._backend is None:
                from ._places import build_backend
                self._backend = build_backend(self)
            backend: "Backend" = self._backend
            return backend

    @property
    def is_local(self) -> bool:
        return self.kind == "local"

    def _local_info(self) -> "ServiceInfo":
        from .local.service import process_exited
        with self._lock:
            if self._info is not None and self._service is None and process_exited(self._info.pid):
                # The daemon this target found or started is gone: find the one running now for
                # the same state directory, or start it again. Requests follow (FollowLocalService).
                log.info("the local service at %s stopped; finding or starting it again", self._info.endpoint)
                self._info = None
            from .local import LocalService
            if isinstance(self._service, LocalService) and self._service.running:
                # a service in this process, perhaps started again on another port: follow it
                self._info = self._service.info
            if self._info is None:
                from .local import ensure_running
                if isinstance(self._service, LocalService):
                    self._info = self._service.info
                elif self._service is not None:
                    self._info = self._service
                else:
                    log.info("finding or starting the local service")
                    try:
                        self._info = ensure_running(self._state_dir, node_runtime=self._node_runtime)
                    except OSError as err:  # the state directory cannot be made or used
                        from .local import default_state_dir
                        where = self._state_dir or default_state_dir()
                        raise TargetError(f"the local service's state directory {where} cannot be used: "
                                          f"{err.strerror or err}" + (f" ({err.filename})" if err.filename else "")
                                          ) from err
                log.debug("using the local service at %s", self._info.endpoint)
            return self._info

    @property
    def default_poll_interval(self) -> float:
        """Seconds between status polls: short locally, about what ``az batchai job wait`` used on Azure."""
        return 0.25 if self.is_local else 15.0

    def default_file_endpoint(self, account_name: str) -> str:
        """The Files endpoint of ``account_name`` when its account document is not at hand (a mount
        in a job.json names only the account): ``https://<account>.file.core.windows.net/`` on Azure,
        ``<local endpoint>/<account>/`` locally."""
        if self.is_local:
            return self._local_info().files_endpoint(account_name).rstrip("/") + "/"
        return f"https://{account_name}.file.core.windows.net/"

    @property
    def management_endpoint(self) -> str:
        return self._local_info().endpoint if self.is_local else self._management_endpoint

    @property
    def connection_verify(self) -> Union[bool, str]:
        """What ``requests`` verifies TLS with: the local service's own certificate, or the system's."""
        return str(self._local_info().ca_cert) if self.is_local else True

    def credential(self) -> TokenCredential:
        if self.is_local:
            return self._local_info().credential()
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

    # -- Microsoft's clients --------------------------------------------------------------------
    def _management_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"base_url": self.management_endpoint}
        if self.is_local:
            # Keep retries on, with short waits: the local service answers in milliseconds, and
            # its fault injection asks for retries that Azure would space out over minutes.
            kwargs.update(connection_verify=self.connection_verify, retry_total=10, retry_backoff_factor=0.05,
                          retry_backoff_max=1.0, polling_interval=0.2)
        kwargs.update(self._client_options)  # the caller's options win over our defaults
        if self.is_local:
            kwargs["per_retry_policies"] = [*self._client_options.get("per_retry_policies", []),
                                            self._follow_service()]
        return kwargs

    def _follow_service(self) -> FollowLocalService:
        return FollowLocalService(lambda: self._local_info().endpoint, self._down_message)

    def _down_message(self, reason: str) -> str:
        """What a :class:`LocalServiceDownError` says: what happened, and how to start the service."""
        if self._service is not None:
            return (f"the local service this target was given is down: {reason}; start it again and build the "
                    "Target with the new one (or use Target.local() to have the daemon started on demand)")
        where = f" --state-dir {self._state_dir}" if self._state_dir is not None else ""
        return (f"the local service is down: {reason}; start it with `horovod-batchai local start{where}` "
                f"(or `python -m horovod_batchai.local start{where}`) and try again")

    def _client(self, key: str, factory: Any) -> Any:
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = factory()
            return client

    def batchai(self) -> "BatchAI":
        from azure.mgmt.batchai import BatchAI
        return self._client("batchai", lambda: BatchAI(self.credential(), self.subscription_id,
                                                       **self._management_kwargs()))

    def resources(self) -> "ResourceManagementClient":
        from azure.mgmt.resource.resources import ResourceManagementClient
        return self._client("resources", lambda: ResourceManagementClient(
            self.credential(), self.subscription_id, **self._management_kwargs()))

    def storage(self) -> "StorageManagementClient":
        from azure.mgmt.storage import StorageManagementClient
        return self._client("storage", lambda: StorageManagementClient(
            self.credential(), self.subscription_id, **self._management_kwargs()))

    def _data_plane_kwargs(self, *, asynchronous: bool = False) -> dict[str, Any]:
        """The options of a storage client; ``asynchronous`` for the aio clients, whose retry
        policies are their own classes."""
        from ._places import retry as _retry
        linear = _retry.AsyncThrottleAwareLinearRetry if asynchronous else _retry.ThrottleAwareLinearRetry
        exponential = _retry.AsyncThrottleAwareExponentialRetry if asynchronous else _retry.ThrottleAwareExponentialRetry
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

    def data_plane_options(self) -> dict[str, Any]:
        """What every data-plane (storage) client of this target is built with."""
        return self._data_plane_kwargs()

    def share_service(self, account_url: str, account_key: str) -> "ShareServiceClient":
        """A ``ShareServiceClient`` for ``account_url`` (the account's ``primaryEndpoints.file``)
        signing with the shared key; the key lives only inside the client."""
        from azure.storage.fileshare import ShareServiceClient
        self.check_data_url(account_url, "the storage account's file endpoint")
        return ShareServiceClient(account_url, credential=account_key, **self._data_plane_kwargs())

    def file_from_sas_url(self, url: str) -> "ShareFileClient":
        """A client for one file reached through a SAS download URL (no other credential sent)."""
        from azure.storage.fileshare import ShareFileClient
        self.check_data_url(url.split("?", 1)[0], "the download URL")
        return ShareFileClient.from_file_url(url, **self._data_plane_kwargs())

    def _adopt(self, client: Any) -> None:
        """Close ``client`` (a share's data-plane client) with the target."""
        with self._lock:
            self._clients[f"adopted-{id(client)}"] = client

    def _disown(self, client: Any) -> None:
        with self._lock:
            self._clients.pop(f"adopted-{id(client)}", None)

    def _holds(self, client: Any) -> bool:
        """Whether ``client`` was adopted and not closed since (by :meth:`close`)."""
        with self._lock:
            return self._clients.get(f"adopted-{id(client)}") is client

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Close every client this target opened, the file shares' data-plane clients included; a
        credential given by the caller stays open. The target may be used again (its clients are
        then opened anew)."""
        with self._lock:
            clients, self._clients = self._clients, {}
            backend, self._backend = self._backend, None
        if backend is not None:
            clients["backend"] = backend
        for client in clients.values():
            try:
                client.close()
            except Exception:  # closing is best effort; a half-open socket must not mask the caller's error
                log.debug("closing %s failed", type(client).__name__, exc_info=True)

    def __enter__(self) -> "Target":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


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


def _local_target(state_dir: Path, subscription_id: str, client_options: Mapping[str, Any],
                  node_runtime: Optional[str] = None) -> Target:
    return Target.local(state_dir=state_dir, subscription_id=subscription_id, node_runtime=node_runtime,
                        **client_options)


def _azure_target(subscription_id: str, management_endpoint: str, client_options: Mapping[str, Any]) -> Target:
    return Target.azure(subscription_id, management_endpoint=management_endpoint, **client_options)


def _azureml_target(subscription_id: str, resource_group: str, workspace: str,
                    client_options: Mapping[str, Any]) -> Target:
    return Target.azureml(subscription_id, resource_group, workspace, **client_options)


def _holds_credentials(name: str, value: Any) -> bool:
    """Whether a client option carries a secret: a proxy URL with a user name or password, or an
    Authorization header."""
    if name == "proxies" and isinstance(value, Mapping):
        return any("@" in urlparse(str(url)).netloc for url in value.values())
    if name == "headers" and isinstance(value, Mapping):
        return any(str(key).lower() in ("authorization", "proxy-authorization") for key in value)
    return False
