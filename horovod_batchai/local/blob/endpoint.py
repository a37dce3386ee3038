"""The local service's blob endpoint: Azurite started and stopped with the service, the storage
accounts and keys it knows, and the few data-plane operations the service itself performs.

Each storage account's blob endpoint is ``{endpoint}/{account}/`` (path-style, like the Files
endpoint). Where Node.js or Azurite is missing the service still runs; :attr:`BlobEndpoint.problem`
then says why blob storage is off and how to turn it on, and every blob feature raises it.
"""
from __future__ import annotations

import datetime
import logging
import select
import shutil
import socket
import threading
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence, Union
from urllib.parse import quote

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.storage.blob import BlobPrefix, BlobServiceClient, ContainerClient, generate_blob_sas

from .azurite import Azurite, AzuriteError, AzuriteInstall, find_azurite
from .mirror import ContainerMirror
from .sync import MirrorSync

__all__ = ["BlobEndpoint", "BlobCheckFailed", "check_container_name"]

log = logging.getLogger(__name__)

#: where the blob endpoint listens (loopback only, like the rest of the service).
HOST = "127.0.0.1"


class BlobCheckFailed(Exception):
    """A container cannot be used with the key given; the message says why and never holds the key."""


def check_container_name(name: str) -> Optional[str]:
    """None for a valid blob container name, else the rule it breaks (Azure's rule)."""
    ok = (3 <= len(name) <= 63 and name[0].isalnum() and name[-1].isalnum() and "--" not in name
          and all(c.islower() or c.isdigit() or c == "-" for c in name) and name.isascii())
    if ok:
        return None
    return (f"{name!r} is not a valid blob container name: 3 to 63 lower-case letters, digits and single "
            "hyphens, starting and ending with a letter or digit")


class BlobEndpoint:
    """Azurite for one local service. ``state_dir/blob`` holds Azurite's data and
    ``state_dir/blob-mounts/<account>/<container>/`` the mirrors of mounted containers.

    The endpoint's port is bound by the service itself when the first storage account needs a blob
    URL to publish; Azurite (about a CPU-second of Node.js) starts only when a connection arrives on
    that port or the service needs a blob operation of its own, and serves the same socket (a client
    that connected meanwhile waits in its queue). Should Azurite exit, the next request starts it again.
    """

    def __init__(self, state_dir: Path, *, cert: Path, key: Path, node: Union[str, Path, None] = None,
                 sync_interval: float = 2.0) -> None:
        self.state_dir = Path(state_dir)
        self.cert, self.key = Path(cert), Path(key)
        self.node = node
        self.problem: Optional[AzuriteError] = None
        self._accounts: Callable[[], Mapping[str, Sequence[str]]] = dict
        self._install: Optional[AzuriteInstall] = None
        self._listener: Optional[socket.socket] = None
        self._url: Optional[str] = None
        self._wake: Optional[tuple[socket.socket, socket.socket]] = None  # rouses the keeper thread
        self._keeper: Optional[threading.Thread] = None
        self._azurite: Optional[Azurite] = None
        self._starting: Optional[Azurite] = None
        self._needed = False
        self._stopped = False
        self._changed = threading.Condition()    # guards the fields above; notified when a start ends
        self._azurite_lock = threading.Lock()   # one start, stop or account change of Azurite at a time
        self._lock = threading.RLock()          # the mirrors
        self._mirrors: dict[tuple[str, str], ContainerMirror] = {}
        #: keeps the mirrors that running jobs use in step with their containers.
        self.sync = MirrorSync(sync_interval)

    def __repr__(self) -> str:
        return (f"BlobEndpoint(url={self.url!r}, azurite={self._azurite!r}, "
                f"problem={str(self.problem) if self.problem else None!r})")

    @property
    def mounts_root(self) -> Path:
        return self.state_dir / "blob-mounts"

    @property
    def url(self) -> Optional[str]:
        """``https://127.0.0.1:PORT`` once the port is bound (an account's blob endpoint is
        ``{url}/{account}/``), else None."""
        return self._url

    # -- life cycle -----------------------------------------------------------------------------

    def start(self, accounts: Callable[[], Mapping[str, Sequence[str]]], *, wait: bool = True) -> None:
        """Start Azurite now with the accounts ``accounts()`` names (name -> its keys); it is asked
        again whenever they change (:meth:`refresh_accounts`). With ``wait=False`` Azurite starts in a
        thread of its own and whoever needs it waits for it. Where it cannot run, the reason is kept
        (see :attr:`problem`): the rest of the service does not need it."""
        self._accounts = accounts
        self._demand()
        if wait:
            self.wait_ready(timeout=None)

    def start_when_needed(self, accounts: Callable[[], Mapping[str, Sequence[str]]]) -> None:
        """Take the accounts from ``accounts()`` and bind the port once there is one (now, if there
        already is); Azurite starts at the first blob request. A service that never holds an account
        binds nothing, and one whose clients never touch blobs never pays for Node.js."""
        self._accounts = accounts
        if accounts():
            self._arm()

    def _arm(self) -> bool:
        """Bind the port and start the thread that starts Azurite when asked (once); False where
        blob storage cannot run here (:attr:`problem` says why) or the endpoint has stopped."""
        with self._changed:
            if self._stopped or self.problem is not None:
                return False
            if self._listener is not None:
                return True
            try:
                self._install = find_azurite(node=self.node)
                listener = socket.create_server((HOST, 0), backlog=128)
            except AzuriteError as exc:
                self.problem = exc
                log.warning("blob storage is not available: %s", exc)
                return False
            except OSError as exc:
                self.problem = AzuriteError(f"no port could be bound on {HOST} for the blob endpoint: {exc}")
                log.warning("blob storage is not available: %s", self.problem)
                return False
            self._listener, self._wake = listener, socket.socketpair()
            self._url = f"https://{HOST}:{listener.getsockname()[1]}"
            self._keeper = threading.Thread(target=self._keep, args=(listener, self._wake[0]),
                                            name="azurite", daemon=True)
            self._keeper.start()
            return True

    def _demand(self) -> None:
        """Have Azurite started now, unless it runs or cannot."""
        if not self._arm():
            return
        with self._changed:
            if not self._needed and self._azurite is None and self._wake is not None:
                self._needed = True
                self._wake[1].send(b"!")

    def _keep(self, listener: socket.socket, wake: socket.socket) -> None:
        """The keeper thread: start Azurite at the first connection or demand, and again after it exits."""
        poll = select.poll()
        poll.register(listener, select.POLLIN)
        poll.register(wake, select.POLLIN)
        while True:
            while True:
                with self._changed:
                    if self._stopped:
                        return
                    if self._needed:
                        break
                if listener.fileno() in {fd for fd, _ in poll.poll()}:
                    break
                wake.recv(64)
            azurite = self._start_azurite(listener)
            if azurite is None:
                return
            code = azurite.wait()
            with self._changed:
                if self._stopped:
                    return
                self._azurite = None
            log.warning("Azurite (the blob endpoint) exited with code %s; the next blob request starts it again",
                        code)

    def _start_azurite(self, listener: socket.socket) -> Optional[Azurite]:
        assert self._install is not None
        # The account set is read under the lock, so a change made meanwhile waits and follows.
        with self._azurite_lock:
            with self._changed:
                if self._stopped:
                    return None
                self._needed = False
                azurite = Azurite(self._install, cert=self.cert, key=self.key, location=self.state_dir / "blob",
                                  listener=listener)
                self._starting = azurite
            failure: Optional[AzuriteError] = None
            try:
                azurite.start(self._accounts())
            except AzuriteError as exc:
                failure = exc
            except ValueError as exc:  # an account set Azurite could not carry (names it, never a key)
                failure = AzuriteError(str(exc))
            with self._changed:
                self._starting = None
                stopped = self._stopped
                if failure is None:
                    self._azurite = azurite
                elif not stopped:
                    self.problem = failure
                    # Clients waiting in the port's queue are turned away rather than left hanging.
                    self._listener = self._url = None
                    listener.close()
                self._changed.notify_all()
        if failure is not None and not stopped:
            log.warning("blob storage is not available: %s", failure)
        return azurite if failure is None else None

    def _settled(self) -> bool:
        """No start is under way or asked for (called with ``_changed`` held)."""
        if self._stopped or self.problem is not None:
            return True
        return self._starting is None and not (self._needed and self._azurite is None)

    def wait_ready(self, timeout: Optional[float] = 90.0) -> bool:
        """Wait until a start under way or asked for has finished (well or not); False if it did not
        within ``timeout``."""
        with self._changed:
            return self._changed.wait_for(self._settled, timeout)

    def stop(self) -> None:
        """A last push of every mirror in use, then Azurite stops (a start under way is cut short)
        and the port is closed."""
        with self._changed:
            self._stopped = True
            starting, keeper, wake, listener = self._starting, self._keeper, self._wake, self._listener
            self._changed.notify_all()
        if wake is not None:
            wake[1].send(b"!")
        if starting is not None:
            starting.abort()
        self.sync.stop()
        with self._azurite_lock:
            if self._azurite is not None:
                self._azurite.stop()
                self._azurite = None
        with self._lock:
            self._mirrors.clear()
        if keeper is not None:
            keeper.join()
        for sock in (listener, *(wake or ())):
            if sock is not None:
                sock.close()

    @property
    def available(self) -> bool:
        """Whether blob storage is served here (the port is bound; Azurite starts when needed)."""
        return self._arm()

    def require(self) -> Azurite:
        """The running Azurite (started first if need be), or the reason there is none
        (BlobStorageUnavailable / AzuriteError)."""
        self._demand()
        if not self.wait_ready():
            raise AzuriteError("the blob endpoint (Azurite) is still starting; try again shortly")
        azurite = self._azurite
        if azurite is not None and azurite.running:
            return azurite
        if self.problem is not None:
            raise self.problem
        raise AzuriteError("the blob endpoint (Azurite) is not running; see the local service's log")

    def account_url(self, account: str) -> Optional[str]:
        """``https://127.0.0.1:PORT/<account>/`` as an account publishes it, or None without blob storage."""
        url = self.url if self._arm() else None
        return f"{url}/{account}/" if url is not None else None

    def refresh_accounts(self) -> None:
        """Tell Azurite the accounts and keys as they are now, if it runs (a start reads them as they
        are then). The first account binds the port."""
        if self._url is None and self._accounts():
            self._arm()
        with self._azurite_lock:
            if self._azurite is not None and self._azurite.running:
                self._azurite.set_accounts(self._accounts())

    # -- data plane -----------------------------------------------------------------------------

    def _service_client(self, account: str, key: str) -> BlobServiceClient:
        return BlobServiceClient(self.require().account_url(account),
                                 credential={"account_name": account, "account_key": key},
                                 connection_verify=str(self.cert), retry_total=2)

    def container_client(self, account: str, key: str, container: str) -> ContainerClient:
        return self._service_client(account, key).get_container_client(container)

    def check_container(self, account: str, key: str, container: str) -> None:
        """Raise :class:`BlobCheckFailed` unless ``container`` exists and ``key`` opens it, as
        blobfuse's mount would have found out."""
        problem = check_container_name(container)
        if problem:
            raise BlobCheckFailed(problem)
        try:
            with self.container_client(account, key, container) as client:
                client.get_container_properties()
        except ResourceNotFoundError:
            raise BlobCheckFailed(f"blob container {container!r} does not exist in storage account "
                                  f"{account!r}") from None
        except HttpResponseError as exc:
            if exc.status_code == 403:
                raise BlobCheckFailed(f"the account key given for {account}/{container} is not accepted by the "
                                      "blob endpoint (403 AuthorizationFailure)") from None
            raise BlobCheckFailed(f"the blob endpoint answered {exc.status_code} "
                                  f"{getattr(exc, 'error_code', None) or ''} for {account}/{container}") from None

    def mirror(self, account: str, key: str, container: str) -> ContainerMirror:
        """The mirror directory of one container (one per container, shared by all its mounts)."""
        with self._lock:
            wanted = (account.lower(), container)
            client = self.container_client(account, key, container)
            mirror = self._mirrors.get(wanted)
            if mirror is None:
                root = self.mounts_root / wanted[0] / container
                root.mkdir(parents=True, exist_ok=True)
                self.mounts_root.chmod(0o700)  # the users' data: this user's only
                mirror = ContainerMirror(client, root / "files", root / "record.json")
                self._mirrors[wanted] = mirror
            else:
                mirror.use_client(client)  # the key of the latest mount
            return mirror

    def delete_account_data(self, account: str, key: str) -> None:
        """Delete every container of ``account`` and its mirrors; call before the account leaves
        Azurite's account set (its key is needed). Without Azurite only the mirrors go; Azurite is
        started for this only where it has kept data in this state directory before."""
        with self._lock:
            if self.available and (self._azurite is not None or self._has_data()):
                with self._service_client(account, key) as client:
                    for item in client.list_containers():
                        try:
                            client.delete_container(item.name)
                        except ResourceNotFoundError:
                            pass
            for wanted in [w for w in self._mirrors if w[0] == account.lower()]:
                del self._mirrors[wanted]
            shutil.rmtree(self.mounts_root / account.lower(), ignore_errors=True)

    def _has_data(self) -> bool:
        """Whether an Azurite of this or an earlier run has kept anything in this state directory."""
        try:
            return any((self.state_dir / "blob").iterdir())
        except OSError:
            return False

    def list_directory(self, account: str, key: str, container: str, prefix: str) -> list[dict[str, object]]:
        """The blobs and virtual directories right under ``prefix`` (``''`` or ending in ``/``), sorted
        by name: ``{"name", "is_directory", "size", "last_modified"}``."""
        entries: list[dict[str, object]] = []
        with self.container_client(account, key, container) as client:
            for item in client.walk_blobs(name_starts_with=prefix or None, delimiter="/"):
                name = item.name[len(prefix):]
                if isinstance(item, BlobPrefix):
                    entries.append({"name": name.rstrip("/"), "is_directory": True})
                elif name:
                    entries.append({"name": name, "is_directory": False, "size": item.size,
                                    "last_modified": item.last_modified})
        return sorted(entries, key=lambda e: str(e["name"]))

    def download_url(self, account: str, key: str, container: str, blob: str, *, expiry_minutes: int) -> str:
        """A read-only link to one blob, with a service SAS signed by ``key`` (``sr=b&sp=r``)."""
        expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=expiry_minutes)
        sas = generate_blob_sas(account, container, blob, account_key=key, permission="r", expiry=expiry)
        return f"{self.require().account_url(account)}/{container}/{quote(blob, safe='/')}?{sas}"
