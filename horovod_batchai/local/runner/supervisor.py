"""The supervisor of one run: the process that runs a job's processes, detached from the service.

The service (``job_executor.py``) starts it in a session of its own, so it and the job outlive a
service that is killed (a crash, the OOM killer, ``kill -9``). It runs the run's steps -- job
preparation on every node at once, then the toolkit on the master node --, enforces the
wall-clock limit, and records how the run ended in ``exit.json`` in the run's directory, where a
service started again on the same state directory finds it (``scheduler.py`` re-attaches).

It is started as a file, ``python supervisor.py <run dir>``, not as a module of the package: it
imports only the standard library and ``processes.py`` next to it, so it starts fast and keeps
running whatever happens to the service's imports. What to run is in ``<run dir>/run.json``
(mode 0600: it holds the environments, secrets included); the supervisor removes it once read.

Files of the run directory (0700):

``run.json``      written by the service: the steps, the deadline, the stop grace, the tag.
``supervisor.json`` the supervisor's pid (``{"pid"}``), written first.
``started.json``  written before the first process of the job starts (``{"pid", "time"}``): a
                  restarted service that finds neither it nor a live supervisor knows that
                  nothing of the job ran, and runs the job again.
``exit.json``     written atomically at the end: ``{"phase": "preparation"|"toolkit",
                  "exit_code", "node" (the first node whose preparation failed), "stopped": null |
                  "wall_clock" | "signal", "error" (a step that could not start), "time"}``.

SIGTERM (or SIGINT) asks it to stop the run: its processes get SIGTERM, then SIGKILL after the
grace period, and ``exit.json`` says ``"stopped": "signal"``. horovodrun's output goes through it:
each ``[<rank>]<stdout>:`` tag is taken off its line, which goes to ``stdout.txt`` (``stderr.txt``)
and to the rank's own file.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Optional

try:
    from .processes import exit_code, stop_tagged
except ImportError:  # run as a file (the way the service runs it): processes.py is next to it
    from processes import exit_code, stop_tagged  # type: ignore[import-not-found,no-redef]

__all__ = ["RUN_FILE", "PID_FILE", "STARTED_FILE", "EXIT_FILE", "write_json_atomically", "main"]

RUN_FILE, PID_FILE, STARTED_FILE, EXIT_FILE = "run.json", "supervisor.json", "started.json", "exit.json"
_TAG = re.compile(rb"\[(\d+)\]<(stdout|stderr)>:")
_POLL_S = 0.1


def write_json_atomically(path: Path, data: Any) -> None:
    """Write ``path`` whole or not at all (temporary file, fsync, rename), mode 0600."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(temporary, path)


def _utc_now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def _log(path: Optional[str], message: str) -> None:
    """A line in a node's execution log (the service writes the same way: appended, timestamped)."""
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{_utc_now()} {message}\n")
    except OSError:
        pass  # the log's share was unmounted: the run goes on


class _RankSplitter:
    """Copies one of horovodrun's streams: tags off, each line to the stream's file and its rank's."""

    def __init__(self, source: IO[bytes], target: Path, ranks: Path, stream: str, rank_count: int) -> None:
        self.source, self.target, self.ranks, self.stream = source, target, ranks, stream
        self.width = len(str(max(rank_count - 1, 0)))  # horovodrun's own padding of rank.<n>
        self._rank_files: dict[str, IO[bytes]] = {}
        self.thread = threading.Thread(target=self._copy, daemon=True)
        self.thread.start()

    def _rank_file(self, rank: str) -> Optional[IO[bytes]]:
        if rank not in self._rank_files:
            directory = self.ranks / f"rank.{rank.zfill(self.width)}"
            try:
                directory.mkdir(parents=True, exist_ok=True)
                self._rank_files[rank] = open(directory / f"{self.stream}.txt", "ab", buffering=0)
            except OSError:
                return None
        return self._rank_files[rank]

    def _copy(self) -> None:
        with open(self.target, "ab", buffering=0) as out:
            pending = b""
            while True:
                chunk = self.source.read1(65536) if hasattr(self.source, "read1") else self.source.read(65536)
                if chunk:
                    pending += chunk
                # horovodrun tags each piece that ends in \n or \r (progress bars rewrite a line).
                pieces = re.split(rb"(?<=[\r\n])", pending)
                pending = pieces.pop() if chunk else b""
                for piece in pieces:
                    if piece:
                        self._write(out, piece)
                if not chunk:
                    break
        for fh in self._rank_files.values():
            fh.close()

    def _write(self, out: IO[bytes], piece: bytes) -> None:
        match = _TAG.match(piece)
        if match is None:
            out.write(piece)  # horovodrun's own line
            return
        line = piece[match.end():]
        out.write(line)
        rank_file = self._rank_file(match.group(1).decode())
        if rank_file is not None:
            rank_file.write(line)


class Supervisor:
    def __init__(self, run_dir: Path, spec: dict[str, Any]) -> None:
        self.run_dir = run_dir
        self.spec = spec
        self.tag: str = spec["tag"]
        self.deadline: float = float(spec["deadline"])
        self.grace: float = float(spec.get("grace", 3.0))
        self.stopped: Optional[str] = None
        self._procs: list[subprocess.Popen[bytes]] = []
        self._started = False

    # -- signals --------------------------------------------------------------------------------

    def request_stop(self, signum: int, frame: Any) -> None:
        if self.stopped is None:
            self.stopped = "signal"

    # -- processes ------------------------------------------------------------------------------

    def _spawn(self, step: dict[str, Any]) -> subprocess.Popen[bytes]:
        if not self._started:
            write_json_atomically(self.run_dir / STARTED_FILE, {"pid": os.getpid(), "time": time.time()})
            self._started = True
        _log(step.get("log"), step.get("log_start") or "")
        split = step.get("split_ranks")
        with open(step["stdout"], "ab", buffering=0) as out, open(step["stderr"], "ab", buffering=0) as err:
            proc = subprocess.Popen(step["argv"], env=step["env"], cwd=step["cwd"], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE if split else out,
                                    stderr=subprocess.PIPE if split else err,
                                    start_new_session=True, close_fds=True)
        if split:
            assert proc.stdout is not None and proc.stderr is not None
            proc.splitters = [  # type: ignore[attr-defined]
                _RankSplitter(proc.stdout, Path(step["stdout"]), Path(split), "stdout", step["rank_count"]),
                _RankSplitter(proc.stderr, Path(step["stderr"]), Path(split), "stderr", step["rank_count"])]
        self._procs.append(proc)
        return proc

    def _stop_all(self) -> None:
        """SIGTERM to every process of the run, SIGKILL after the grace period: none outlives it."""
        stop_tagged(self.tag, [p.pid for p in self._procs], grace=self.grace)

    def _wait(self, procs: list[subprocess.Popen[bytes]]) -> list[Optional[int]]:
        """Exit codes of ``procs`` once all have ended; stops them all first on a stop request or at
        the deadline."""
        while any(p.poll() is None for p in procs):
            if self.stopped is None and time.time() >= self.deadline:
                self.stopped = "wall_clock"
            if self.stopped is not None:
                self._stop_all()
                break
            time.sleep(_POLL_S)
        codes: list[Optional[int]] = []
        for proc in procs:
            try:
                codes.append(exit_code(proc.wait(timeout=60)))
            except subprocess.TimeoutExpired:
                codes.append(None)
            for splitter in getattr(proc, "splitters", []):
                splitter.thread.join(timeout=10)  # a killed rank's middleman may keep a pipe open briefly
        return codes

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        preparation = self.spec.get("preparation") or []
        if preparation:
            try:
                procs = [self._spawn(step) for step in preparation] if self.stopped is None else []
            except OSError as exc:
                self._stop_all()
                return {"phase": "preparation", "exit_code": None, "error": f"{exc.strerror}: {exc.filename}"}
            codes = self._wait(procs)
            for step, code in zip(preparation, codes):
                _log(step.get("log"), f"job preparation exited with code {code}")
            if self.stopped is not None:
                return {"phase": "preparation", "exit_code": _first_set(codes)}
            failed = next(((i, c) for i, c in enumerate(codes) if c != 0), None)
            if failed is not None:
                return {"phase": "preparation", "exit_code": failed[1], "node": failed[0]}
        toolkit = self.spec["toolkit"]
        if self.stopped is not None:
            return {"phase": "toolkit", "exit_code": None}
        try:
            proc = self._spawn(toolkit)
        except OSError as exc:
            return {"phase": "toolkit", "exit_code": None, "error": f"{exc.strerror}: {exc.filename}"}
        [code] = self._wait([proc])
        if self.stopped is None:
            # Nothing a rank started outlives the job (horovodrun puts ranks in sessions of their own).
            stop_tagged(self.tag, [proc.pid], grace=0)
        _log(toolkit.get("log"), f"stopped: {self.stopped}" if self.stopped else
             f"the job's command exited with code {code}")
        return {"phase": "toolkit", "exit_code": code}


def _first_set(codes: list[Optional[int]]) -> Optional[int]:
    return next((c for c in codes if c is not None), None)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: supervisor.py <run dir>", file=sys.stderr)
        return 2
    run_dir = Path(argv[1])
    # First of all, so that a restarted service can ask this run to stop.
    write_json_atomically(run_dir / PID_FILE, {"pid": os.getpid()})
    with open(run_dir / RUN_FILE, encoding="utf-8") as fh:
        spec = json.load(fh)
    os.unlink(run_dir / RUN_FILE)  # the secrets in it now live in this process's memory only
    supervisor = Supervisor(run_dir, spec)
    signal.signal(signal.SIGTERM, supervisor.request_stop)
    signal.signal(signal.SIGINT, supervisor.request_stop)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal is no reason to stop a job
    try:
        result = supervisor.run()
    except Exception as exc:  # record it: a restarted service must not wait for this run forever
        supervisor._stop_all()
        result = {"phase": "toolkit", "exit_code": None, "error": f"the supervisor failed: {type(exc).__name__}"}
    finally:
        secrets = spec.get("rank_secrets_file")
        if secrets:
            try:
                os.unlink(secrets)
            except FileNotFoundError:
                pass
    result.setdefault("node", None)
    result["stopped"] = supervisor.stopped
    result["time"] = time.time()
    write_json_atomically(run_dir / EXIT_FILE, result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
