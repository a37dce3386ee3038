"""Experiments, for asyncio: :class:`horovod_batchai.Experiment`'s methods, awaited."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Union, cast


from .._backends.base import JobRecord
from .._experiment import require_cluster, require_spec
from .._job_spec import HorovodJob
from .._lro import DEFAULT_LRO_TIMEOUT, check_timeout
from .._names import check_batchai_name
from .._resource_ids import names_from_id, parent_workspace, register_parent
from ._cluster import GpuCluster
from ._job import Job
from ._lro import AsyncMappedPoller, AsyncPoller
from .._experiment import ExperimentBase

if TYPE_CHECKING:
    from ._backends import AsyncBackend
    from ._target import Target
    from ._workspace import Workspace

__all__ = ["Experiment"]


class Experiment(ExperimentBase):
    """An experiment in an aio :class:`Workspace` (see :class:`horovod_batchai.Experiment`);
    :meth:`submit` runs a :class:`HorovodJob` in it."""

    workspace: "Workspace"

    @property
    def _backend(self) -> "AsyncBackend":
        return self.workspace.target.backend

    @classmethod
    async def from_id(cls, target: "Target", resource_id: str) -> "Experiment":
        """The existing experiment whose ARM id is ``resource_id`` (as :attr:`id` gives it), fetched;
        an id of another form, or a target that is not an aio :class:`Target`, is an
        :class:`InvalidSpecError` stating the valid one (see :meth:`horovod_batchai.Experiment.from_id`)."""
        names = names_from_id(target, resource_id, "experiment", aio=True)
        return cast(Experiment, await parent_workspace(target, names, aio=True).get_experiment(names["experiment"]))

    async def refresh(self) -> "Experiment":
        """Check that the experiment still exists; returns the experiment itself."""
        await self._backend.get_experiment(self.workspace.resource_group, self.workspace.name, self.name)
        return self

    async def begin_delete(self, *, continuation_token: Optional[str] = None) -> "AsyncPoller[None]":
        """Start deleting the experiment and its jobs; finishes at once when already gone."""
        return await self._backend.begin_delete_experiment(self.workspace.resource_group, self.workspace.name,
                                                           self.name, continuation_token=continuation_token)

    async def delete(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the experiment and its jobs, awaited for at most ``timeout`` seconds."""
        check_timeout(timeout)
        await (await self.begin_delete()).result(timeout)

    # -- jobs -----------------------------------------------------------------------------------
    async def begin_submit(self, name: str, spec: HorovodJob, *, cluster: Union[GpuCluster, str],
                           continuation_token: Optional[str] = None) -> "AsyncPoller[Job]":
        """Start submitting ``spec`` as job ``name`` on ``cluster``; the poller's result is the
        :class:`Job` once the service has accepted it. The checks made before anything is created
        are those of :meth:`horovod_batchai.Experiment.begin_submit`."""
        check_batchai_name(name, "job")
        job = Job(self, name)
        backend = self._backend
        if continuation_token is not None:
            poller = await backend.begin_submit_job(job._ref, cast(HorovodJob, spec), None,
                                                    continuation_token=continuation_token)
        else:
            spec = require_spec(spec)
            if isinstance(cluster, str):
                cluster = GpuCluster(self.workspace, cluster)
            require_cluster(cluster, GpuCluster)
            if cluster._record is None:
                await cluster.refresh()
            record = cluster._known()
            await backend.check_submission(spec, record)
            poller = await backend.begin_submit_job(job._ref, spec, record)

        def accepted(job_record: JobRecord) -> Job:
            job._record = job_record
            return job

        return AsyncMappedPoller(poller, accepted, action="submitting job", resource=job.id, same_token=True)

    async def submit(self, name: str, spec: HorovodJob, *, cluster: Union[GpuCluster, str],
                     timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> Job:
        """:meth:`begin_submit`, awaited for at most ``timeout`` seconds for the service to accept
        the job; :meth:`Job.wait` then waits for it to end."""
        check_timeout(timeout)
        return await (await self.begin_submit(name, spec, cluster=cluster)).result(timeout)

    async def get_job(self, name: str) -> Job:
        """The existing job; :class:`NotFoundError` when there is none."""
        return await Job(self, name).refresh()

    async def list_jobs(self) -> List[Job]:
        ws = self.workspace
        return [Job(self, r.name, _record=r)
                for r in await self._backend.list_jobs(ws.resource_group, ws.name, self.name)]


register_parent("experiment", Experiment, aio=True)
