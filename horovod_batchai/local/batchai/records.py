"""What the Batch AI provider and its handlers hand each other: stored resources as typed records.

A record wraps one resource's document exactly as the store keeps it and the service answers it
(``doc``: key order and all, so answers stay byte for byte what they were) and reads the
properties the service decides on by name. Records are frozen: the provider changes a resource
only through the store (``Store.update``), which gives back a new document and so a new record.

A :class:`Slot` is where a child resource is or would be created: the parent it was looked up
under, its id and name, and what is stored there now. A handler that checks the scope before it
parses a body gets the slot once and hands it to the provider, which does not look again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Optional, TypeVar

from ..runner.states import ExecutionState
from .errors import ClusterNotFound, ExperimentNotFound, FileServerNotFound, JobNotFound, NotFound, WorkspaceNotFound

__all__ = ["Resource", "ResourceGroup", "Workspace", "Experiment", "Cluster", "Job", "FileServer", "Scope", "Slot"]


@dataclass(frozen=True)
class Resource:
    """A stored resource: its document, as answered."""

    #: how requests name the kind ("The specified cluster x is not found").
    what: ClassVar[str] = "resource"
    #: the error a missing one is answered with.
    missing: ClassVar[type[NotFound]] = NotFound

    doc: dict[str, Any] = field(repr=False)

    @property
    def id(self) -> str:
        return str(self.doc["id"])

    @property
    def name(self) -> str:
        return str(self.doc["name"])

    @property
    def properties(self) -> dict[str, Any]:
        return self.doc.get("properties") or {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"


@dataclass(frozen=True, repr=False)
class ResourceGroup(Resource):
    what = "resource group"

    @property
    def location(self) -> str:
        return str(self.doc["location"])


@dataclass(frozen=True, repr=False)
class Workspace(Resource):
    what = "workspace"
    missing = WorkspaceNotFound

    @property
    def location(self) -> str:
        return str(self.doc["location"])


@dataclass(frozen=True, repr=False)
class Experiment(Resource):
    what = "experiment"
    missing = ExperimentNotFound


@dataclass(frozen=True, repr=False)
class Cluster(Resource):
    what = "cluster"
    missing = ClusterNotFound

    @property
    def provisioning_state(self) -> Optional[str]:
        return self.properties.get("provisioningState")


@dataclass(frozen=True, repr=False)
class Job(Resource):
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
class FileServer(Resource):
    what = "file server"
    missing = FileServerNotFound


_TERMINAL = frozenset(state.value for state in ExecutionState if state.is_terminal())

R = TypeVar("R", bound=Resource)
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
