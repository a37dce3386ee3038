"""A job's TensorBoard event files and the TensorBoard process started on them, shared by the sync
and the aio TensorBoard: which files to fetch, where they go, and the process itself (a local
program, not a request)."""
from __future__ import annotations

import importlib.util
import logging
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any, List, Optional, Tuple

from .._models.errors import HorovodBatchAIError, WaitTimeoutError
from .._models.names import local_directory
from .paths import local_path_under

if TYPE_CHECKING:
    from .._models.values import OutputFile

log = logging.getLogger(__name__)

__all__ = ["EVENTS_DIR", "TensorBoardBase", "event_files_to_fetch", "has_event_files", "tensorboard_folder", "tensorboard_installed"]


#: the directory of event files in a job's output directory
EVENTS_DIR = "tensorboard"


#: what TensorBoard prints once it listens (2.15: "TensorBoard 2.15.2 at http://127.0.0.1:40711/ ...")
_SERVING = re.compile(rb"^TensorBoard \S+ at http://127\.0\.0\.1:(\d+)/", re.MULTILINE)


def tensorboard_installed() -> bool:
    return importlib.util.find_spec("tensorboard") is not None


def has_event_files(top: List["OutputFile"]) -> bool:
    """Whether a job's listed output directory has the directory of event files."""
    return any(f.name == EVENTS_DIR and f.is_directory for f in top)


def event_files_to_fetch(directory: str, items: List["OutputFile"],
                         logdir: Path) -> Tuple[List[str], List[Tuple[str, Path]]]:
    """What one listed ``directory`` of event files asks for: its subdirectories to list, and the
    (remote path, local path) of each file missing from ``logdir`` or smaller there (its folder
    made)."""
    subdirectories: List[str] = []
    downloads: List[Tuple[str, Path]] = []
    for item in items:
        remote = f"{directory}/{item.name}"
        if item.is_directory:
            subdirectories.append(remote)
            continue
        local = local_path_under(logdir, str(PurePosixPath(remote).relative_to(EVENTS_DIR)))
        if local.exists() and item.size is not None and local.stat().st_size >= int(item.size):
            continue
        local.parent.mkdir(parents=True, exist_ok=True)
        downloads.append((remote, local))
    return subdirectories, downloads


class TensorBoardBase:
    """TensorBoard's process on a folder of a job's event files: what the sync and the aio
    ``TensorBoard`` share (they differ in how :meth:`sync` fetches the files).

    Without a ``port``, TensorBoard binds one the system chooses (``--port 0``) and :attr:`port`
    is the one it reports: picking a free port first and binding it later would let another
    process take it in between.
    """

    def __init__(self, job: Any, logdir: Path, port: Optional[int]) -> None:
        self.job = job
        self.logdir = logdir
        self.port = port  # None until TensorBoard reports the port it bound
        self._requested = port
        self.process: Optional[subprocess.Popen] = None
        self._stderr: Optional[IO[bytes]] = None
        self.command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1",
                        "--port", str(port if port is not None else 0)]

    def __repr__(self) -> str:
        return f"TensorBoard(job={self.job.name!r}, logdir={str(self.logdir)!r}, url={self.url!r})"

    def _repr_html_(self) -> str:
        import html
        if self.url is None:
            return (f"<p>Event files of job <code>{html.escape(self.job.name)}</code> are in "
                    f"<code>{html.escape(str(self.logdir))}</code>; start TensorBoard with "
                    f"<code>{html.escape(self.command_line)}</code></p>")
        return f'<p>TensorBoard of job <code>{html.escape(self.job.name)}</code>: <a href="{self.url}">{self.url}</a></p>'

    @property
    def command_line(self) -> str:
        """The shell command that runs TensorBoard on :attr:`logdir` (what to run where it is not installed)."""
        return shlex.join(["tensorboard", *self.command[3:]])

    @property
    def url(self) -> Optional[str]:
        """Where TensorBoard answers (``http://127.0.0.1:<port>/``); None when it is not running."""
        if self.process is None or self.process.poll() is not None or self.port is None:
            return None
        return f"http://127.0.0.1:{self.port}/"

    def _start(self, timeout: float) -> None:
        """Start TensorBoard on :attr:`logdir` and wait until it says where it listens; when
        TensorBoard is not installed, log the command and return without starting anything."""
        if self.url is not None:
            return
        if not tensorboard_installed():
            log.warning("TensorBoard is not installed (it comes with TensorFlow); run: %s", self.command_line)
            return
        # its log goes to a file: a pipe nobody reads would block it once full
        self._stderr = tempfile.TemporaryFile()
        # a session of its own: Ctrl-C in the notebook or terminal that started it does not end it
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=self._stderr,
                                        start_new_session=True)
        # Ready once it says where it listens (it prints that after binding): its own word, where
        # connecting to the port could reach another process that listens there.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            exited = self.process.poll() is not None
            self._stderr.seek(0)
            log_text = self._stderr.read()
            serving = _SERVING.search(log_text)
            if serving is not None and not exited:
                self.port = int(serving.group(1))
                return
            if exited:
                self._stop()
                raise HorovodBatchAIError("TensorBoard exited at start: "
                                          f"{log_text.decode(errors='replace').strip()[-2000:]}")
            time.sleep(0.25)
        self._stop()
        where = f"on port {self._requested}" if self._requested is not None else "on the port the system chose"
        raise WaitTimeoutError(f"TensorBoard did not listen {where} within {timeout:g}s")

    def _stop(self) -> None:
        """End TensorBoard if this object started it."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        self.port = self._requested
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def tensorboard_folder(job: Any, logdir: Optional[Path]) -> Path:
    """Where ``job.tensorboard(logdir)`` syncs to: ``logdir``, or ``./tensorboard/<job>``."""
    return local_directory(logdir if logdir is not None else Path("tensorboard") / job.name, "logdir")
