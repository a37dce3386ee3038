"""Finding and stopping every process of a run.

Every process of a run carries a random tag in its environment (``HOROVOD_BATCHAI_RUN``) and
starts its own session; stopping a run signals both the process groups it started and every
process carrying its tag, because horovodrun starts its ranks in sessions of their own. No
process outlives its run.

Standard library only: the run's supervisor (``supervisor.py``), which runs as a file outside the
package, imports it too."""
from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Iterable

log = logging.getLogger(__name__)


RUN_TAG_ENV = "HOROVOD_BATCHAI_RUN"
#: seconds processes get between SIGTERM and SIGKILL when a run is stopped.
STOP_GRACE_S = 3.0

__all__ = ["RUN_TAG_ENV", "STOP_GRACE_S", "tagged_pids", "signal_tagged", "stop_tagged", "exit_code"]


def tagged_pids(tag: str) -> list[int]:
    """Processes whose environment carries ``HOROVOD_BATCHAI_RUN=<tag>`` (our own user's only),
    except this one: a run's supervisor carries its run's tag and stops the others."""
    needle = f"{RUN_TAG_ENV}={tag}".encode()
    pids: list[int] = []
    proc = Path("/proc")
    me = str(os.getpid())
    if proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit() or entry.name == me:
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue  # gone, a zombie, or another user's
            if needle in environ.split(b"\0"):
                pids.append(int(entry.name))
        return pids
    try:
        import psutil
    except ImportError:
        return pids
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.environ().get(RUN_TAG_ENV) == tag:
                pids.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return pids


def signal_tagged(tag: str, pgids: Iterable[int], sig: int) -> int:
    """Send ``sig`` to the process groups and to every tagged process; returns how many tagged
    processes were found alive."""
    for pgid in pgids:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    found = tagged_pids(tag)
    for pid in found:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return len(found)


def stop_tagged(tag: str, pgids: Iterable[int], *, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM, then SIGKILL whatever is left after ``grace`` seconds, until nothing is left."""
    pgids = list(pgids)
    if grace > 0 and signal_tagged(tag, pgids, signal.SIGTERM):
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and tagged_pids(tag):
            time.sleep(0.05)
    for _ in range(100):
        if not signal_tagged(tag, pgids, signal.SIGKILL):
            return
        time.sleep(0.05)
    log.warning("processes of run %s survived SIGKILL", tag)


def exit_code(returncode: int) -> int:
    """A process's exit code as bash reports it (128 + the signal for one killed by a signal)."""
    return 128 - returncode if returncode < 0 else returncode
