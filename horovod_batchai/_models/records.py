"""What a backend hands back, in the public classes' own terms: references to a cluster or a job by
name, and records of what the service last described (no I/O)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .job_spec import HorovodJob
from .mounts import Mount
from .states import ClusterStatus, JobStatus

__all__ = ["ClusterRecord", "ClusterRef", "JobRecord", "JobRef", "WorkspaceRecord"]


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
