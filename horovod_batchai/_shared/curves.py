"""Curves of a job's metrics with matplotlib, which is imported only here and only when asked."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence

from .._models.errors import InvalidSpecError, import_optional

if TYPE_CHECKING:
    from .metrics import MetricsTable

__all__ = ["metrics_figure", "figure_png"]

_DEFAULT_CHARTS = ("loss", "accuracy")


def _charts(table: "MetricsTable", metrics: Optional[Sequence[str]]) -> List[str]:
    if metrics is None:
        chosen = [m for m in _DEFAULT_CHARTS if m in table.columns or f"val_{m}" in table.columns]
        if not chosen:  # a script of one's own, with other names: its first two metrics
            chosen = [c for c in table.columns if not c.startswith("val_")][:2]
        return chosen
    if isinstance(metrics, str) or not all(isinstance(m, str) for m in metrics):
        raise InvalidSpecError("metrics", f"{metrics!r} is not a list of metric names", "e.g. ['loss', 'accuracy']")
    for i, name in enumerate(metrics):
        if name not in table.columns and f"val_{name}" not in table.columns:
            raise InvalidSpecError(f"metrics[{i}]", f"{name!r} is not recorded by job {table.job!r}",
                                   "one of " + (", ".join(repr(c) for c in table.columns) or "(none recorded yet)"))
    return list(metrics)


def metrics_figure(table: "MetricsTable", metrics: Optional[Sequence[str]] = None, *, title: str = "") -> Any:
    """A ``Figure`` with one chart per metric, its training and validation values per epoch.

    In Jupyter (matplotlib's inline backend) the figure is closed as soon as it is drawn, so that
    it shows once, as the cell's value, rather than twice.
    """
    import_optional("matplotlib", "plotting metrics")
    import matplotlib
    import matplotlib.pyplot as plt

    charts = _charts(table, metrics)
    figure, axes = plt.subplots(1, max(1, len(charts)), figsize=(5 * max(1, len(charts)), 3.5), squeeze=False)
    for ax, name in zip(axes[0], charts or ["(no metrics)"]):
        for column, label in ((name, "training"), (f"val_{name}", "validation")):
            if column in table.columns:
                points = [(e, v) for e, v in zip(table.epochs, table.column(column)) if v is not None]
                ax.plot([e for e, _ in points], [v for _, v in points], marker="o", label=label)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.grid(True, alpha=0.3)
        if ax.lines:
            ax.legend()
        else:
            ax.text(0.5, 0.5, table.reason or "no values", ha="center", va="center", transform=ax.transAxes, wrap=True)
    figure.suptitle(title or f"job {table.job}")
    figure.tight_layout()
    if "inline" in matplotlib.get_backend().lower():
        plt.close(figure)
    return figure


def figure_png(figure: Any) -> bytes:
    """The figure as PNG bytes."""
    import io
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
