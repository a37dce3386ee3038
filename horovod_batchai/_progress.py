"""Progress of uploads and downloads: a tqdm bar, a callback of the caller's, or nothing.

``progress=None`` (the default) shows a bar only when stderr is a terminal; ``True`` always
shows one; ``False`` never; a callable is called with ``(bytes_done, bytes_total)``.
Transfers run in several threads, so updates are serialised here.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Union

__all__ = ["Progress", "ProgressArg"]

ProgressArg = Union[None, bool, Callable[[int, int], None]]


class Progress:
    """Aggregates per-file byte counts (reported cumulatively per file) into one total."""

    def __init__(self, progress: ProgressArg, total: int, description: str) -> None:
        self._lock = threading.Lock()
        self._per_file: dict[str, int] = {}
        self._done = 0
        self._total = total
        self._callback: Optional[Callable[[int, int], None]] = progress if callable(progress) else None
        self._bar: Any = None
        if progress is not False and self._callback is None:
            from tqdm import tqdm  # type: ignore[import-untyped]
            # disable=None lets tqdm hide the bar when stderr is not a terminal
            self._bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=description,
                             disable=None if progress is None else False, leave=False)

    def hook(self, key: str) -> Callable[[int, Optional[int]], None]:
        """A ``progress_hook`` for azure-storage, which reports ``(current, total)`` for one file."""
        def update(current: int, total: Optional[int] = None) -> None:
            self.set(key, current)
        return update

    def set(self, key: str, current: int) -> None:
        with self._lock:
            delta = current - self._per_file.get(key, 0)
            if delta <= 0:
                return
            self._per_file[key] = current
            self._done += delta
            done = self._done
            if self._bar is not None:
                self._bar.update(delta)
        if self._callback is not None:
            self._callback(done, self._total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
