"""Experiments, for asyncio: :class:`horovod_batchai.Experiment`'s methods, awaited."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Union, cast

from .._models.constants import DEFAULT_LRO_TIMEOUT
from .._models.job_spec import HorovodJob
from .._models.names import check_batchai_name
from .._models.records import JobRecord, JobRef
from .._shared.experiment import ExperimentBase, require_cluster, require_spec
from .._shared.lro import check_polling, check_timeout
from .._shared.lro_async import AsyncMappedPoller, AsyncPoller, accepted_async
from .._shared.resource_ids import names_from_id, parent_workspace
from ._cluster import GpuCluster
from ._job import Job

if TYPE_CHECKING:
    from .._models.sweep_job import Policy, Seconds
    from .._models.sweep_spec import MedianStopping
    from ._sweep import ClientSweep, Sweep
    from .._places.base import AsyncBackend
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
        return cast(Experiment, await parent_workspace(target, names).get_experiment(names["experiment"]))

    async def refresh(self) -> "Experiment":
        """Check that the experiment still exists; returns the experiment itself."""
        await self._backend.get_experiment(self.workspace.resource_group, self.workspace.name, self.name)
        return self

    async def begin_delete(self, *, continuation_token: Optional[str] = None, polling: bool = True,
                           polling_interval: Optional[float] = None) -> "AsyncPoller[None]":
        """Start deleting the experiment and its jobs; finishes at once when already gone."""
        interval = check_polling(polling, polling_interval)
        poller = await self._backend.begin_delete_experiment(self.workspace.resource_group, self.workspace.name,
                                                             self.name, continuation_token=continuation_token,
                                                             polling_interval=interval)
        return poller if polling else accepted_async(poller, None)

    async def delete(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the experiment and its jobs, awaited for at most ``timeout`` seconds."""
        check_timeout(timeout)
        await (await self.begin_delete()).result(timeout)

    # -- jobs -----------------------------------------------------------------------------------
    async def begin_submit(self, name: str, spec: HorovodJob, *, cluster: Union[GpuCluster, str],
                           continuation_token: Optional[str] = None, polling: bool = True,
                           polling_interval: Optional[float] = None) -> "AsyncPoller[Job]":
        """Start submitting ``spec`` as job ``name`` on ``cluster``; the poller's result is the
        :class:`Job` once the service has accepted it. The checks made before anything is created
        are those of :meth:`horovod_batchai.Experiment.begin_submit`."""
        check_batchai_name(name, "job")
        interval = check_polling(polling, polling_interval)
        job = Job(self, name)
        backend = self._backend
        if continuation_token is not None:
            poller = await backend.begin_submit_job(job._ref, cast(HorovodJob, spec), None,
                                                    continuation_token=continuation_token, polling_interval=interval)
        else:
            spec = require_spec(spec)
            if isinstance(cluster, str):
                cluster = GpuCluster(self.workspace, cluster)
            require_cluster(cluster, GpuCluster)
            if cluster._record is None:
                await cluster.refresh()
            record = cluster._known()
            await backend.check_submission(spec, record)
            poller = await backend.begin_submit_job(job._ref, spec, record, polling_interval=interval)

        def record_of(job_record: JobRecord) -> Job:
            job._record = job_record
            return job

        submitted = AsyncMappedPoller(poller, record_of, action="submitting job", resource=job.id, same_token=True)
        return submitted if polling else accepted_async(submitted, job)

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
        """The experiment's jobs (see :meth:`horovod_batchai.Experiment.list_jobs`)."""
        ws = self.workspace
        return [Job(self, r.name, _record=r)
                for r in await self._backend.list_jobs(ws.resource_group, ws.name, self.name)]


    # -- sweeps ---------------------------------------------------------------------------------
    async def sweep(self, spec: HorovodJob, *, parameters: Mapping[str, Any], cluster: Union[GpuCluster, str],
                    name: Optional[str] = None, sampling: str = "grid", num_trials: Optional[int] = None,
                    seed: Optional[int] = None, max_concurrent_trials: int = 2, metric: str = "val_accuracy",
                    mode: str = "max", early_stopping: Optional[MedianStopping] = None,
                    early_termination: Optional[Policy] = None, sweep_timeout: Optional[Seconds] = None,
                    trial_timeout: Optional[Seconds] = None) -> "Union[Sweep, ClientSweep]":
        """Start a sweep (see :meth:`horovod_batchai.Experiment.sweep`): where the service holds
        sweeps it is created there and this returns at once; elsewhere a :class:`ClientSweep`
        submits its first trials now and the others while it is awaited."""
        from .._shared.sweep_plan import client_sweep_options, plan_held_sweep, plan_sweep
        from ._sweep import ClientSweep, Sweep
        options: Dict[str, Any] = dict(parameters=parameters, sampling=sampling, num_trials=num_trials, seed=seed,
                                       max_concurrent_trials=max_concurrent_trials, metric=metric, mode=mode)
        backend = self._backend
        if not backend.holds_sweeps:
            client_sweep_options(sampling=sampling, early_termination=early_termination,
                                 sweep_timeout=sweep_timeout, trial_timeout=trial_timeout)
            spec, definition = plan_sweep(spec, cluster, GpuCluster, name, early_stopping=early_stopping, **options)
            client_sweep = ClientSweep(self, definition, spec=spec)
            await client_sweep.step()
            return client_sweep
        trial, request = plan_held_sweep(spec, cluster, GpuCluster, name, early_stopping=early_stopping,
                                         early_termination=early_termination, sweep_timeout=sweep_timeout,
                                         trial_timeout=trial_timeout, **options)
        record = (await GpuCluster(self.workspace, request.cluster).refresh())._known()
        await backend.check_submission(trial, record)
        ws = self.workspace
        return Sweep(self, await backend.create_sweep(JobRef(ws.resource_group, ws.name, self.name, request.name),
                                                      request, trial, record))

    async def get_sweep(self, name: str) -> "Union[Sweep, ClientSweep]":
        """The sweep ``name`` (see :meth:`horovod_batchai.Experiment.get_sweep`)."""
        from .._shared.sweep import sweeps_in
        from .._shared.sweep_plan import no_sweep
        from ._sweep import ClientSweep, Sweep
        check_batchai_name(name, "name")
        ws = self.workspace
        if self._backend.holds_sweeps:
            return Sweep(self, await self._backend.get_sweep(JobRef(ws.resource_group, ws.name, self.name, name)))
        found = sweeps_in(await self.list_jobs()).get(name)
        if found is None:
            raise no_sweep(self, name)
        return ClientSweep(self, found[0], jobs=found[1])

    async def list_sweeps(self) -> "List[Union[Sweep, ClientSweep]]":
        """The experiment's sweeps."""
        from .._shared.sweep import sweeps_in
        from ._sweep import ClientSweep, Sweep
        ws = self.workspace
        if self._backend.holds_sweeps:
            return [Sweep(self, r) for r in await self._backend.list_sweeps(ws.resource_group, ws.name, self.name)]
        return [ClientSweep(self, definition, jobs=jobs)
                for definition, jobs in sweeps_in(await self.list_jobs()).values()]
