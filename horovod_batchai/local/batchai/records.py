"""What the Batch AI provider and its handlers hand each other: stored resources as typed records
(see ``core/records.py``).

A :class:`Slot` is where a child resource is or would be created: the parent it was looked up
under, its id and name, and what is stored there now. A handler that checks the scope before it
parses a body gets the slot once and hands it to the provider, which does not look again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Generic, Optional, TypeVar

from ..core.records import Resource
from ..runner.states import ExecutionState
from .errors import ClusterNotFound, ExperimentNotFound, FileServerNotFound, JobNotFound, NotFound, WorkspaceNotFound

__all__ = ["BatchAIResource", "Workspace", "Experiment", "Cluster", "Job", "FileServer", "Scope", "Slot"]


@dataclass(frozen=True, repr=False)
class BatchAIResource(Resource):
    """A stored Batch AI resource."""

    #: how requests name the kind ("The specified cluster x is not found").
    what: ClassVar[str] = "resource"
    #: the error a missing one is answered with.
    missing: ClassVar[type[NotFound]] = NotFound


@dataclass(frozen=True, repr=False)
class Workspace(BatchAIResource):
    what = "workspace"
    missing = WorkspaceNotFound

    @property
    def location(self) -> str:
        return str(self.doc["location"])


@dataclass(frozen=True, repr=False)
class Experiment(BatchAIResource):
    what = "experiment"
    missing = ExperimentNotFound


@dataclass(frozen=True, repr=False)
class Cluster(BatchAIResource):
    what = "cluster"
    missing = ClusterNotFound

    @property
    def provisioning_state(self) -> Optional[str]:
        return self.properties.get("provisioningState")


@dataclass(frozen=True, repr=False)
class Job(BatchAIResource):
    what = "job"
    missing = JobNotFound

    @property
    def execution_state(self) -> Optional[str]:
        return self.properties.get("executionState")

    @property
    def ended(self) -> bool:
        """Whether the job has reached a terminal execution state."""
        return self.execution_state in _TERMINAL

    @property
    def started(self) -> bool:
        return bool((self.properties.get("executionInfo") or {}).get("startTime"))

    @property
    def cluster_id(self) -> str:
        return str(self.properties["cluster"]["id"])


@dataclass(frozen=True, repr=False)
class FileServer(BatchAIResource):
    what = "file server"
    missing = FileServerNotFound


_TERMINAL = frozenset(state.value for state in ExecutionState if state.is_terminal())

R = TypeVar("R", bound=BatchAIResource)
P = TypeVar("P", bound=Resource)


@dataclass(frozen=True)
class Scope:
    """The subscription, resource group and workspace a request names, as it spelt them."""

    subscription: str
    resource_group: str
    workspace: str


@dataclass(frozen=True)
class Slot(Generic[P, R]):
    """Where a resource of ``kind`` is, or would be created, under ``parent``."""

    kind: type[R]
    parent: P
    id: str
    #: the name as the request spelt it.
    name: str
    #: what is stored there now; None when nothing is.
    existing: Optional[R]
    #: the request's scope (a new job's output path segment is made of it).
    scope: Scope
    #: the region of the workspace it is in (operation URLs name it); the service's own for a
    #: workspace not created yet.
    region: str

    def require(self) -> R:
        """The stored resource; its kind's not-found error when there is none."""
        if self.existing is None:
            raise self.kind.missing.named(self.kind.what, self.name)
        return self.existing
