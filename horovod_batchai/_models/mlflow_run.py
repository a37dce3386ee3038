"""What a job's MLflow run holds, as the SDK reads it through MLflow's REST API (no I/O here):
its metric histories, its parameters, its artifacts.

``MetricPoint`` is one value of a metric's history (MLflow's ``Metric`` message: key, value,
timestamp, step); ``RunData`` a run with every metric's history and its params (what
``runs/get`` and ``metrics/get-history`` answer); ``Artifact`` one entry of ``artifacts/list``
(MLflow's ``FileInfo``; on Azure ML made from the artifact service's listing).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Tuple

__all__ = ["MetricPoint", "RunData", "Artifact", "STEP_PREFIX", "RUN_ACTIVE"]

#: metrics named so are per optimizer step (the training package's ``step_loss``,
#: ``step_accuracy``): in a table's histories only, never among its epoch rows
STEP_PREFIX = "step_"
#: MLflow run statuses of a run that may still log (``RUNNING``, ``SCHEDULED``)
RUN_ACTIVE = frozenset({"RUNNING", "SCHEDULED"})


@dataclass(frozen=True)
class MetricPoint:
    """One logged value: ``step`` (MLflow's; the epoch counted from 0 for epoch metrics),
    ``value`` (None for NaN), ``timestamp`` (ms since the epoch; 0 when not known)."""

    step: int
    value: Optional[float]
    timestamp: int = 0


@dataclass(frozen=True)
class RunData:
    """An MLflow run as read: ids, status, its params, and each metric's full history."""

    run_id: str
    experiment_id: str
    status: str
    artifact_uri: str
    params: Mapping[str, str] = field(default_factory=dict)
    #: metric name -> its values in the order (step, timestamp)
    histories: Mapping[str, Tuple[MetricPoint, ...]] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        """Whether the run may still log (its job runs)."""
        return self.status in RUN_ACTIVE


@dataclass(frozen=True)
class Artifact:
    """A file or directory among a run's artifacts: ``path`` relative to the run's artifact root,
    ``size`` in bytes (None for a directory, and where the service gives none: Azure ML's artifact
    service lists no sizes)."""

    path: str
    is_directory: bool
    size: Optional[int] = None

    @property
    def name(self) -> str:
        """The last part of :attr:`path`."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]
