"""The local service's context: settings, state directory layout, and the parts handlers share."""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from .permissions import private_dir, secure_state_dir
from .tokens import ensure_secret
from .state_dir import STATE_DIR_ENV, default_state_dir
from .store import Store, resource_key

__all__ = ["ServiceSettings", "ServiceContext", "default_state_dir", "STATE_DIR_ENV", "MLFLOW_TRACKING_ENV"]

#: "0" switches MLflow tracking off in services whose settings do not say (the test suite does,
#: so that only the tests of tracking pay for MLflow's start-up).
MLFLOW_TRACKING_ENV = "HOROVOD_BATCHAI_MLFLOW_TRACKING"


def _tracking_default() -> bool:
    return os.environ.get(MLFLOW_TRACKING_ENV, "1").strip() != "0"

P = TypeVar("P")


@dataclass(frozen=True)
class ServiceSettings:
    """How the local service behaves; every field has a default that suits interactive use."""

    #: seconds a cluster stays ``resizing`` and its nodes ``preparing`` before they are steady/idle.
    provision_delay_s: float = 2.0
    #: seconds a node spends ``leaving`` when a cluster shrinks.
    deallocation_delay_s: float = 0.5
    #: region every resource reports when the caller names none.
    location: str = "eastus"
    #: fraction of requests (0..1) answered with an injected fault: 429 + Retry-After, 500, 503,
    #: or a dropped connection. For resilience tests only.
    fault_rate: float = 0.0
    #: seed that makes fault injection repeatable.
    fault_seed: int = 0
    #: largest request body accepted, in bytes (Azure Files takes at most 4 MiB per range).
    max_body_bytes: int = 4 * 1024 * 1024 + 1024
    #: minutes a SAS download link from listOutputFiles stays valid when the caller asks no expiry.
    default_link_expiry_min: int = 60
    #: the Node.js binary that runs Azurite (the blob endpoint); None: ``$HOROVOD_BATCHAI_NODE``, else
    #: ``node`` on PATH. Without Node.js the service runs without blob storage.
    node_binary: Optional[str] = None
    #: seconds between two synchronisations of a mounted blob container with its mirror directory
    #: while a job uses it (and once more when the job ends).
    blob_sync_interval_s: float = 2.0
    #: seconds an auto-scale cluster keeps a node that has become idle before it lets it go (Batch AI
    #: waited minutes; a short default keeps a laptop's slots free).
    scale_down_delay_s: float = 10.0
    #: the largest file a Copy File copies before it answers (``x-ms-copy-status: success``); a
    #: larger one is answered ``pending`` and copied in the background (see files/copy.py).
    copy_sync_max_bytes: int = 4 * 1024 * 1024
    #: bytes per second a background copy may move; None: as fast as the disk goes. A slow copy
    #: shows its progress (and can be aborted) the way a copy between regions does on Azure.
    copy_bytes_per_s: Optional[float] = None
    #: whether each job is an MLflow run, tracked by MLflow's server, which the service runs when a job
    #: or a client first needs it (see tracking/); default: on, unless $HOROVOD_BATCHAI_MLFLOW_TRACKING is 0.
    mlflow_tracking: bool = field(default_factory=_tracking_default)

    def __post_init__(self) -> None:
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be between 0 and 1, got {self.fault_rate!r}")
        if self.provision_delay_s < 0 or self.deallocation_delay_s < 0:
            raise ValueError("provision_delay_s and deallocation_delay_s must be >= 0")
        if not self.scale_down_delay_s >= 0:
            raise ValueError(f"scale_down_delay_s must be >= 0, got {self.scale_down_delay_s!r}")
        if not self.blob_sync_interval_s > 0:
            raise ValueError(f"blob_sync_interval_s must be > 0, got {self.blob_sync_interval_s!r}")
        if self.copy_sync_max_bytes < 0:
            raise ValueError(f"copy_sync_max_bytes must be >= 0, got {self.copy_sync_max_bytes!r}")
        if self.copy_bytes_per_s is not None and not self.copy_bytes_per_s > 0:
            raise ValueError(f"copy_bytes_per_s must be None or > 0, got {self.copy_bytes_per_s!r}")


@dataclass
class ServiceContext:
    """State shared by every handler and by the job scheduler.

    Layout of the state directory (0700; what the service writes in it is this user's only, see
    ``permissions.py``)::

        state.db          resources, operations, nodes, file metadata (SQLite)
        files/<account>/<share>/...   Azure Files share contents, as ordinary files
        blob/             Azurite's data: the blob containers of every account (0700)
        blob-mounts/<account>/<container>/   mirrors of mounted blob containers (0700)
        mlflow/           the MLflow tracking server's database, artifacts, socket, log, token (0700)
        fileservers/<hash>/           data of local file servers
        jobs/<job key>/   per-job scratch (AZ_BATCHAI_JOB_TEMP, node working directories)
        token-secret      signs local bearer tokens (0600)
        tls-cert.pem, tls-key.pem     the loopback certificate (key 0600)
        service.json      where a running daemon listens (see service.py)
    """

    state_dir: Path
    settings: ServiceSettings = field(default_factory=ServiceSettings)
    store: Store = field(init=False)
    token_secret: bytes = field(init=False, repr=False)
    #: set by the server once it listens: ``https://127.0.0.1:PORT``.
    base_url: str = ""
    #: each resource provider, by its class, made on first use (see :meth:`provider`).
    _providers: dict[Callable[["ServiceContext"], Any], Any] = field(default_factory=dict, repr=False)
    #: what deleting a resource group calls, in order, with the group's id: each deletes its provider's
    #: resources in the group. The service registers them when it wires the planes.
    group_deleters: list[Callable[[str], None]] = field(default_factory=list)
    #: the blob endpoint (Azurite, see blob/endpoint.py); set by the server.
    blob: Optional[Any] = None
    #: the MLflow tracking endpoint (tracking/endpoint.py); set by the server when tracking is on.
    tracking: Optional[Any] = None
    #: the Python environment jobs run with (runner/node_runtime.py's NodeRuntime); set by the server,
    #: None until then (the runner then resolves it as a service started without a setting would).
    node_runtime: Optional[Any] = None
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def __post_init__(self) -> None:
        self.state_dir = Path(self.state_dir)
        secure_state_dir(self.state_dir)  # 0700: it holds keys, passwords, secrets and users' files
        private_dir(self.files_root)
        private_dir(self.jobs_root)
        self.store = Store(self.state_dir / "state.db")
        self.token_secret = ensure_secret(self.state_dir)

    @property
    def files_root(self) -> Path:
        return self.state_dir / "files"

    @property
    def jobs_root(self) -> Path:
        return self.state_dir / "jobs"

    def fileserver_dir(self, fileserver_id: str) -> Path:
        """Where a local file server keeps its exported data (its NFS export, on Azure)."""
        digest = hashlib.sha256(resource_key(fileserver_id).encode()).hexdigest()[:16]
        return self.state_dir / "fileservers" / digest

    def provider(self, kind: Callable[["ServiceContext"], P]) -> P:
        """The service's one provider of class ``kind`` (``kind(self)``, made on first use)."""
        with self.lock:
            found = self._providers.get(kind)
            if found is None:
                found = self._providers[kind] = kind(self)
            return found  # stored under its own class: a P

    def close(self) -> None:
        self.store.close()
