"""Running the files of a directory transfer side by side, and stopping all of them promptly.

A ``ThreadPoolExecutor`` would finish every queued file before a ``KeyboardInterrupt`` could leave
its ``with`` block, so Ctrl-C on a large tree waited for the whole tree. Here the workers are
daemon threads and the caller's thread only waits, in short slices, so Ctrl-C (which Python
delivers to the main thread) is seen at once: it sets the ``stop`` event every task checks between
ranges (:func:`check_stop`), gives running tasks a short grace to delete what they half-wrote, and
is re-raised. The first task that fails stops the others the same way, and so does the caller's
own ``stop`` event, set from another thread (then :class:`StoppedError` is raised).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable, Optional, Sequence

from .._models.errors import StoppedError

__all__ = ["Stopped", "run_parallel", "check_stop", "STOP_GRACE_S"]

#: seconds running tasks get, once asked to stop, to finish the range in flight and clean up.
STOP_GRACE_S = 0.8


class Stopped(StoppedError):
    """Raised inside a task that was asked to stop (another task failed, the caller was
    interrupted, or the caller's stop event was set)."""


def check_stop(stop: Optional[threading.Event]) -> None:
    if stop is not None and stop.is_set():
        raise Stopped("the transfer was stopped by the caller's stop event")


def run_parallel(tasks: Sequence[Callable[[threading.Event], None]], *, workers: int,
                 grace: float = STOP_GRACE_S, caller_stop: Optional[threading.Event] = None) -> None:
    """Run ``tasks`` (each called with the shared stop event), ``workers`` at a time. Raises the
    first task's error, or whatever interrupted the caller, after asking the others to stop;
    :class:`StoppedError` when ``caller_stop`` was set."""
    stop = threading.Event()
    pending = deque(tasks)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work() -> None:
        while not stop.is_set():
            with lock:
                if not pending:
                    return
                task = pending.popleft()
            try:
                task(stop)
            except BaseException as err:  # noqa: B036 -- handed to the caller's thread below
                with lock:
                    errors.append(err)
                stop.set()

    threads = [threading.Thread(target=work, name=f"transfer-{i}", daemon=True)
               for i in range(max(1, min(workers, len(tasks))))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.1)
                if caller_stop is not None and caller_stop.is_set():
                    raise Stopped("the transfer was stopped by the caller's stop event")
    except BaseException:
        stop.set()
        deadline = time.monotonic() + grace
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        raise
    real = [err for err in errors if not isinstance(err, Stopped)]
    if real:
        raise real[0]
