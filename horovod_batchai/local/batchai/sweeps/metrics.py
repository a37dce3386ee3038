"""What a trial recorded: the ``metrics.csv`` its script writes into its ``$AZ_BATCHAI_STDOUTERR_DIR``.

The format is the one every job uses (``training/metrics.py`` writes it, the SDK reads it): Keras'
``CSVLogger``, a header row with ``epoch`` among the columns, then one row of numbers per finished
epoch. Read the same way here -- only complete lines, rows whose epoch is not a number skipped,
``NA`` or anything not a number as no value -- without importing the SDK.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ...core.context import ServiceContext
from ...files.store import share_path
from ...runner.output_dirs import STDOUTERR, output_dir

__all__ = ["METRICS_FILE", "Recorded", "parse_metrics", "read_trial_metrics"]

METRICS_FILE = "metrics.csv"


@dataclass(frozen=True)
class Recorded:
    """A trial's metrics: the names it records, and each metric's values epoch by epoch."""

    #: the metric names, in the file's order, without ``epoch`` (empty: nothing recorded yet).
    columns: tuple[str, ...] = ()
    #: one dict per finished epoch, in order.
    rows: tuple[dict[str, Optional[float]], ...] = ()

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
    return Recorded(tuple(h for i, h in enumerate(header) if i != at), tuple(rows))


def read_trial_metrics(context: ServiceContext, job_id: str) -> Recorded:
    """What the trial's job has recorded so far (nothing, before its run recorded where its output goes)."""
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
