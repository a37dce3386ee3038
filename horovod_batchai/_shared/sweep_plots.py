"""Charts that compare a sweep's trials, with matplotlib (the ``notebook`` extra), imported only
here and only when asked: every trial's curve of one metric on one chart, and parallel
coordinates of the parameters and a metric's final value.

The functions take the rows they draw, not the sweep, so any table of trials can be drawn.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from .._models.errors import InvalidSpecError, import_optional

__all__ = ["TrialCurve", "TrialPoint", "check_metric", "curves_figure", "parallel_coordinates_figure"]


@dataclass(frozen=True)
class TrialCurve:
    """One trial's values of a metric, epoch by epoch (what :func:`curves_figure` draws)."""

    trial: str
    epochs: Sequence[int]
    values: Sequence[Optional[float]]


@dataclass(frozen=True)
class TrialPoint:
    """One trial's parameters and a value (what :func:`parallel_coordinates_figure` draws)."""

    trial: str
    parameters: Mapping[str, Any]
    value: Optional[float]


def check_metric(metric: Any, known: Sequence[str]) -> str:
    """``metric`` checked to be a name (InvalidSpecError before anything is drawn)."""
    if not isinstance(metric, str) or not metric:
        raise InvalidSpecError("metric", f"{metric!r} is not a metric name",
                               "one of " + (", ".join(repr(m) for m in known) or "the metrics the trials record"))
    return metric


def _pyplot(feature: str) -> Any:
    import_optional("matplotlib", feature)
    import matplotlib.pyplot as plt
    return plt


def _finish(figure: Any) -> Any:
    """In Jupyter (the inline backend) the figure is closed once drawn, so it shows once, as the
    cell's value, not twice (as :func:`horovod_batchai._shared.curves.metrics_figure` does)."""
    import matplotlib
    import matplotlib.pyplot as plt
    figure.tight_layout()
    if "inline" in matplotlib.get_backend().lower():
        plt.close(figure)
    return figure


def _nothing(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


def curves_figure(sweep: str, metric: str, curves: Sequence[TrialCurve], *, best: Optional[str] = None) -> Any:
    """A ``Figure`` with every trial's curve of ``metric`` per epoch on one chart, the ``best``
    trial's drawn thicker; a trial that has not recorded the metric is left out, and the chart
    says when none has.

    :raises MissingDependencyError: when matplotlib is not installed."""
    plt = _pyplot("SweepResults.plot()")
    figure, ax = plt.subplots(figsize=(8, 4.5))
    drawn = 0
    for curve in curves:
        points = [(e, v) for e, v in zip(curve.epochs, curve.values) if v is not None and not math.isnan(v)]
        if not points:
            continue
        chosen = curve.trial == best
        ax.plot([e for e, _ in points], [v for _, v in points], marker="o", markersize=3,
                linewidth=2.8 if chosen else 1.2, zorder=3 if chosen else 2,
                label=f"{curve.trial} (best)" if chosen else curve.trial)
        drawn += 1
    ax.set_title(f"sweep {sweep}: {metric} per epoch, {drawn} of {len(curves)} trial(s)")
    if drawn:
        from matplotlib.ticker import MaxNLocator
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole numbers
        ax.set_xlabel("epoch")
        ax.set_ylabel(metric)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", loc="best", ncol=2 if drawn > 8 else 1)
    else:
        _nothing(ax, f"no trial has recorded {metric!r} yet")
    return _finish(figure)


def _axis(values: Sequence[Any]) -> Tuple[List[float], List[float], List[str]]:
    """Where each value goes on a vertical axis from 0 to 1, and the axis's ticks and their labels:
    numbers in proportion (on a log scale when positive and spanning 100x or more), anything else
    as evenly spaced categories in the order first seen."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in present):
        low, high = min(present), max(present)
        log = low > 0 and high / low >= 100
        scale = (lambda x: math.log10(x)) if log else (lambda x: float(x))
        span = scale(high) - scale(low)

        def place(v: Any) -> float:
            return 0.5 if span == 0 else (scale(v) - scale(low)) / span
        ticks = sorted(set(present))
        if len(ticks) > 5:
            ticks = [low, high]
        return [math.nan if v is None else place(v) for v in values], [place(t) for t in ticks], \
            [f"{t:.3g}" for t in ticks]
    categories: List[str] = []
    for v in present:
        if str(v) not in categories:
            categories.append(str(v))
    step = 1 / (len(categories) - 1) if len(categories) > 1 else 0.0

    def spot(v: Any) -> float:
        return 0.5 if len(categories) == 1 else categories.index(str(v)) * step
    return ([math.nan if v is None else spot(v) for v in values], [spot(c) for c in categories], categories)


def parallel_coordinates_figure(sweep: str, parameters: Sequence[str], metric: str, mode: str,
                                points: Sequence[TrialPoint]) -> Any:
    """A ``Figure`` of parallel coordinates: an axis per parameter and a last one for ``metric``,
    a line per trial that recorded it, coloured by its value (``mode``: which end is best, drawn
    brightest and on top). Numeric parameters are in proportion (log scale across 100x or more),
    others are categories.

    :raises MissingDependencyError: when matplotlib is not installed."""
    plt = _pyplot("SweepResults.plot_parallel_coordinates()")
    scored = [p for p in points if p.value is not None and not math.isnan(p.value)]
    names = [*parameters, metric]
    figure, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(names)), 4.5))
    ax.set_title(f"sweep {sweep}: parameters and final {metric}, {len(scored)} of {len(points)} trial(s)")
    if not scored:
        _nothing(ax, f"no trial has recorded {metric!r} yet")
        return _finish(figure)
    columns = [_axis([p.parameters.get(name) for p in scored]) for name in parameters]
    columns.append(_axis([p.value for p in scored]))
    values = [p.value for p in scored]
    low, high = min(values), max(values)  # type: ignore[type-var]
    colours = plt.get_cmap("viridis")

    def shade(v: float) -> float:  # 1 is the best end, whatever the mode
        share = 0.5 if high == low else (v - low) / (high - low)  # type: ignore[operator]
        return share if mode == "max" else 1 - share
    order = sorted(range(len(scored)), key=lambda i: shade(values[i]))  # type: ignore[arg-type]
    for i in order:
        ys = [column[0][i] for column in columns]
        ax.plot(range(len(names)), ys, color=colours(shade(values[i])), linewidth=1.6,  # type: ignore[arg-type]
                alpha=0.9, marker="o", markersize=3, label=scored[i].trial)
    for x, (name, (_, ticks, labels)) in enumerate(zip(names, columns)):
        ax.axvline(x, color="0.3", linewidth=0.8, label=f"_axis {name}")  # "_": not a trial
        for y, label in zip(ticks, labels):
            ax.text(x + 0.03, y, label, fontsize="x-small", va="center", ha="left", color="0.2")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_yticks([])
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlim(-0.2, len(names) - 0.6)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    mappable = plt.cm.ScalarMappable(cmap=colours if mode == "max" else colours.reversed(),
                                     norm=plt.Normalize(low, high))
    figure.colorbar(mappable, ax=ax, label=f"final {metric} ({mode} is best)", pad=0.02)
    return _finish(figure)
