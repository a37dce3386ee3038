"""A job's TensorBoard event files and the TensorBoard process started on them, shared by the sync
and the aio TensorBoard: which files to fetch, where they go, the process itself (a local program,
not a request), and a sweep's trials as runs with their parameters and final objective as HParams.

A TensorBoard started here ends when the interpreter that started it ends, however it ends (a
notebook's kernel shut down or killed included), unless it was started with ``keep_alive=True``:
it reads a pipe from its parent and exits when the pipe closes (see :data:`_WATCHED`). It runs in
a session of its own either way, so a Ctrl-C (a notebook's interrupt) does not end it."""
from __future__ import annotations

import importlib.util
import logging
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .._models.errors import HorovodBatchAIError, WaitTimeoutError
from .._models.names import local_directory
from .paths import local_path_under

if TYPE_CHECKING:
    from .._models.values import OutputFile

log = logging.getLogger(__name__)

__all__ = ["EVENTS_DIR", "TensorBoardBase", "SweepTensorBoardBase", "SweepRun", "event_files_to_fetch",
           "has_event_files", "tensorboard_folder", "tensorboard_installed", "sweep_tensorboard_folder", "HParamsWriter"]


#: the directory of event files in a job's output directory
EVENTS_DIR = "tensorboard"


#: what TensorBoard prints once it listens (2.15: "TensorBoard 2.15.2 at http://127.0.0.1:40711/ ...")
_SERVING = re.compile(rb"^TensorBoard \S+ at http://127\.0\.0\.1:(\d+)/", re.MULTILINE)


#: how TensorBoard runs when it must end with its parent: a thread reads the pipe on its stdin,
#: which only the parent holds, and ends the process when the pipe closes (the parent exited, or
#: was killed); TensorBoard's own data server, if it starts one, ends when TensorBoard does.
_WATCHED = ("import os, runpy, sys, threading\n"
            "def _watch():\n"
            "    while sys.stdin.buffer.read1(4096):\n"
            "        pass\n"
            "    os._exit(0)\n"
            "threading.Thread(target=_watch, daemon=True).start()\n"
            "sys.argv[0] = 'tensorboard'\n"
            "runpy.run_module('tensorboard.main', run_name='__main__', alter_sys=True)\n")


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
        self.keep_alive = False  # whether the running TensorBoard outlives this interpreter
        self.logdir = logdir
        self.port = port  # None until TensorBoard reports the port it bound
        self._requested = port
        self.process: Optional[subprocess.Popen] = None
        self._stderr: Optional[IO[bytes]] = None
        self.command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1",
                        "--port", str(port if port is not None else 0)]

    def __repr__(self) -> str:
        return f"TensorBoard(job={self.job.name!r}, logdir={str(self.logdir)!r}, url={self.url!r})"

    def _subject(self) -> Tuple[str, str]:
        """What the event files are of, as HTML: (kind, name), e.g. ("job", "cifar")."""
        return "job", self.job.name

    def _repr_html_(self) -> str:
        import html
        kind, name = self._subject()
        if self.url is None:
            return (f"<p>Event files of {kind} <code>{html.escape(name)}</code> are in "
                    f"<code>{html.escape(str(self.logdir))}</code>; start TensorBoard with "
                    f"<code>{html.escape(self.command_line)}</code></p>")
        return f'<p>TensorBoard of {kind} <code>{html.escape(name)}</code>: <a href="{self.url}">{self.url}</a></p>'

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

    def _start(self, timeout: float, keep_alive: bool = False) -> None:
        """Start TensorBoard on :attr:`logdir` and wait until it says where it listens; when
        TensorBoard is not installed, log the command and return without starting anything. It
        ends with this interpreter unless ``keep_alive``."""
        if not isinstance(keep_alive, bool):
            raise TypeError(f"keep_alive must be True or False, not {keep_alive!r}")
        if self.url is not None:
            return
        if not tensorboard_installed():
            log.warning("TensorBoard is not installed (it comes with TensorFlow); run: %s", self.command_line)
            return
        # its log goes to a file: a pipe nobody reads would block it once full
        self._stderr = tempfile.TemporaryFile()
        # a session of its own: Ctrl-C in the notebook or terminal that started it does not end it
        if keep_alive:
            self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=self._stderr, start_new_session=True)
        else:  # the pipe on its stdin is its tie to this interpreter (_WATCHED)
            self.process = subprocess.Popen([self.command[0], "-c", _WATCHED, *self.command[3:]],
                                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr,
                                            start_new_session=True)
        self.keep_alive = keep_alive
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
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()
        self.process = None
        self.port = self._requested
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


class SweepTensorBoardBase(TensorBoardBase):
    """What a sweep's TensorBoard is besides a job's, for the sync and the aio one alike: every
    trial a run, its parameters and final objective written as HParams."""

    def __init__(self, sweep: str, metric: str, parameters: Sequence[str], runs: Sequence["SweepRun"],
                 logdir: Path, port: Optional[int]) -> None:
        super().__init__(None, logdir, port)
        self.sweep = sweep
        self.runs = tuple(runs)
        self._hparams = HParamsWriter(logdir, metric, parameters)

    def __repr__(self) -> str:
        return (f"TensorBoard(sweep={self.sweep!r}, trials={len(self.runs)}, logdir={str(self.logdir)!r}, "
                f"url={self.url!r})")

    def _subject(self) -> Tuple[str, str]:
        return "sweep", self.sweep


def tensorboard_folder(job: Any, logdir: Optional[Path]) -> Path:
    """Where ``job.tensorboard(logdir)`` syncs to: ``logdir``, or ``./tensorboard/<job>``."""
    return local_directory(logdir if logdir is not None else Path("tensorboard") / job.name, "logdir")


def sweep_tensorboard_folder(sweep: str, logdir: Optional[Path]) -> Path:
    """Where ``sweep.tensorboard(logdir)`` syncs to: ``logdir``, or ``./tensorboard/<sweep>``."""
    return local_directory(logdir if logdir is not None else Path("tensorboard") / sweep, "logdir")


@dataclass(frozen=True)
class SweepRun:
    """A trial as a run of the sweep's TensorBoard: its name (the run's folder under the logdir),
    parameters, job (None until submitted), and the final value of the sweep's metric (None until
    recorded) at ``epochs``."""

    name: str
    parameters: Mapping[str, Any]
    job: Any
    final: Optional[float]
    epochs: int


def _hparam_value(value: Any) -> Any:
    """A parameter as HParams holds it: a bool, a number or a string."""
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return str(value)


class HParamsWriter:
    """The sweep's HParams in its logdir: the experiment (its parameters and metric) at the top,
    and in each trial's folder its parameters and the final value of the metric, as TensorBoard's
    HPARAMS tab reads them. It needs the ``tensorboard`` package only (no TensorFlow).

    TensorBoard reads a run's event files once each, in the order of their names, so a trial whose
    values changed gets a new file, named after the last, and its older ones are removed."""

    #: the event files this writer makes end with this, after TensorBoard's ``tfevents`` prefix
    SUFFIX = ".horovod-batchai-hparams"

    def __init__(self, logdir: Path, metric: str, parameters: Sequence[str]) -> None:
        self.logdir = logdir
        self.metric = metric
        self.tag = f"final_{metric}"
        self.parameters = tuple(parameters)
        self._written: Dict[str, Tuple[Any, ...]] = {}

    def _write(self, folder: Path, summaries: List[Any], step: int) -> None:
        from tensorboard.compat.proto import event_pb2  # type: ignore[import-untyped]
        from tensorboard.summary.writer.record_writer import RecordWriter  # type: ignore[import-untyped]
        folder.mkdir(parents=True, exist_ok=True)
        old = sorted(folder.glob("events.out.tfevents.*" + self.SUFFIX))
        stamp = time.time_ns()
        if old:  # a later name than any before it, whatever the clock says
            stamp = max(stamp, int(old[-1].name.split(".")[3]) + 1)
        path = folder / f"events.out.tfevents.{stamp}{self.SUFFIX}"
        tmp = folder / f".{path.name}.tmp"  # TensorBoard lists only names with tfevents in them: never a half file
        with open(tmp, "wb") as fh:
            records = RecordWriter(fh)
            records.write(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString())
            for summary in summaries:
                records.write(event_pb2.Event(wall_time=time.time(), step=step, summary=summary).SerializeToString())
        os.replace(tmp, path)
        for stale in old:
            stale.unlink(missing_ok=True)

    def write(self, runs: Sequence[SweepRun]) -> int:
        """Write the experiment once, and each trial whose parameters or final value changed since
        the last write; returns how many trials were written."""
        from tensorboard.compat.proto import summary_pb2  # type: ignore[import-untyped]
        from tensorboard.plugins.hparams import summary_v2 as hp  # type: ignore[import-untyped]
        if "experiment" not in self._written:
            config = hp.hparams_config_pb([hp.HParam(name) for name in self.parameters],
                                          [hp.Metric(self.tag, display_name=f"final {self.metric}")])
            self._write(self.logdir, [config], 0)
            self._written["experiment"] = ()
        written = 0
        for run in runs:
            values = {k: _hparam_value(v) for k, v in run.parameters.items() if v is not None}
            state = (tuple(sorted(values.items())), run.final, run.epochs)
            if self._written.get(run.name) == state:
                continue
            summaries = [hp.hparams_pb(values, trial_id=run.name)]
            if run.final is not None:
                summaries.append(summary_pb2.Summary(value=[summary_pb2.Summary.Value(
                    tag=self.tag, simple_value=float(run.final))]))
            self._write(local_path_under(self.logdir, run.name), summaries, run.epochs)
            self._written[run.name] = state
            written += 1
        return written
