"""A job's metrics as a table: one row per finished epoch, with every metric's history and the
run's parameters, read from the job's MLflow run or, failing that, its ``metrics.csv``.

Where they come from (the same on every place to run):

- **MLflow** (first): the job's run -- what ``mlflow.log_metric`` / ``log_param`` in the job's
  script logged; the ``training`` package logs there on rank 0. Each metric's history is kept
  whole (:meth:`MetricsTable.history`). The epoch rows are made of the metrics not named
  ``step_*`` (per-step metrics, such as the training package's ``step_loss``, are in the
  histories only): a value logged at ``step=s`` is epoch ``s + 1`` (epochs counted from 0, as
  Keras and ``mlflow.keras.autolog`` log them; the last value logged at a step wins); a metric
  logged several times at one step (a script that passes no ``step``) has its values as epochs
  1, 2, ... in the order they were logged.
- **metrics.csv** (the fallback): a job's script writes ``metrics.csv`` into its output directory,
  ``$AZ_BATCHAI_STDOUTERR_DIR`` on the node -- the directory of ``stdout.txt``, listed by
  ``Job.list_output_files()`` -- in Keras' ``CSVLogger`` format: a header row, ``epoch`` first
  (counted from 0), then a row of numbers per epoch. The table counts epochs from 1.

matplotlib and pandas are imported only by :meth:`MetricsTable.plot` and :meth:`MetricsTable.to_pandas`.
"""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from .._models.errors import InvalidSpecError, import_optional
from .._models.html import html_table
from .._models.mlflow_run import STEP_PREFIX, MetricPoint, RunData
from .._models.names import check_mode
from .deprecation import positional_options

__all__ = ["MetricsTable", "EpochMetrics", "METRICS_FILE", "parse_metrics_csv", "best_of", "text_table", "format_number",
           "json_records", "MetricPoint", "table_from_run", "epoch_values", "SOURCE_MLFLOW", "SOURCE_CSV"]

#: where a table's metrics were read from (:attr:`MetricsTable.source`)
SOURCE_MLFLOW = "mlflow"
SOURCE_CSV = "metrics.csv"

#: the file a job's script writes into its output directory
METRICS_FILE = "metrics.csv"
#: the columns the training package records, in the order tables show them
STANDARD_COLUMNS = ("loss", "accuracy", "val_loss", "val_accuracy", "lr", "images_per_second", "epoch_seconds")


def format_number(value: Optional[float]) -> str:
    """A metric for a table: 4 significant digits, '' when missing."""
    if value is None:
        return ""
    if not math.isfinite(value):  # a loss that overflowed: CSVLogger writes inf
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def json_records(records: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``records`` for JSON, which has no infinity or NaN: such values become null."""
    return [{k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in r.items()} for r in records]


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, numeric: frozenset[int] = frozenset()) -> str:
    """A plain-text table, numbers right-aligned (the CLI's and ``str()``'s view)."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
                         ).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def best_of(values: Sequence[Optional[float]], mode: str) -> Optional[float]:
    present = [v for v in values if v is not None and not math.isnan(v)]
    if not present:
        return None
    return max(present) if mode == "max" else min(present)


@dataclass(frozen=True)
class EpochMetrics:
    """One finished epoch: ``epoch`` (from 1) and its metrics by name (None where not recorded)."""

    epoch: int
    values: Mapping[str, Optional[float]]

    def __getitem__(self, name: str) -> Optional[float]:
        return self.values[name]

    def get(self, name: str, default: Optional[float] = None) -> Optional[float]:
        """The value of metric ``name`` at this epoch, like ``dict.get``.

        :param str name: the metric.
        :param default: what to return when the epoch did not record it.
        :returns: the value, or ``default``."""
        return self.values.get(name, default)


@dataclass(frozen=True)
class MetricsTable:
    """A job's metrics, one row per finished epoch, as last read (see :meth:`Job.metrics`).

    Empty when the job has recorded none yet; :attr:`reason` then says why. ``len()``, iteration
    and :meth:`column` read it; :meth:`to_pandas`, :meth:`to_csv`, :meth:`to_json` and
    :meth:`plot` convert it; in Jupyter it shows as a table.
    """

    job: str
    #: metric names in the order of the file, without ``epoch``
    columns: Tuple[str, ...]
    rows: Tuple[EpochMetrics, ...]
    #: why the table is empty ('' when it is not)
    reason: str = ""
    #: the job's state when the metrics were read
    execution_state: str = field(default="", compare=False)
    #: the run's parameters (what ``mlflow.log_param`` logged; none from a metrics.csv)
    params: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: every metric's values as logged, step metrics included (see :meth:`history`)
    histories: Mapping[str, Tuple[MetricPoint, ...]] = field(default_factory=dict, hash=False)
    #: the id of the job's MLflow run (None where it has none)
    run_id: Optional[str] = None
    #: where the rows were read: ``'mlflow'``, ``'metrics.csv'``, or ``''`` (none recorded)
    source: str = ""

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[EpochMetrics]:
        return iter(self.rows)

    def _check_column(self, name: str) -> str:
        if name not in self.columns:
            raise InvalidSpecError("metric", f"{name!r} is not recorded by job {self.job!r}",
                                   "one of " + (", ".join(repr(c) for c in self.columns) or "(none recorded yet)"))
        return name

    def column(self, name: str) -> List[Optional[float]]:
        """The values of metric ``name``, epoch by epoch.

        :param str name: the metric, e.g. ``val_accuracy``.
        :returns: one value per row, None where the epoch did not record it."""
        self._check_column(name)
        return [row.values.get(name) for row in self.rows]

    @property
    def metric_names(self) -> List[str]:
        """Every metric recorded: the table's columns, then the per-step ones."""
        return [*self.columns, *sorted(n for n in self.histories if n not in self.columns)]

    def history(self, name: str) -> List[MetricPoint]:
        """Every value of metric ``name`` as logged, ordered by step: per step for a per-step
        metric (``step_loss``), per epoch for an epoch metric (from a metrics.csv, step = the
        epoch counted from 0).

        :param str name: the metric, e.g. ``step_loss`` or ``val_accuracy``.
        :returns: a list of :class:`MetricPoint` (``step``, ``value``, ``timestamp``).
        :raises InvalidSpecError: for a metric the job did not record, naming those it did."""
        if name in self.histories:
            return list(self.histories[name])
        if name not in self.columns:
            raise InvalidSpecError("metric", f"{name!r} is not recorded by job {self.job!r}",
                                   "one of " + (", ".join(repr(c) for c in self.metric_names) or "(none recorded yet)"))
        return [MetricPoint(row.epoch - 1, row.values.get(name)) for row in self.rows if row.values.get(name) is not None]

    @property
    def epochs(self) -> List[int]:
        """The rows' epoch numbers, in order."""
        return [row.epoch for row in self.rows]

    def last(self, name: str) -> Optional[float]:
        """The value of ``name`` at the last recorded epoch (None when there is none).

        :param str name: the metric.
        :returns: the value, or None."""
        values = self.column(name)
        return values[-1] if values else None

    @positional_options("mode")
    def best(self, name: str, *, mode: str = "max") -> Optional[float]:
        """The best value of ``name`` over the epochs: the largest (``mode='max'``) or smallest.

        :param str name: the metric.
        :keyword str mode: ``'max'`` or ``'min'``.
        :returns: the value, or None when no epoch recorded it."""
        return best_of(self.column(name), check_mode(mode))

    # -- conversions ------------------------------------------------------------------------------
    def to_records(self) -> List[Dict[str, Optional[float]]]:
        """One dict per epoch: ``{"epoch": 1, "loss": ..., ...}``.

        :returns: a list of dicts, missing values None."""
        return [{"epoch": row.epoch, **{c: row.values.get(c) for c in self.columns}} for row in self.rows]

    def to_json(self) -> str:
        """``{"job", "columns", "rows", "reason", "source", "run_id", "params"}``; missing values are null, and so are infinite
        ones (JSON has no infinity; :meth:`to_csv` and :meth:`to_pandas` keep them).

        :returns: the JSON text."""
        return json.dumps({"job": self.job, "execution_state": self.execution_state,
                           "columns": ["epoch", *self.columns], "rows": json_records(self.to_records()),
                           "reason": self.reason, "source": self.source, "run_id": self.run_id,
                           "params": dict(self.params)})

    def to_csv(self) -> str:
        """The table as CSV: a header ``epoch,<columns>``, then one line per epoch; a missing value is
        an empty field, a float is written as ``repr`` writes it (so it reads back exactly).

        :returns: the CSV text, each line ending in a newline."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["epoch", *self.columns])
        for record in self.to_records():
            writer.writerow(["" if v is None else repr(v) if isinstance(v, float) else v for v in record.values()])
        return out.getvalue()

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` indexed by epoch (pandas: the ``notebook`` extra).

        :returns: a ``pandas.DataFrame``.
        :raises MissingDependencyError: when pandas is not installed."""
        pandas = import_optional("pandas", "MetricsTable.to_pandas()")
        frame = pandas.DataFrame.from_records(self.to_records(), columns=["epoch", *self.columns])
        return frame.set_index("epoch")

    def plot(self, metrics: Optional[Sequence[str]] = None) -> Any:
        """Loss and accuracy per epoch, training and validation, as a matplotlib ``Figure``
        (matplotlib: the ``notebook`` extra). ``metrics`` chooses other columns, one chart each
        (with their ``val_`` twins).

        :param metrics: the columns to chart (default: loss and accuracy).
        :returns: a matplotlib ``Figure``.
        :raises MissingDependencyError: when matplotlib is not installed."""
        from .curves import metrics_figure
        return metrics_figure(self, metrics)

    # -- display ----------------------------------------------------------------------------------
    def _cells(self) -> Tuple[List[str], List[List[str]]]:
        headers = ["epoch", *self.columns]
        rows = [[str(r["epoch"]), *(format_number(r[c]) for c in self.columns)] for r in self.to_records()]
        return headers, rows

    def __str__(self) -> str:
        if not self.rows:
            return f"no metrics for job {self.job}: {self.reason}"
        headers, rows = self._cells()
        return text_table(headers, rows, numeric=frozenset(range(len(headers))))

    def __repr__(self) -> str:
        shown = f"{len(self.rows)} epoch(s)" if self.rows else f"empty: {self.reason}"
        return f"MetricsTable(job={self.job!r}, columns={list(self.columns)!r}, {shown})"

    def _repr_html_(self) -> str:
        if not self.rows:
            import html
            return f"<p>No metrics for job <code>{html.escape(self.job)}</code>: {html.escape(self.reason)}</p>"
        headers, rows = self._cells()
        return html_table(headers, rows, numeric=frozenset(range(len(headers))))


def _number(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None  # CSVLogger writes NA for a metric an epoch did not have
    return None if math.isnan(value) else value


def parse_metrics_csv(text: str, *, job: str, execution_state: str = "") -> MetricsTable:
    """The table of a ``metrics.csv`` as a job's script wrote it (Keras' ``CSVLogger`` format).

    A file being written may end in a partial row: only complete lines (ending in a newline) are
    read. A row whose epoch is not a number is skipped.
    """
    complete = text[: text.rfind("\n") + 1] if "\n" in text else ""
    lines = list(csv.reader(io.StringIO(complete)))
    lines = [line for line in lines if line]
    if not lines:
        return MetricsTable(job, (), (), "its metrics.csv has no complete row yet", execution_state)
    header = [h.strip() for h in lines[0]]
    if "epoch" not in header:
        return MetricsTable(job, (), (), "its metrics.csv has no 'epoch' column (the format is Keras' CSVLogger's)",
                            execution_state)
    at = header.index("epoch")
    recorded = [h for i, h in enumerate(header) if i != at]
    # the training package's columns in a fixed order (CSVLogger sorts them by name), then the rest
    columns = tuple([c for c in STANDARD_COLUMNS if c in recorded] + [c for c in recorded if c not in STANDARD_COLUMNS])
    rows: List[EpochMetrics] = []
    for line in lines[1:]:
        if len(line) != len(header):
            continue
        epoch = _number(line[at])
        if epoch is None:
            continue
        values = {h: _number(v) for i, (h, v) in enumerate(zip(header, line)) if i != at}
        rows.append(EpochMetrics(int(epoch) + 1, values))
    reason = "" if rows else "its metrics.csv has no finished epoch yet"
    return MetricsTable(job, columns, tuple(rows), reason, execution_state, source=SOURCE_CSV if rows else "")


def epoch_values(points: Sequence[MetricPoint]) -> Dict[int, Optional[float]]:
    """A metric's history as values by epoch (from 1): by step, or in the order logged when every
    value was logged at one step (see the module docstring)."""
    if len(points) > 1 and len({p.step for p in points}) == 1:
        return {i + 1: p.value for i, p in enumerate(sorted(points, key=lambda p: p.timestamp))}
    by_epoch: Dict[int, Optional[float]] = {}
    for point in sorted(points, key=lambda p: (p.step, p.timestamp)):
        if point.step >= 0:
            by_epoch[point.step + 1] = point.value
    return by_epoch


def table_from_run(run: RunData, *, job: str, execution_state: str = "") -> MetricsTable:
    """The table of a job's MLflow run (see the module docstring for how rows are made)."""
    recorded = [name for name in run.histories if not name.startswith(STEP_PREFIX)]
    columns = tuple([c for c in STANDARD_COLUMNS if c in recorded] + sorted(c for c in recorded
                                                                          if c not in STANDARD_COLUMNS))
    by_name = {name: epoch_values(run.histories[name]) for name in columns}
    epochs = sorted({epoch for values in by_name.values() for epoch in values})
    rows = tuple(EpochMetrics(epoch, {name: by_name[name].get(epoch) for name in columns}) for epoch in epochs)
    reason = "" if rows else (f"its MLflow run {run.run_id} has only per-step metrics so far" if run.histories
                              else f"its MLflow run {run.run_id} has no metrics yet")
    return MetricsTable(job, columns, rows, reason, execution_state, params=dict(run.params),
                        histories=dict(run.histories), run_id=run.run_id, source=SOURCE_MLFLOW if run.histories else "")
