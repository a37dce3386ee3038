"""Progress of uploads and downloads: a tqdm bar, a callback of the caller's, or nothing.

``progress=None`` (the default) shows a bar only when stderr is a terminal or the code runs in a
Jupyter kernel; ``True`` always shows one; ``False`` never; a callable is called with
``(bytes_done, bytes_total)``. In Jupyter, with ipywidgets installed, the bar is tqdm's notebook widget;
without ipywidgets it is the text bar.
Transfers run in several threads, so updates are serialised here.
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Optional, Union

__all__ = ["Progress", "ProgressArg"]

ProgressArg = Union[None, bool, Callable[[int, int], None]]


class Progress:
    """Aggregates per-file byte counts (reported cumulatively per file) into one total."""

    def __init__(self, progress: ProgressArg, total: int, description: str) -> None:
        self._lock = threading.Lock()
        #: the caller's callback is called by one thread at a time (a print from two would tear)
        self._calling = threading.Lock()
        self._per_file: dict[str, int] = {}
        self._done = 0
        self._total = total
        self._callback: Optional[Callable[[int, int], None]] = progress if callable(progress) else None
        self._bar: Any = None
        if progress is not False and self._callback is None:
            bar_class, in_notebook = _bar_class()
            # disable=None lets tqdm hide the bar when stderr is not a terminal, as it is in a kernel
            self._bar = bar_class(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=description,
                                  disable=None if progress is None and not in_notebook else False, leave=False)

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
            if self._bar is not None:
                self._bar.update(delta)
        if self._callback is not None:
            with self._calling:
                with self._lock:  # the count as it stands now: calls never go back
                    done = self._done
                self._callback(done, self._total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _bar_class() -> tuple[Any, bool]:
    """tqdm's notebook widget inside a Jupyter kernel that can show it, else its text bar; and
    whether this is a Jupyter kernel. tqdm.auto is not used: without ipywidgets its notebook bar
    raises ImportError where the text bar would do."""
    from tqdm import tqdm  # type: ignore[import-untyped]
    if not _in_jupyter_kernel():
        return tqdm, False
    try:
        import ipywidgets  # type: ignore[import-untyped]  # noqa: F401
        from tqdm.notebook import tqdm as notebook_tqdm  # type: ignore[import-untyped]
    except ImportError:
        return tqdm, True
    return notebook_tqdm, True


def _in_jupyter_kernel() -> bool:
    shell = sys.modules.get("IPython")
    get_ipython = getattr(shell, "get_ipython", None)
    instance = get_ipython() if get_ipython is not None else None
    return instance is not None and "IPKernelApp" in getattr(instance, "config", {})
