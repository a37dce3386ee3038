"""What a trial recorded: the metrics of its job's MLflow run when it has any, else the
``metrics.csv`` its script writes into its ``$AZ_BATCHAI_STDOUTERR_DIR``.

The run (``tracking/runs.py`` makes one per job where tracking is on) is read from the tracking
server through its REST API (``runs/get``, then ``metrics/get-history`` per metric), so a script
that logs only with ``mlflow.log_metric`` drives a sweep. Its epochs are made as the SDK makes a
table's rows (``horovod_batchai/_shared/metrics.py``, not imported here): metrics named
``step_*`` are per step and left out; a value logged at ``step=s`` is epoch ``s + 1`` (the last
logged at a step wins); a metric logged several times at one step (no ``step`` given) has its
values as epochs 1, 2, ... in the order logged. Until the run has ended, more metrics may come:
:attr:`Recorded.final` is False, so that the driver does not yet take a missing objective for a
misspelt one.

The CSV format is the one every job uses (``training/metrics.py`` writes it, the SDK reads it):
Keras' ``CSVLogger``, a header row with ``epoch`` among the columns, then one row of numbers per
finished epoch. Read the same way here -- only complete lines, rows whose epoch is not a number
skipped, ``NA`` or anything not a number as no value -- without importing the SDK.
"""
from __future__ import annotations

import csv
import io
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlencode

from ...core.context import ServiceContext
from ...files.store import share_path
from ...runner.output_dirs import STDOUTERR, output_dir
from ...tracking.runs import job_runs
from ...tracking.server import TrackingServerError

__all__ = ["METRICS_FILE", "Recorded", "parse_metrics", "read_trial_metrics", "recorded_from_run", "STEP_PREFIX"]

log = logging.getLogger(__name__)

#: per-step metrics (the training package's step_loss, step_accuracy): not epochs
STEP_PREFIX = "step_"
_ACTIVE = ("RUNNING", "SCHEDULED")

METRICS_FILE = "metrics.csv"


@dataclass(frozen=True)
class Recorded:
    """A trial's metrics: the names it records, and each metric's values epoch by epoch."""

    #: the metric names, in the file's order, without ``epoch`` (empty: nothing recorded yet).
    columns: tuple[str, ...] = ()
    #: one dict per finished epoch, in order.
    rows: tuple[dict[str, Optional[float]], ...] = ()
    #: where they were read: "mlflow" or "metrics.csv" ("" for nothing)
    source: str = ""
    #: whether ``columns`` are all the trial will record (a CSV's header; a run that has ended)
    final: bool = True

    def values(self, name: str) -> list[Optional[float]]:
        return [row.get(name) for row in self.rows]


def _number(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def parse_metrics(text: str) -> Recorded:
    complete = text[: text.rfind("\n") + 1]
    lines = [line for line in csv.reader(io.StringIO(complete)) if line]
    if not lines:
        return Recorded()
    header = [h.strip() for h in lines[0]]
    if "epoch" not in header:
        return Recorded()
    at = header.index("epoch")
    rows = []
    for line in lines[1:]:
        if len(line) != len(header) or _number(line[at]) is None:
            continue
        rows.append({h: _number(v) for i, (h, v) in enumerate(zip(header, line)) if i != at})
    return Recorded(tuple(h for i, h in enumerate(header) if i != at), tuple(rows), source="metrics.csv")


def _epoch_values(points: list[tuple[int, int, Optional[float]]]) -> dict[int, Optional[float]]:
    """A metric's (step, timestamp, value) points as values by epoch (see the module docstring)."""
    if len(points) > 1 and len({step for step, _, _ in points}) == 1:
        return {i + 1: value for i, (_, _, value) in enumerate(sorted(points, key=lambda p: p[1]))}
    return {step + 1: value for step, _, value in sorted(points) if step >= 0}


def recorded_from_run(status: str, histories: dict[str, list[tuple[int, int, Optional[float]]]]) -> Recorded:
    """What a run recorded: its metrics' histories (name -> (step, timestamp, value) points)."""
    columns = tuple(sorted(name for name in histories if not name.startswith(STEP_PREFIX)))
    by_name = {name: _epoch_values(histories[name]) for name in columns}
    epochs = sorted({epoch for values in by_name.values() for epoch in values})
    rows = tuple({name: by_name[name].get(epoch) for name in columns} for epoch in epochs)
    return Recorded(columns if rows else (), rows, source="mlflow", final=status not in _ACTIVE)


def _value(raw: Any) -> Optional[float]:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _run_metrics(context: ServiceContext, job_id: str) -> Optional[Recorded]:
    """What the job's MLflow run recorded; None where it has no run or the server cannot say."""
    runs = job_runs(context)
    run_id = runs.run_id(job_id) if runs is not None else None
    if runs is None or run_id is None:
        return None
    try:
        run = runs.endpoint.call("GET", "/api/2.0/mlflow/runs/get", query=urlencode({"run_id": run_id}))["run"]
        histories: dict[str, list[tuple[int, int, Optional[float]]]] = {}
        for key in sorted({str(m["key"]) for m in (run.get("data") or {}).get("metrics") or []}):
            page = runs.endpoint.call("GET", "/api/2.0/mlflow/metrics/get-history",
                                      query=urlencode({"run_id": run_id, "metric_key": key}))
            histories[key] = [(int(m.get("step") or 0), int(m.get("timestamp") or 0), _value(m.get("value")))
                              for m in page.get("metrics") or []]
    except (TrackingServerError, KeyError, TypeError, ValueError) as exc:
        log.debug("the MLflow run of %s could not be read: %s", job_id, exc)
        return None
    return recorded_from_run(str((run.get("info") or {}).get("status") or ""), histories)


def read_trial_metrics(context: ServiceContext, job_id: str) -> Recorded:
    """What the trial's job has recorded so far: its MLflow run's metrics when it logged any, else
    its metrics.csv (nothing, before its run recorded where its output goes)."""
    from_run = _run_metrics(context, job_id)
    if from_run is not None and from_run.rows:
        return from_run
    from_csv = _csv_metrics(context, job_id)
    if from_run is not None and not from_csv.rows:
        return from_run  # its run's step metrics, or nothing yet: not final while the run goes on
    return from_csv


def _csv_metrics(context: ServiceContext, job_id: str) -> Recorded:
    where = output_dir(context, job_id, STDOUTERR)
    if where is None:
        return Recorded()
    folder = Path(where.local_path)
    place = where.storage
    try:
        # The share or the container's mirror itself, not the job's view of it: the job's mounts go when it ends.
        if place is not None and place.blob and context.blob is not None:
            folder = Path(context.blob.mounts_root, place.account, place.share, "files", *place.path.split("/"))
        elif place is not None:
            share = share_path(context, place.account, place.share)
            if share is None:  # the share is gone
                return Recorded()
            folder = share.joinpath(*place.path.split("/"))
        text = (folder / METRICS_FILE).read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return Recorded()
    return parse_metrics(text)
