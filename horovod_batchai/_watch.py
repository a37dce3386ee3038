"""``Job.watch()``: the job's state, the last lines of its output and its curves, kept up to date
in place in a notebook (one display updated, not a new one per poll), as plain lines elsewhere.

It returns when the job ends, or at once on an interrupt (the kernel's stop button), so the kernel
is free again; the job itself keeps running.
"""
from __future__ import annotations

import html
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, List, Optional

from ._models.states import JobStatus
from ._shared.polling import Polling

if TYPE_CHECKING:
    from ._job import Job

__all__ = ["watch", "NotebookView", "TextView", "in_notebook", "results_view"]


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where displays can be updated in place)."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython()  # type: ignore[attr-defined]
    return ip is not None and getattr(ip, "kernel", None) is not None


class NotebookView:
    """Two displays, updated in place: the state and output lines (HTML), and the curves (PNG)."""

    def __init__(self, display: Optional[Callable[..., Any]] = None) -> None:
        if display is None:
            from IPython.display import display as ipython_display
            display = ipython_display
        self._display = display
        self._text = None
        self._plot = None

    def show(self, status: JobStatus, lines: List[str], png: Optional[bytes]) -> None:
        from IPython.display import HTML, Image
        body = HTML(status._repr_html_() + "<pre>" + html.escape("\n".join(lines)) + "</pre>")
        if self._text is None:
            self._text = self._display(body, display_id=True)
        else:
            self._text.update(body)
        if png is not None:
            if self._plot is None:
                self._plot = self._display(Image(data=png, format="png"), display_id=True)
            else:
                self._plot.update(Image(data=png, format="png"))


class TextView:
    """Outside a notebook: each new state, and each output line once."""

    def __init__(self, write: Callable[[str], Any] = sys.stdout.write) -> None:
        self._write = write
        self._state: Optional[str] = None
        self._shown: List[str] = []

    def show(self, status: JobStatus, lines: List[str], png: Optional[bytes]) -> None:
        if status.execution_state.value != self._state:
            self._state = status.execution_state.value
            self._write(f"[{status.name}: {self._state}]\n")
        # the lines after the last one already shown
        overlap = 0
        for size in range(min(len(lines), len(self._shown)), 0, -1):
            if self._shown[-size:] == lines[:size]:
                overlap = size
                break
        for line in lines[overlap:]:
            self._write(line + "\n")
        self._shown = list(lines)


def watch(job: "Job", *, lines: int, curves: bool, poll_interval: Optional[float], timeout: Optional[float],
          view: Any, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
          ) -> JobStatus:
    polling = Polling(timeout=timeout, clock=clock, sleep=sleep,
                      poll_interval=poll_interval if poll_interval is not None
                      else max(1.0, job._backend.default_poll_interval))
    drawn_epochs = -1
    png: Optional[bytes] = None
    status = job.refresh().status  # fetched before the loop, so an interrupt always has one to return
    try:
        while True:
            tail = job.stdout_tail().splitlines()[-lines:] if lines else []
            if curves:
                table = job.metrics()
                if len(table) != drawn_epochs:  # draw again only when an epoch was added
                    from ._shared.curves import figure_png, metrics_figure
                    figure = metrics_figure(table)
                    png = figure_png(figure)
                    import matplotlib.pyplot as plt
                    plt.close(figure)
                    drawn_epochs = len(table)
            view.show(status, tail, png)
            if status.execution_state.is_terminal() or polling.expired():
                return status
            polling.pause()
            status = job.refresh().status
    except KeyboardInterrupt:
        return status


def results_view(write: Optional[Callable[[str], Any]] = None) -> Callable[[Any], None]:
    """What ``Sweep.watch()`` shows a sweep's results with: one display updated in place in a
    notebook; elsewhere the table printed again each time it changes."""
    if in_notebook():
        from IPython.display import HTML, display
        handle: List[Any] = []

        def show_html(results: Any) -> None:
            body = HTML(results._repr_html_())
            if handle:
                handle[0].update(body)
            else:
                handle.append(display(body, display_id=True))
        return show_html
    shown: List[str] = []

    def show_text(results: Any) -> None:
        text = str(results)
        if not shown or shown[-1] != text:
            shown.append(text)
            (write or sys.stdout.write)(text + "\n")  # the stdout of the moment (a notebook's, a test's)
    return show_text
