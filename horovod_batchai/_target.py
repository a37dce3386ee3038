"""Where requests go -- the local service, Azure Batch AI or Azure Machine Learning -- and
Microsoft's clients built for it.

A :class:`Target` holds what differs between places: the management endpoint, the credential,
how TLS is verified, how hard the clients retry, and the azure-core client options the caller
gave (``transport``, ``retry_total``, ``logging_enable``, ...), which reach every Microsoft
client it builds (its :class:`~._places.connection.Connection`). Which backend does the work for
each kind is found in :mod:`._places`.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from azure.core.credentials import TokenCredential

from ._models.errors import TargetError
from ._places import build_backend
from ._places.connection import Connection
from ._shared.target import (AZURE_MANAGEMENT_ENDPOINT, LOCAL_SUBSCRIPTION, default_credential, holds_credentials,
                             target_from_env)
from ._workspace import Workspace

if TYPE_CHECKING:  # imported lazily at run time: each client package is heavy
    from azure.mgmt.batchai import BatchAI
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient
    from azure.storage.fileshare import ShareFileClient, ShareServiceClient

    from ._places.base import Backend
    from .local import LocalService, ServiceInfo

__all__ = ["Target", "connection_of"]

log = logging.getLogger(__name__)


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

    #: the side of the API this target serves (the aio Target's is True)
    _asynchronous = False

    def __init__(self, *, kind: str, subscription_id: str, management_endpoint: str,
                 credential: Optional[TokenCredential] = None,
                 service: Union["LocalService", "ServiceInfo", None] = None,
                 state_dir: Optional[Path] = None, resource_group: Optional[str] = None,
                 workspace: Optional[str] = None, client_options: Optional[Mapping[str, Any]] = None,
                 node_runtime: Optional[str] = None) -> None:
        self._start(Connection(kind=kind, subscription_id=subscription_id, management_endpoint=management_endpoint,
                               credential=credential, service=service, state_dir=state_dir,
                               node_runtime=node_runtime, resource_group=resource_group, workspace=workspace,
                               client_options=client_options))

    def _start(self, connection: Connection, *, default_credential: bool = False) -> None:
        self._connection = connection
        self.kind = connection.kind
        self.subscription_id = connection.subscription_id
        self.resource_group = connection.resource_group
        self.workspace = connection.workspace
        self._lock = threading.RLock()
        #: the backend doing this target's requests, built on first use (see the backend property)
        self._backend: Any = None
        #: True when the target built DefaultAzureCredential itself (then it is rebuilt after pickling)
        self._default_credential = default_credential

    @classmethod
    def _over(cls, connection: Connection, *, default_credential: bool = False) -> "Target":
        """A target whose requests go through ``connection``."""
        target = cls.__new__(cls)
        target._start(connection, default_credential=default_credential)
        return target

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
        ``node_runtime`` do not go together.

        :param service: a started ``LocalService`` or its ``ServiceInfo``; None: the daemon for ``state_dir``.
        :keyword state_dir: the daemon's state directory (default ``$HOROVOD_BATCHAI_STATE_DIR`` or
            ``~/.horovod-batchai/local``).
        :keyword node_runtime: the interpreter, or its environment's directory, the daemon runs jobs with.
        :keyword str subscription_id: the subscription the local service's resource ids name.
        :returns: a :class:`Target` for the local service."""
        return cls._over(Connection.local(service, state_dir=state_dir, node_runtime=node_runtime,
                                          subscription_id=subscription_id, client_options=client_options))

    @classmethod
    def azure(cls, subscription_id: str, credential: Optional[TokenCredential] = None, *,
              management_endpoint: str = AZURE_MANAGEMENT_ENDPOINT, **client_options: Any) -> "Target":
        """Azure Batch AI (retired in 2019; kept because the local service speaks its API):
        ``credential`` defaults to ``azure.identity.DefaultAzureCredential()``. Only https
        endpoints are accepted.

        :param str subscription_id: the Azure subscription.
        :param credential: an azure-core ``TokenCredential`` (default ``DefaultAzureCredential()``).
        :keyword str management_endpoint: the ARM endpoint (https only).
        :returns: a :class:`Target` for Batch AI's API on Azure."""
        default = credential is None
        connection = Connection.azure(subscription_id, credential or default_credential(client_options),
                                      management_endpoint=management_endpoint, client_options=client_options)
        return cls._over(connection, default_credential=default)

    @classmethod
    def azureml(cls, subscription_id: str, resource_group: str, workspace: str,
                credential: Optional[TokenCredential] = None, **client_options: Any) -> "Target":
        """An Azure Machine Learning workspace: clusters are AmlCompute, shares are AzureFile
        datastores, jobs are command jobs with MPI distribution. ``credential`` defaults to
        ``azure.identity.DefaultAzureCredential()``. Needs ``pip install horovod-batchai[azureml]``.

        :param str subscription_id: the workspace's subscription.
        :param str resource_group: the workspace's resource group.
        :param str workspace: the Azure ML workspace's name.
        :param credential: an azure-core ``TokenCredential`` (default ``DefaultAzureCredential()``).
        :returns: a :class:`Target` for the Azure ML workspace."""
        default = credential is None
        connection = Connection.azureml(subscription_id, resource_group, workspace,
                                        credential or default_credential(client_options), client_options)
        return cls._over(connection, default_credential=default)

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None, **client_options: Any) -> "Target":
        """From ``HOROVOD_BATCHAI_TARGET`` (``local``, the default, ``azure`` or ``azureml``),
        ``AZURE_SUBSCRIPTION_ID`` (required for azure and azureml), ``AZURE_RESOURCE_GROUP`` and
        ``AZUREML_WORKSPACE_NAME`` (azureml) and ``HOROVOD_BATCHAI_STATE_DIR`` and
        ``HOROVOD_BATCHAI_NODE_RUNTIME`` (local).

        :param environ: the variables to read (default ``os.environ``).
        :returns: the :class:`Target` the variables name."""
        return target_from_env(cls, environ, **client_options)

    def __repr__(self) -> str:
        where = self._connection.endpoint_text()
        scope = f", resource_group={self.resource_group!r}, workspace={self.workspace!r}" if self.kind == "azureml" else ""
        return f"Target(kind={self.kind!r}, subscription_id={self.subscription_id!r}{scope}, endpoint={where!r})"

    # -- handing it to another process ----------------------------------------------------------
    def __reduce__(self) -> tuple[Any, ...]:
        import pickle
        for name, value in self._connection.client_options.items():
            if holds_credentials(name, value):
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
            return (_local_target, (self._connection.local_state_dir(), self.subscription_id,
                                    self._connection.client_options, self._connection.node_runtime))
        if not self._default_credential:
            raise TargetError(f"a {self.kind} target built with a credential of the caller's is not pickled (a "
                              "credential may hold a secret); build the target without one (it then uses "
                              "DefaultAzureCredential in every process), or build it in the receiving process and "
                              "reach resources there with from_id(target, id)")
        if self.kind == "azure":
            return (_azure_target, (self.subscription_id, self._connection.endpoint_text(),
                                    self._connection.client_options))
        return (_azureml_target, (self.subscription_id, self.resource_group, self.workspace,
                                  self._connection.client_options))

    @property
    def client_options(self) -> dict[str, Any]:
        """The azure-core client options given when the target was built (a copy)."""
        return self._connection.client_options

    # -- where things are -----------------------------------------------------------------------
    @property
    def backend(self) -> "Backend":
        """The backend that does this target's requests (found for its kind in
        :mod:`horovod_batchai._places`), built on first use, shared by every object of the target,
        closed with it."""
        with self._lock:
            if self._backend is None:
                self._backend = build_backend(self._connection)
            backend: "Backend" = self._backend
            return backend

    @property
    def is_local(self) -> bool:
        """True for the local service (:meth:`local`), False for Azure and Azure ML."""
        return self.kind == "local"

    @property
    def default_poll_interval(self) -> float:
        """Seconds between status polls: short locally, about what ``az batchai job wait`` used on Azure."""
        return self._connection.default_poll_interval

    def default_file_endpoint(self, account_name: str) -> str:
        """The Files endpoint of ``account_name`` when its account document is not at hand (a mount
        in a job.json names only the account): ``https://<account>.file.core.windows.net/`` on Azure,
        ``<local endpoint>/<account>/`` locally.

        :param str account_name: the storage account.
        :returns: the endpoint URL, ending in ``/``."""
        return self._connection.default_file_endpoint(account_name)

    @property
    def management_endpoint(self) -> str:
        """Where management (ARM) requests go; locally, the service is found or started first."""
        return self._connection.management_endpoint

    @property
    def mlflow_tracking_uri(self) -> Optional[str]:
        """Where this target's jobs are tracked, as MLflow takes it (``mlflow.set_tracking_uri``),
        like azure-ai-ml's ``Workspace.mlflow_tracking_uri``: locally the service's authenticated
        ``https://127.0.0.1:PORT/_mlflow`` (found or started first; MLflow's client needs
        ``MLFLOW_TRACKING_TOKEN`` and ``MLFLOW_TRACKING_SERVER_CERT_PATH`` for it: see the local
        service's docs); on Azure ML the workspace's ``azureml://<region>.api.azureml.ms/mlflow/
        v1.0/subscriptions/.../workspaces/<ws>`` (read from the workspace once; MLflow's client
        needs the ``azureml-mlflow`` plugin for that scheme); None on Azure Batch AI, which was
        retired in 2019 without MLflow tracking."""
        uri: Optional[str] = self.backend.mlflow_tracking_uri()
        return uri

    @property
    def connection_verify(self) -> Union[bool, str]:
        """What ``requests`` verifies TLS with: the local service's own certificate, or the system's."""
        return self._connection.connection_verify

    def credential(self) -> TokenCredential:
        """The credential every client of the target signs with (locally, the service's own).

        :returns: an azure-core ``TokenCredential``."""
        return self._connection.credential()

    def check_data_url(self, url: str, what: str) -> str:
        """Refuse a storage URL the service handed us unless it is https (and, locally, loopback).

        :param str url: the URL the service returned.
        :param str what: what the URL is for, named in the error.
        :returns: ``url`` unchanged.
        :raises TargetError: for a URL that is not https, or (locally) not the local service's."""
        return self._connection.check_data_url(url, what)

    def _workspace(self, resource_group: str, name: str) -> Workspace:
        """The workspace ``name``, not fetched (``from_id`` of its children starts here)."""
        return Workspace(self, resource_group, name)

    # -- Microsoft's clients --------------------------------------------------------------------
    def batchai(self) -> "BatchAI":
        """The target's ``azure.mgmt.batchai.BatchAI`` client (shared; closed with the target).

        :returns: the shared ``BatchAI`` client."""
        return self._connection.batchai()

    def resources(self) -> "ResourceManagementClient":
        """The target's ``ResourceManagementClient`` (shared; closed with the target).

        :returns: the shared ``ResourceManagementClient``."""
        return self._connection.resources()

    def storage(self) -> "StorageManagementClient":
        """The target's ``StorageManagementClient`` (shared; closed with the target).

        :returns: the shared ``StorageManagementClient``."""
        return self._connection.storage()

    def data_plane_options(self) -> dict[str, Any]:
        """What every data-plane (storage) client of this target is built with.

        :returns: the keyword arguments for a storage client's constructor."""
        return self._connection.data_plane_options()

    def share_service(self, account_url: str, account_key: str) -> "ShareServiceClient":
        """A ``ShareServiceClient`` for ``account_url`` (the account's ``primaryEndpoints.file``)
        signing with the shared key; the key lives only inside the client.

        :param str account_url: the account's Files endpoint.
        :param str account_key: the account's shared key.
        :returns: a ``ShareServiceClient``."""
        return self._connection.share_service(account_url, account_key)

    def file_from_sas_url(self, url: str) -> "ShareFileClient":
        """A client for one file reached through a SAS download URL (no other credential sent).

        :param str url: the SAS download URL of the file.
        :returns: a ``ShareFileClient`` for that file."""
        return self._connection.file_from_sas_url(url)

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Close every client this target opened, the file shares' data-plane clients included; a
        credential given by the caller stays open. The target may be used again (its clients are
        then opened anew)."""
        with self._lock:
            backend, self._backend = self._backend, None
        if backend is not None:
            try:
                backend.close()
            except Exception:  # closing is best effort; a half-open socket must not mask the caller's error
                log.debug("closing %s failed", type(backend).__name__, exc_info=True)
        self._connection.close()

    def __enter__(self) -> "Target":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _local_target(state_dir: Path, subscription_id: str, client_options: Mapping[str, Any],
                  node_runtime: Optional[str] = None) -> Target:
    return Target.local(state_dir=state_dir, subscription_id=subscription_id, node_runtime=node_runtime,
                        **client_options)


def _azure_target(subscription_id: str, management_endpoint: str, client_options: Mapping[str, Any]) -> Target:
    return Target.azure(subscription_id, management_endpoint=management_endpoint, **client_options)


def _azureml_target(subscription_id: str, resource_group: str, workspace: str,
                    client_options: Mapping[str, Any]) -> Target:
    return Target.azureml(subscription_id, resource_group, workspace, **client_options)


def connection_of(target: Target) -> Connection:
    """The connection ``target`` sends through: its aio twin (``horovod_batchai.aio.Target``)
    builds its aio clients over it, so that both find the same local service, with the same
    settings."""
    return target._connection
