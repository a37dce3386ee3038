"""Keeping mounted containers in step while jobs use them.

A mirror is *held* while a job (or a node's setup task) uses it: every ``interval`` seconds one
thread pushes the mirror's local changes to the container and pulls the container's changes, so
whatever a running job writes appears in the container within seconds (and its download links
with it). Releasing a mirror pushes once more, so the container holds everything the job wrote
by the time the job is reported finished (unless that push fails: the caller reports it, see
``runner/mounts.py``).
"""
from __future__ import annotations

import logging
import threading
from typing import Optional

from .mirror import ContainerMirror, SyncCounts

__all__ = ["MirrorSync"]

log = logging.getLogger(__name__)


class MirrorSync:
    def __init__(self, interval: float = 2.0) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        self.interval = interval
        self._held: dict[int, tuple[ContainerMirror, int]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def hold(self, mirror: ContainerMirror) -> None:
        with self._lock:
            _, count = self._held.get(id(mirror), (mirror, 0))
            self._held[id(mirror)] = (mirror, count + 1)
            if self._thread is None or not self._thread.is_alive():
                self._stopping.clear()
                self._thread = threading.Thread(target=self._loop, name="blob-mirror-sync", daemon=True)
                self._thread.start()

    def release(self, mirror: ContainerMirror) -> SyncCounts:
        """The final push of one user of ``mirror``; it stays held while others use it."""
        with self._lock:
            _, count = self._held.get(id(mirror), (mirror, 1))
            if count <= 1:
                self._held.pop(id(mirror), None)
            else:
                self._held[id(mirror)] = (mirror, count - 1)
        return mirror.push()

    def held(self) -> list[ContainerMirror]:
        with self._lock:
            return [mirror for mirror, _ in self._held.values()]

    def stop(self) -> None:
        """Stop the thread, after a last push of every mirror still held."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        for mirror in self.held():
            self._sync(mirror, pull=False)
        with self._lock:
            self._held.clear()

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval):
            for mirror in self.held():
                if self._stopping.is_set():
                    return
                self._sync(mirror, pull=True)

    @staticmethod
    def _sync(mirror: ContainerMirror, *, pull: bool) -> None:
        try:
            mirror.push()
            if pull:
                mirror.pull()
        except Exception as exc:  # the blob endpoint may be gone for a moment; the next round retries
            log.warning("keeping %r in step failed: %s", mirror, type(exc).__name__)
