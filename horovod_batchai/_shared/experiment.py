"""What an experiment is, and the checks of a submission or a sweep, without a request: the sync and
the aio Experiment share it."""
from __future__ import annotations

from typing import Any

from .._models.errors import InvalidSpecError
from .._models.job_spec import HorovodJob
from .._models.names import check_batchai_name

__all__ = ["ExperimentBase", "require_cluster", "require_spec"]


def require_spec(spec: object) -> HorovodJob:
    if not isinstance(spec, HorovodJob):
        raise InvalidSpecError("spec", f"{type(spec).__name__} is not a HorovodJob",
                               "HorovodJob(...) or HorovodJob.from_file('job.json', storage=share)")
    return spec


def require_cluster(cluster: object, kind: type) -> None:
    if not isinstance(cluster, kind):
        raise InvalidSpecError("cluster", f"{type(cluster).__name__} is not a cluster", "a GpuCluster or its name")


class ExperimentBase:
    """What an experiment is, with no request: the sync and the aio Experiment share it."""

    @property
    def _backend(self) -> Any:
        raise NotImplementedError  # the sync class's backend, or the aio class's

    def __init__(self, workspace: Any, name: str) -> None:
        self.workspace = workspace
        self.name = check_batchai_name(name, "experiment")

    def __repr__(self) -> str:
        return f"Experiment(workspace={self.workspace.name!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.id.lower() == other.id.lower()

    def __hash__(self) -> int:
        return hash(self.id.lower())

    @property
    def id(self) -> str:
        """The experiment's ARM id (what :meth:`from_id` takes)."""
        return self._backend.experiment_id(self.workspace.resource_group, self.workspace.name, self.name)
