"""Running the local service in a thread of this process (:class:`LocalService`); the daemon many
processes share is the same service, started and found by :mod:`.daemon`.

Both use the same pieces, wired here: the HTTPS server (``core/http_server.py``), the application
in ``app.py`` (every plane's routes), the blob endpoint (Azurite), the MLflow tracking endpoint, the job scheduler, and the
service context and resource providers that hold the state. A running service holds an exclusive lock on
``<state dir>/service.lock`` (so two services never drive one state directory) and advertises
where it listens in ``<state dir>/service.json`` (read by :func:`.daemon.find_running`).

Jobs run on the service's *node runtime* (``runner/node_runtime.py``), fixed when it starts and
recorded in ``service.json``. Asking :func:`.daemon.ensure_running` for one runtime while a daemon
with another drives the state directory raises :class:`.daemon.NodeRuntimeMismatch` rather than
restarting it: that daemon may be running other processes' jobs.
"""
from __future__ import annotations

import fcntl
import functools
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from .app import make_app
from .batchai.provider import BatchAIProvider
from .batchai.sweeps.driver import SweepDriver
from .batchai.sweeps.provider import SweepProvider
from .core.tokens import LocalCredential
from .core.context import ServiceContext, ServiceSettings, default_state_dir
from .core.http_server import HttpsServer
from .core.permissions import secure_state_dir
from .core.tls import ensure_certificate
from .runner.node_runtime import NodeRuntime, resolve
from .storage.api import delete_accounts_in_group
from .daemon import INFO_FILE, LOCK_FILE, ServiceAlreadyRunning, ServiceInfo, write_info, find_running, is_loopback

if TYPE_CHECKING:
    from .runner.scheduler import Scheduler

__all__ = ["LocalService"]

log = logging.getLogger(__name__)

#: how long a service starting waits for the state lock held by another one that is starting or
#: exiting (a SIGKILLed daemon's threads may hold it for a second or two)
LOCK_WAIT_S = 30.0


class LocalService:
    """The local service in this process (tests, notebooks). Use as a context manager or
    call :meth:`start` / :meth:`stop`.

    It listens on loopback only: another ``host`` is refused unless ``allow_remote=True``, because
    whoever reaches the port can try its APIs, and the storage keys and job secrets it holds are
    the machine's user's. (Its certificate names only ``localhost``, ``127.0.0.1`` and ``::1``.)

    ``node_runtime`` is the Python environment jobs run with: its interpreter or its directory
    (default ``$HOROVOD_BATCHAI_NODE_RUNTIME``, else this process's own Python); see
    the docs page "Calling it from a service"."""

    def __init__(self, state_dir: Optional[Path] = None, *, host: str = "127.0.0.1", port: int = 0,
                 settings: Optional[ServiceSettings] = None, allow_remote: bool = False,
                 node_runtime: Union[str, "os.PathLike[str]", None] = None) -> None:
        if not isinstance(host, str) or not host:
            raise ValueError(f"host must be a loopback address such as '127.0.0.1', got {host!r}")
        if not allow_remote and not is_loopback(host):
            raise ValueError(f"host={host!r} is not a loopback address: the local service listens on this machine "
                             "only (127.0.0.1, localhost or ::1); pass allow_remote=True to bind another address "
                             "on purpose")
        self.state_dir = Path(state_dir) if state_dir is not None else default_state_dir()
        self.host = host
        self.port = port
        self.settings = settings or ServiceSettings()
        #: the node runtime its jobs run with
        self.node_runtime: NodeRuntime = resolve(node_runtime)
        self.context: Optional[ServiceContext] = None
        self._server: Optional[HttpsServer] = None
        self._scheduler: Optional[Scheduler] = None
        self._sweeps: Optional[SweepDriver] = None
        self._lock_fh: Optional[Any] = None
        self._stopping = threading.Event()
        self._sweeper: Optional[threading.Thread] = None

    def __repr__(self) -> str:
        return f"LocalService(state_dir={str(self.state_dir)!r}, endpoint={self.endpoint if self._server else None!r})"

    @property
    def running(self) -> bool:
        """Whether the service is started (and not stopped since)."""
        return self._server is not None

    @property
    def endpoint(self) -> str:
        if self._server is None:
            raise RuntimeError("the local service is not started")
        return f"https://{self.host}:{self._server.port}"

    @property
    def info(self) -> ServiceInfo:
        return ServiceInfo(self.endpoint, self.state_dir / "tls-cert.pem", self.state_dir, os.getpid(),
                           self.node_runtime.python)

    def credential(self) -> LocalCredential:
        return LocalCredential(self.state_dir)

    def start(self, *, lock_wait: float = LOCK_WAIT_S) -> "LocalService":
        """Take the state directory's lock and serve. Raises :class:`ServiceAlreadyRunning` when
        another service drives the state directory; one that holds the lock while starting or
        exiting is waited for (at most ``lock_wait`` seconds), so a start right after a crash works.
        Starting a service that runs already does nothing (``with service.start():`` works)."""
        if self._server is not None:
            return self
        self._stopping.clear()
        secure_state_dir(self.state_dir)
        self._lock_fh = open(os.open(self.state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600), "a+")
        deadline = time.monotonic() + lock_wait
        while True:
            try:
                fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                running = find_running(self.state_dir)
                if running is None and time.monotonic() < deadline:
                    time.sleep(0.1)  # the holder is starting (soon found) or exiting (soon gone)
                    continue
                self._lock_fh.close()
                self._lock_fh = None
                if running is None:
                    raise ServiceAlreadyRunning(f"another process holds the lock of {self.state_dir} and has not "
                                                f"started serving within {lock_wait:g}s") from None
                raise ServiceAlreadyRunning(f"a local service is already running for {self.state_dir} at "
                                            f"{running.endpoint} (pid {running.pid})") from None
        try:
            self._start_locked()
        except BaseException:
            self._abort_start()  # a failed start must not keep the lock, the database or the port
            raise
        info = self.info
        write_info(self.state_dir, info)
        log.info("local service listening at %s (state in %s)", info.endpoint, self.state_dir)
        return self

    def _start_locked(self) -> None:
        cert, key = ensure_certificate(self.state_dir)
        self.context = ServiceContext(self.state_dir, self.settings)
        self.context.node_runtime = self.node_runtime
        self._server = HttpsServer(self.host, self.port, make_app(self.context), cert=cert, key=key)
        self.context.base_url = self.endpoint
        # The blob endpoint's port is bound with the first storage account; Azurite (about a CPU-second
        # of Node.js start-up) starts only at the first blob request or blob mount.
        from .storage.accounts import all_account_keys
        from .blob.endpoint import BlobEndpoint
        store = self.context.store
        self.context.blob = BlobEndpoint(self.state_dir, cert=cert, key=key, node=self.settings.node_binary,
                                         sync_interval=self.settings.blob_sync_interval_s)
        self.context.blob.start_when_needed(lambda: all_account_keys(store))
        if self.settings.mlflow_tracking:
            # MLflow's tracking server starts at the first job or /_mlflow request, not now.
            from .tracking.endpoint import TrackingEndpoint
            self.context.tracking = TrackingEndpoint(self.state_dir)
        from .runner.scheduler import Scheduler  # imported late: the scheduler pulls in process handling
        batchai = self.context.provider(BatchAIProvider)
        self.context.group_deleters += [batchai.delete_group_resources,
                                        functools.partial(delete_accounts_in_group, self.context)]
        self._scheduler = batchai.scheduler = Scheduler(self.context)
        self._scheduler.start()
        batchai.finish_interrupted_operations()  # operations a killed service left InProgress
        # Sweeps go on from their documents once the scheduler has taken back their trials' jobs.
        self._sweeps = self.context.provider(SweepProvider).driver = SweepDriver(self.context)
        self._sweeps.start()
        from .resources.api import resume_deletions
        resume_deletions(self.context)  # resource groups a stopped service left half-deleted
        from .files.store import forget_upload_activity
        forget_upload_activity(self.context.files_root)
        self._sweep_stale_uploads()  # uploads a crashed client left under a temporary name
        from .files.copy import FileCopies
        self.context.provider(FileCopies).resume()  # copies a stopped service left pending
        self._sweeper = threading.Thread(target=self._sweep_loop, name="stale-uploads", daemon=True)
        self._sweeper.start()
        self._server.start()

    def _sweep_stale_uploads(self) -> None:
        from .files.store import remove_stale_uploads
        assert self.context is not None
        stale = remove_stale_uploads(self.context.files_root)
        if stale:
            log.info("removed %d unfinished upload(s) no client has touched lately", len(stale))

    def _sweep_loop(self) -> None:
        from .files.store import STALE_UPLOAD_SWEEP_S
        while not self._stopping.wait(STALE_UPLOAD_SWEEP_S):
            try:
                self._sweep_stale_uploads()
            except Exception:  # a disk error: the next sweep tries again
                log.warning("sweeping unfinished uploads failed", exc_info=True)

    def _abort_start(self) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        if self._sweeper is not None:
            self._sweeper.join()
            self._sweeper = None
        if self._server is not None:
            self._server.stop()
        if self.context is not None:
            if self._sweeps is not None:  # first: it submits and stops jobs through the scheduler
                self._sweeps.stop()
                self._sweeps = None
            from .files.copy import FileCopies
            self.context.provider(FileCopies).stop()  # where they are: the next start resumes them
            if self._scheduler is not None:
                self._scheduler.stop()
                self._scheduler = None
            if self.context.blob is not None:
                self.context.blob.stop()  # after the jobs: their last writes reach the containers first
            if self.context.tracking is not None:
                self.context.tracking.stop()  # after the jobs, whose runs end with them
            self.context.close()
        info_path = self.state_dir / INFO_FILE
        try:
            if json.loads(info_path.read_text()).get("pid") == os.getpid():
                info_path.unlink()
        except (OSError, ValueError):
            pass
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None
        self._server = self.context = None

    def __enter__(self) -> "LocalService":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


