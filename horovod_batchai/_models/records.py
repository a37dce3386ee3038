"""What a backend hands back, in the public classes' own terms: references to a cluster or a job by
name, and records of what the service last described (no I/O)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from .job_spec import HorovodJob
from .mounts import Mount
from .states import ClusterStatus, JobStatus

__all__ = ["ClusterRecord", "ClusterRef", "JobRecord", "JobRef", "SweepRecord", "SweepTrialRecord", "WorkspaceRecord"]


@dataclass(frozen=True)
class ClusterRef:
    resource_group: str
    workspace: str
    name: str


@dataclass(frozen=True)
class JobRef:
    resource_group: str
    workspace: str
    experiment: str
    name: str


@dataclass(frozen=True)
class WorkspaceRecord:
    resource_group: str
    name: str
    location: str


@dataclass(frozen=True)
class ClusterRecord:
    """A cluster as the service last described it."""

    name: str
    id: str
    vm_size: str
    #: the most nodes a job can get (manual target, or auto-scale maximum); None when unknown
    maximum_node_count: Optional[int]
    #: cluster-level mounts, without keys
    mounts: tuple[Mount, ...]
    status: ClusterStatus
    #: the admin user's public key as the service reports it, when it does
    ssh_public_key: Optional[str] = None
    #: the service's own description, for the backend that read it
    raw: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class JobRecord:
    """A job as the service last described it; ``read_spec`` rebuilds the submitted spec."""

    name: str
    id: str
    status: JobStatus
    cluster_id: str
    read_spec: Callable[[], HorovodJob] = field(compare=False, repr=False)
    #: the service's own description, for the backend that read it
    raw: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class SweepTrialRecord:
    """One trial of a sweep the service holds, as it described it."""

    index: int
    #: the trial job's name
    name: str
    #: search-space name -> value
    parameters: Mapping[str, Any]
    #: pending, queued, running, completed, failed, stopped or cancelled
    status: str
    #: why it failed, was stopped or cancelled (None otherwise)
    reason: Optional[str]
    epochs: int
    #: the objective at each recorded epoch
    values: tuple[Optional[float], ...]
    #: the objective at its last recorded epoch
    objective: Optional[float]


@dataclass(frozen=True)
class SweepRecord:
    """A sweep as the service holding it last described it."""

    name: str
    id: str
    #: running, completed, failed or cancelled
    status: str
    reason: Optional[str]
    metric: str
    #: 'max' or 'min'
    mode: str
    #: the trial's arguments, placeholders and all (which option carries which parameter)
    arguments: str
    best: Optional[str]
    trials: tuple[SweepTrialRecord, ...]
    #: the service's own description, for the backend that read it
    raw: Any = field(default=None, compare=False, repr=False)
