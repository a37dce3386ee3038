"""Azurite's blob service as a child process of the local service.

How it runs (the reasons are measured in the project's notes and in ``docs/local_service.rst``):

- ``node launcher.js <azurite package> --blobHost 127.0.0.1 --blobPort 0 --cert <tls-cert.pem>
  --key <tls-key.pem> --location <dir> --disableProductStyleUrl --skipApiVersionCheck
  --disableTelemetry --silent``. Port 0 lets the system pick a free port; Azurite prints the one it
  got. The service's own loopback certificate means clients trust one CA for every endpoint.
  Path-style URLs (``https://127.0.0.1:PORT/<account>/<container>/<blob>``) because loopback has no
  per-account host names. Given a ``listener`` (a socket already bound and listening), Azurite serves
  on it instead (``--listen-fd``, see ``launcher.js``): its port is known before Node.js runs.
  Microsoft's newest clients send storage versions newer than the pinned Azurite knows, hence
  ``--skipApiVersionCheck``. No telemetry and no access log (it would print SAS query strings).
- Accounts and keys travel over the child's stdin (see ``launcher.js``): never on a command line,
  and replaced in place, in milliseconds, when an account is created, deleted or gets a new key.
  Azurite itself would read them from ``AZURITE_ACCOUNTS`` at start only.
- The child's stdin is a pipe only this process holds: when this process ends, even by SIGKILL,
  the pipe closes and Azurite shuts down. (``PR_SET_PDEATHSIG`` would fire when the *thread* that
  started the child ends, and the service may start it from a request thread.)
"""
from __future__ import annotations

import base64
import binascii
import collections
import http.client
import json
import logging
import os
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Mapping, Optional, Sequence, Union

__all__ = ["AZURITE_VERSION", "MIN_NODE_MAJOR", "NODE_ENV", "AZURITE_DIR_ENV", "AzuriteError",
           "BlobStorageUnavailable", "AzuriteInstall", "find_azurite", "Azurite"]

log = logging.getLogger(__name__)

#: the Azurite release package.json pins: the newest that runs on Node.js 20 (3.36 needs 21).
AZURITE_VERSION = "3.35.0"
#: Azurite 3.35.0's own dependencies need Node.js 20.
MIN_NODE_MAJOR = 20
#: path of the ``node`` binary to use instead of the first one on PATH.
NODE_ENV = "HOROVOD_BATCHAI_NODE"
#: an ``azurite`` package directory to use instead of the project's ``node_modules/azurite``.
AZURITE_DIR_ENV = "HOROVOD_BATCHAI_AZURITE_DIR"

PROJECT_ROOT = Path(__file__).resolve().parents[3]
LAUNCHER = Path(__file__).with_name("launcher.js")

INSTALL_HINT = (f"Blob storage needs Node.js {MIN_NODE_MAJOR} or later and Azurite {AZURITE_VERSION}: install "
                "Node.js with npm (for example `apt-get install nodejs npm`), then run `make install` in the "
                "horovod-batchai checkout, which installs Azurite into its node_modules/ folder (or point "
                f"{AZURITE_DIR_ENV} at an azurite {AZURITE_VERSION} package directory).")

_ACCOUNT_NAME = re.compile(r"^[a-z0-9]{3,24}\Z")
#: stands in when there are no accounts: with none, Azurite would enable its public well-known account.
#: The name is not a valid Azure account name, so it never meets a real one; its key is never kept.
_NO_ACCOUNT = "horovod-batchai-none"
_LISTENING = re.compile(r"successfully listens on (https?)://(\S+):(\d+)\s*$")
_ACK = re.compile(r"^accounts (\d+) (updated|rejected)\s*$")


class AzuriteError(RuntimeError):
    """Azurite did not start, stopped, or did not take an account set. Never holds a key."""


class BlobStorageUnavailable(AzuriteError):
    """Node.js or Azurite is not installed here; the message says what to install and how."""


@dataclass(frozen=True)
class AzuriteInstall:
    """A usable Node.js and Azurite package."""

    node: Path
    node_version: str       # as ``node --version`` prints it, e.g. v20.20.2
    package_dir: Path       # .../node_modules/azurite
    version: str            # the package's version


def _node_binary(node: Union[str, Path, None]) -> Path:
    chosen = node if node is not None else os.environ.get(NODE_ENV) or None
    if chosen is None:
        found = shutil.which("node")
        if found is None:
            raise BlobStorageUnavailable(f"Node.js was not found on PATH. {INSTALL_HINT}")
        return Path(found)
    path = Path(chosen)
    resolved = shutil.which(str(path)) if path.name == str(path) else (str(path) if os.access(path, os.X_OK)
                                                                       and path.is_file() else None)
    if resolved is None:
        raise BlobStorageUnavailable(f"Node.js was not found at {str(chosen)!r}. {INSTALL_HINT}")
    return Path(resolved)


def _node_version(node: Path) -> str:
    try:
        out = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BlobStorageUnavailable(f"Node.js at {str(node)!r} does not run ({exc}). {INSTALL_HINT}") from None
    version = out.stdout.strip()
    match = re.match(r"^v(\d+)\.", version)
    if out.returncode != 0 or match is None:
        raise BlobStorageUnavailable(f"{str(node)!r} does not answer --version as Node.js does. {INSTALL_HINT}")
    if int(match.group(1)) < MIN_NODE_MAJOR:
        raise BlobStorageUnavailable(f"Node.js {version} at {str(node)!r} is too old. {INSTALL_HINT}")
    return version


def _package_dir(package_dir: Union[str, Path, None]) -> tuple[Path, str]:
    chosen = package_dir or os.environ.get(AZURITE_DIR_ENV) or PROJECT_ROOT / "node_modules" / "azurite"
    path = Path(chosen)
    try:
        manifest = json.loads((path / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BlobStorageUnavailable(f"Azurite is not installed at {str(path)!r}. {INSTALL_HINT}") from None
    version = str(manifest.get("version", ""))
    if manifest.get("name") != "azurite" or version != AZURITE_VERSION:
        raise BlobStorageUnavailable(f"{str(path)!r} holds {manifest.get('name')} {version}, not azurite "
                                     f"{AZURITE_VERSION}. {INSTALL_HINT}")
    return path, version


def find_azurite(*, node: Union[str, Path, None] = None,
                 package_dir: Union[str, Path, None] = None) -> AzuriteInstall:
    """Node.js (``node``, else ``$HOROVOD_BATCHAI_NODE``, else PATH) and the Azurite package
    (``package_dir``, else ``$HOROVOD_BATCHAI_AZURITE_DIR``, else the project's node_modules).

    Raises :class:`BlobStorageUnavailable`, saying how to install what is missing.
    """
    binary = _node_binary(node)
    version = _node_version(binary)
    directory, azurite_version = _package_dir(package_dir)
    return AzuriteInstall(node=binary, node_version=version, package_dir=directory, version=azurite_version)


def _accounts_string(accounts: Mapping[str, Sequence[str]]) -> str:
    """``name:key1[:key2];...`` as Azurite reads it; ValueError (naming the account, never a key)
    for a name or key it could not carry."""
    entries: list[str] = []
    for name, keys in accounts.items():
        if not _ACCOUNT_NAME.match(name):
            raise ValueError(f"storage account name {name!r} must be 3 to 24 lower-case letters and digits")
        if isinstance(keys, str) or not 1 <= len(keys) <= 2:
            raise ValueError(f"storage account {name!r} needs one or two keys")
        for key in keys:
            try:
                decoded = base64.b64decode(key, validate=True)
            except (binascii.Error, ValueError, TypeError):
                decoded = b""
            if not decoded:
                raise ValueError(f"a key of storage account {name!r} is not base64 text")
        entries.append(":".join([name, *keys]))
    if not entries:
        entries.append(f"{_NO_ACCOUNT}:{base64.b64encode(secrets.token_bytes(64)).decode('ascii')}")
    return ";".join(entries)


class Azurite:
    """Azurite's blob service, run by this process on loopback over HTTPS.

    ``location`` is the directory Azurite keeps its data in (created private, 0700); None keeps
    everything in memory. ``port`` 0 lets the system choose; a ``listener`` (a listening loopback
    socket the caller keeps open) is served instead of a port of Azurite's own. Use :meth:`start` /
    :meth:`stop` or ``with``; :meth:`set_accounts` replaces the account set while it runs.
    """

    def __init__(self, install: AzuriteInstall, *, cert: Path, key: Path, location: Optional[Path],
                 host: str = "127.0.0.1", port: int = 0, listener: Optional[socket.socket] = None,
                 start_timeout: float = 60.0) -> None:
        if listener is not None:
            host, port = listener.getsockname()[:2]
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"host must be a loopback address (127.0.0.1, localhost or ::1), got {host!r}")
        self.install = install
        self.cert, self.key = Path(cert), Path(key)
        self.location = Path(location) if location is not None else None
        self.host = host
        self.port = port
        self.listener = listener
        self.start_timeout = start_timeout
        self._lock = threading.RLock()
        self._proc: Optional[subprocess.Popen[str]] = None
        self._reader: Optional[threading.Thread] = None
        self._output: collections.deque[str] = collections.deque(maxlen=40)
        self._listening = threading.Event()
        self._acks: dict[int, str] = {}
        self._ack_changed = threading.Condition()
        self._seq = 0
        self._endpoint: Optional[str] = None

    def __repr__(self) -> str:
        return f"Azurite(endpoint={self._endpoint!r}, pid={self.pid!r})"

    # -- where it is ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    @property
    def endpoint(self) -> str:
        """``https://127.0.0.1:PORT``; an account's blob endpoint is ``{endpoint}/{account}``."""
        if self._endpoint is None:
            raise AzuriteError("Azurite is not running")
        return self._endpoint

    def account_url(self, account: str) -> str:
        return f"{self.endpoint}/{account}"

    # -- life cycle -----------------------------------------------------------------------------

    def start(self, accounts: Mapping[str, Sequence[str]]) -> "Azurite":
        """Start Azurite with these accounts (name -> its one or two keys) and wait until it answers."""
        line = _accounts_string(accounts)
        with self._lock:
            if self.running:
                raise AzuriteError(f"Azurite is already running at {self._endpoint}")
            self._spawn(line)
            try:
                self._wait_listening()
                self._probe()
                # Confirms that the launcher can change accounts in this Azurite, before anyone relies on it.
                self._send_accounts(line, timeout=self.start_timeout)
            except BaseException:
                self.stop()
                raise
        log.info("Azurite %s (blob) listening at %s, pid %s", self.install.version, self._endpoint, self.pid)
        return self

    def set_accounts(self, accounts: Mapping[str, Sequence[str]], *, timeout: float = 30.0) -> None:
        """Replace the account set; returns once Azurite uses the new one."""
        line = _accounts_string(accounts)
        with self._lock:
            if not self.running:
                raise AzuriteError("Azurite is not running")
            self._send_accounts(line, timeout=timeout)

    def restart(self, accounts: Mapping[str, Sequence[str]]) -> None:
        """Stop and start again on the same port, with this account set; the data on disk stays."""
        with self._lock:
            if self._endpoint is not None:
                self.port = int(self._endpoint.rsplit(":", 1)[1])
            self.stop()
            self.start(accounts)

    def stop(self, timeout: float = 15.0) -> None:
        """Close Azurite's stdin (it then shuts down as on SIGTERM, saving its metadata); kill it if
        it is still there after ``timeout`` seconds. Harmless when it is not running."""
        with self._lock:
            proc, self._proc = self._proc, None
            if proc is not None:
                try:
                    if proc.stdin is not None:
                        proc.stdin.close()
                except OSError:
                    pass
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    log.warning("Azurite (pid %s) did not stop within %.0f s; killing it", proc.pid, timeout)
                    proc.kill()
                    proc.wait()
            if self._reader is not None:
                self._reader.join(timeout=5)
                self._reader = None
            if proc is not None and proc.stdout is not None:
                proc.stdout.close()
            self._endpoint = None
            self._listening.clear()

    def wait(self) -> Optional[int]:
        """Block until this Azurite's process has ended (stopped or crashed); its exit code, or None
        when none was started."""
        proc = self._proc
        return proc.wait() if proc is not None else None

    def abort(self) -> None:
        """Kill Azurite at once, from any thread (a start under way then fails); :meth:`stop` still
        cleans up."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def __enter__(self) -> "Azurite":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inside ---------------------------------------------------------------------------------

    def _spawn(self, accounts_line: str) -> None:
        argv = [str(self.install.node), str(LAUNCHER), str(self.install.package_dir)]
        passed: tuple[int, ...] = ()
        if self.listener is not None:
            passed = (self.listener.fileno(),)
            argv += ["--listen-fd", str(passed[0])]
        argv += ["--blobHost", self.host, "--blobPort", str(self.port),
                 "--cert", str(self.cert), "--key", str(self.key),
                 "--disableProductStyleUrl", "--skipApiVersionCheck", "--disableTelemetry", "--silent"]
        if self.location is not None:
            self.location.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.location, 0o700)  # blobs are the users' data: this user's only
            argv += ["--location", str(self.location)]
            cwd = str(self.location)
        else:
            argv += ["--inMemoryPersistence"]
            cwd = tempfile.gettempdir()
        env = {k: v for k, v in os.environ.items() if k != "AZURITE_ACCOUNTS"}
        self._output.clear()
        self._listening.clear()
        with self._ack_changed:
            self._acks.clear()
        self._endpoint = None
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    cwd=cwd, env=env, text=True, encoding="utf-8", errors="replace",
                                    start_new_session=True, close_fds=True, pass_fds=passed,
                                    umask=0o077)  # Azurite's blob data is the account owner's alone
        except OSError as exc:
            raise BlobStorageUnavailable(f"Node.js at {str(self.install.node)!r} could not be started "
                                         f"({exc.strerror}). {INSTALL_HINT}") from None
        self._proc = proc
        self._reader = threading.Thread(target=self._read_output, args=(proc.stdout,),
                                        name=f"azurite-output-{proc.pid}", daemon=True)
        self._reader.start()
        self._seq = 0
        self._write({"seq": 0, "accounts": accounts_line})

    def _read_output(self, stream: Optional[IO[str]]) -> None:
        if stream is None:
            return
        for raw in stream:
            line = raw.rstrip("\n")
            self._output.append(line)
            ack = _ACK.match(line)
            if ack:
                with self._ack_changed:
                    self._acks[int(ack.group(1))] = ack.group(2)
                    self._ack_changed.notify_all()
                continue
            listening = _LISTENING.search(line)
            if listening:
                host = listening.group(2)
                self._endpoint = f"{listening.group(1)}://{host}:{listening.group(3)}"
                self._listening.set()
            log.debug("azurite: %s", line)
        with self._ack_changed:
            self._ack_changed.notify_all()  # wake anyone waiting for an answer that will not come

    def _write(self, message: dict[str, object]) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise AzuriteError("Azurite is not running")
        try:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise self._exited() from None

    def _exited(self, when: str = "") -> AzuriteError:
        """The error for an Azurite that has exited: its exit code and last words (on a busy machine
        the output reader may still be collecting them; it gets two seconds)."""
        proc, code = self._proc, None
        if proc is not None:
            try:
                code = proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        if self._reader is not None:
            self._reader.join(timeout=2)
        return AzuriteError(f"Azurite exited{f' with code {code}' if code is not None else ''}{when}{self._said()}")

    def _said(self) -> str:
        lines = [line for line in self._output if line.strip()]
        return (": " + " | ".join(lines[-5:])) if lines else ""

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while not self._listening.wait(0.05):
            if self._proc is None or self._proc.poll() is not None:
                raise self._exited(" before it listened")
            if time.monotonic() > deadline:
                raise AzuriteError(f"Azurite did not listen within {self.start_timeout:.0f} s{self._said()}")

    def _probe(self) -> None:
        """One HTTPS request, verified against the service's certificate: it answers (any status)."""
        host, port = self.endpoint.removeprefix("https://").rsplit(":", 1)
        context = ssl.create_default_context(cafile=str(self.cert))
        connection = http.client.HTTPSConnection(host.strip("[]"), int(port), context=context, timeout=10)
        try:
            connection.request("GET", "/")
            connection.getresponse().read()
        except (OSError, http.client.HTTPException) as exc:
            raise AzuriteError(f"Azurite listens at {self.endpoint} but does not answer over HTTPS with "
                               f"the service's certificate: {exc}") from None
        finally:
            connection.close()

    def _send_accounts(self, accounts_line: str, *, timeout: float) -> None:
        self._seq += 1
        seq = self._seq
        self._write({"seq": seq, "accounts": accounts_line})
        deadline = time.monotonic() + timeout
        with self._ack_changed:
            while seq not in self._acks:
                if self._proc is None or self._proc.poll() is not None:
                    raise self._exited()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AzuriteError(f"Azurite did not confirm the new account set within {timeout:.0f} s")
                self._ack_changed.wait(min(remaining, 0.1))
            answer = self._acks.pop(seq)
        if answer != "updated":
            raise AzuriteError(f"Azurite did not take the account set; {self.install.package_dir} may not be "
                               f"the Azurite {AZURITE_VERSION} this project pins")
