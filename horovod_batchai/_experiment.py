"""Batch AI experiments: a named group of jobs in a workspace, and job submission."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, List, Optional, Union

from azure.core.exceptions import ResourceNotFoundError

from ._errors import InvalidSpecError, azure_errors
from ._job_spec import HorovodJob
from ._names import check_batchai_name

if TYPE_CHECKING:
    from azure.mgmt.batchai import models

    from ._cluster import GpuCluster
    from ._job import Job
    from ._workspace import Workspace

__all__ = ["Experiment"]

log = logging.getLogger(__name__)


class Experiment:
    """An experiment in a :class:`Workspace`; :meth:`submit` runs a :class:`HorovodJob` in it."""

    def __init__(self, workspace: "Workspace", name: str, *, _model: Optional["models.Experiment"] = None) -> None:
        self.workspace = workspace
        self.name = check_batchai_name(name, "experiment")
        self._model = _model

    def __repr__(self) -> str:
        return f"Experiment(workspace={self.workspace.name!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Experiment) and self.id.lower() == other.id.lower()

    def __hash__(self) -> int:
        return hash(self.id.lower())

    @property
    def id(self) -> str:
        return f"{self.workspace.id}/experiments/{self.name}"

    @property
    def _args(self) -> tuple[str, str, str]:
        return self.workspace.resource_group, self.workspace.name, self.name

    @classmethod
    def create(cls, workspace: "Workspace", name: str) -> "Experiment":
        """The experiment ``name`` (get-or-create)."""
        experiment = cls(workspace, name)
        client = workspace.target.batchai()
        with azure_errors("creating experiment", experiment.id):
            try:
                experiment._model = client.experiments.get(*experiment._args)
                log.info("experiment %s exists; using it", experiment.id)
            except ResourceNotFoundError:
                log.info("creating experiment %s", experiment.id)
                experiment._model = client.experiments.begin_create(*experiment._args).result()
        return experiment

    @classmethod
    def get(cls, workspace: "Workspace", name: str) -> "Experiment":
        experiment = cls(workspace, name)
        with azure_errors("reading experiment", experiment.id):
            experiment._model = workspace.target.batchai().experiments.get(*experiment._args)
        return experiment

    @classmethod
    def list(cls, workspace: "Workspace") -> List["Experiment"]:
        with azure_errors("listing experiments in", workspace.id):
            items: list[Any] = list(workspace.target.batchai().experiments.list_by_workspace(workspace.resource_group,
                                                                                  workspace.name))
        return [cls(workspace, m.name or "", _model=m) for m in items]

    def delete(self) -> None:
        """Delete the experiment and its jobs; succeeds when already gone."""
        with azure_errors("deleting experiment", self.id):
            try:
                log.info("deleting experiment %s", self.id)
                self.workspace.target.batchai().experiments.begin_delete(*self._args).result()
            except ResourceNotFoundError:
                log.debug("experiment %s was already gone", self.id)

    # -- jobs -----------------------------------------------------------------------------------
    def submit(self, name: str, spec: HorovodJob, *, cluster: Union["GpuCluster", str]) -> "Job":
        """Submit ``spec`` as job ``name`` on ``cluster`` (a :class:`GpuCluster` or its name).

        Checked before anything is created: the name, that every storage placeholder is filled
        and every mount has its key, that the script and log paths lie in a mount of the job or
        the cluster, that the cluster can ever give the job ``node_count`` nodes, and that each
        mounted file share exists. Submitting the same name again returns the existing job.
        """
        from ._job import Job
        return Job.submit(self, name, spec, cluster=cluster)

    def get_job(self, name: str) -> "Job":
        from ._job import Job
        return Job.get(self, name)

    def list_jobs(self) -> List["Job"]:
        from ._job import Job
        return Job.list(self)


def require_spec(spec: object) -> HorovodJob:
    if not isinstance(spec, HorovodJob):
        raise InvalidSpecError("spec", f"{type(spec).__name__} is not a HorovodJob",
                               "HorovodJob(...) or HorovodJob.from_file('job.json', storage=share)")
    return spec
