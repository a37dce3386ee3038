"""The local service's blob endpoint: Azurite started and stopped with the service, the storage
accounts and keys it knows, and the few data-plane operations the service itself performs.

Each storage account's blob endpoint is ``{endpoint}/{account}/`` (path-style, like the Files
endpoint). Where Node.js or Azurite is missing the service still runs; :attr:`BlobEndpoint.problem`
then says why blob storage is off and how to turn it on, and every blob feature raises it.
"""
from __future__ import annotations

import datetime
import logging
import shutil
import threading
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence, Union
from urllib.parse import quote

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.storage.blob import BlobPrefix, BlobServiceClient, ContainerClient, generate_blob_sas

from .azurite import Azurite, AzuriteError, find_azurite
from .mirror import ContainerMirror
from .sync import MirrorSync

__all__ = ["BlobEndpoint", "BlobCheckFailed", "check_container_name"]

log = logging.getLogger(__name__)


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
    ``state_dir/blob-mounts/<account>/<container>/`` the mirrors of mounted containers."""

    def __init__(self, state_dir: Path, *, cert: Path, key: Path, node: Union[str, Path, None] = None,
                 sync_interval: float = 2.0) -> None:
        self.state_dir = Path(state_dir)
        self.cert, self.key = Path(cert), Path(key)
        self.node = node
        self.problem: Optional[AzuriteError] = None
        self._azurite: Optional[Azurite] = None
        self._accounts: Callable[[], Mapping[str, Sequence[str]]] = dict
        self._ready = threading.Event()
        self._ready.set()  # no start under way
        self._starter: Optional[threading.Thread] = None
        self._starting: Optional[Azurite] = None
        self._stopped = False
        self._state_lock = threading.Lock()   # guards _starter and _stopped
        self._lock = threading.RLock()        # one start, stop or account change at a time
        self._mirrors: dict[tuple[str, str], ContainerMirror] = {}
        #: keeps the mirrors that running jobs use in step with their containers.
        self.sync = MirrorSync(sync_interval)

    def __repr__(self) -> str:
        return f"BlobEndpoint(azurite={self._azurite!r}, problem={str(self.problem) if self.problem else None!r})"

    @property
    def mounts_root(self) -> Path:
        return self.state_dir / "blob-mounts"

    # -- life cycle -----------------------------------------------------------------------------

    def start(self, accounts: Callable[[], Mapping[str, Sequence[str]]], *, wait: bool = True) -> None:
        """Start Azurite with the accounts ``accounts()`` names (name -> its keys); it is asked again
        whenever they change (:meth:`refresh_accounts`). With ``wait=False`` Azurite starts in a
        thread of its own and whoever needs it waits for it. Where it cannot run, the reason is kept
        (see :attr:`problem`): the rest of the service does not need it."""
        self._accounts = accounts
        self._begin()
        if wait:
            self.wait_ready(timeout=None)

    def start_when_needed(self, accounts: Callable[[], Mapping[str, Sequence[str]]]) -> None:
        """Start Azurite (in a thread of its own) once there is a storage account -- now, if there
        already is one. A service that never holds an account never pays for Node.js."""
        self._accounts = accounts
        if accounts():
            self._begin()

    def _begin(self) -> None:
        with self._state_lock:
            if self._stopped or self._starter is not None:
                return
            self._ready.clear()
            self._starter = threading.Thread(target=self._start, name="azurite-start", daemon=True)
            self._starter.start()

    def _start(self) -> None:
        try:
            with self._lock:
                try:
                    install = find_azurite(node=self.node)
                    azurite = Azurite(install, cert=self.cert, key=self.key, location=self.state_dir / "blob")
                    self._starting = azurite
                    if self._stopped:
                        return
                    # The account set is read under the lock, so a change made meanwhile waits and follows.
                    azurite.start(self._accounts())
                    self._azurite, self.problem = azurite, None
                except AzuriteError as exc:
                    self._azurite, self.problem = None, exc
                    if not self._stopped:
                        log.warning("blob storage is not available: %s", exc)
                finally:
                    self._starting = None
        finally:
            self._ready.set()

    def wait_ready(self, timeout: Optional[float] = 90.0) -> bool:
        """Wait until a start under way has finished (well or not); False if it did not within ``timeout``."""
        return self._ready.wait(timeout)

    def stop(self) -> None:
        """A last push of every mirror in use, then Azurite stops (a start under way is cut short)."""
        with self._state_lock:
            self._stopped = True
            starter = self._starter
        starting = self._starting
        if starting is not None:
            starting.abort()
        if starter is not None:
            starter.join()
        self.sync.stop()
        with self._lock:
            if self._azurite is not None:
                self._azurite.stop()
                self._azurite = None
            self._mirrors.clear()

    @property
    def available(self) -> bool:
        """Whether Azurite runs (starting it first if it was waiting for a need)."""
        self._begin()
        self.wait_ready()
        return self._azurite is not None and self._azurite.running

    def require(self) -> Azurite:
        """The running Azurite, or the reason there is none (BlobStorageUnavailable / AzuriteError)."""
        self._begin()
        if not self.wait_ready():
            raise AzuriteError("the blob endpoint (Azurite) is still starting; try again shortly")
        azurite = self._azurite
        if azurite is not None and azurite.running:
            return azurite
        if self.problem is not None:
            raise self.problem
        raise AzuriteError("the blob endpoint (Azurite) is not running; see the local service's log")

    def account_url(self, account: str) -> Optional[str]:
        """``https://127.0.0.1:PORT/<account>/`` as an account publishes it, or None without Azurite."""
        if not self.available:
            return None
        return f"{self.require().account_url(account)}/"

    def refresh_accounts(self) -> None:
        """Tell Azurite the accounts and keys as they are now (a no-op without Azurite). The first
        account starts Azurite, in a thread of its own."""
        with self._state_lock:
            dormant = self._starter is None
        if dormant:
            if self._accounts():
                self._begin()  # the start reads the accounts as they are then
            return
        if not self.available:
            return
        with self._lock:
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
        Azurite's account set (its key is needed). Without Azurite only the mirrors go."""
        with self._lock:
            if self.available:
                with self._service_client(account, key) as client:
                    for item in client.list_containers():
                        try:
                            client.delete_container(item.name)
                        except ResourceNotFoundError:
                            pass
            for wanted in [w for w in self._mirrors if w[0] == account.lower()]:
                del self._mirrors[wanted]
            shutil.rmtree(self.mounts_root / account.lower(), ignore_errors=True)

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
