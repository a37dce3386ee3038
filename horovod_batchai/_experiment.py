"""Experiments: a named group of jobs in a workspace, and the one place jobs are submitted."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Union, cast

from azure.core.polling import LROPoller

from ._cluster import GpuCluster
from ._job import Job
from ._models.constants import DEFAULT_LRO_TIMEOUT
from ._models.job_spec import HorovodJob
from ._models.names import check_batchai_name
from ._models.records import JobRecord
from ._models.sweep_spec import MedianStopping
from ._shared.deprecation import deprecated
from ._shared.experiment import ExperimentBase, no_sweep, plan_sweep, require_cluster, require_spec
from ._shared.lro import MappedPoller, accepted, check_polling, check_timeout
from ._shared.resource_ids import names_from_id, parent_workspace
from ._shared.sweep import sweeps_in
from ._sweep import Sweep

if TYPE_CHECKING:
    from ._places.base import Backend
    from ._target import Target
    from ._workspace import Workspace

__all__ = ["Experiment"]

log = logging.getLogger(__name__)


class Experiment(ExperimentBase):
    """An experiment in a :class:`Workspace` (see :meth:`Workspace.create_experiment`);
    :meth:`submit` runs a :class:`HorovodJob` in it, and its jobs are got and listed from it.
    It may be shared between threads, and pickles as a reference (see :class:`Workspace`)."""

    workspace: "Workspace"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Experiment, (self.workspace, self.name))

    @classmethod
    def from_id(cls, target: "Target", resource_id: str) -> "Experiment":
        """The existing experiment whose ARM id is ``resource_id`` (as :attr:`id` gives it); an
        id of another form is an :class:`InvalidSpecError` stating the valid one.

        :param Target target: where the experiment is.
        :param str resource_id: the experiment's ARM id.
        :returns: the :class:`Experiment`.
        :raises InvalidSpecError: for an id of another form."""
        names = names_from_id(target, resource_id, "experiment")
        return parent_workspace(target, names).get_experiment(names["experiment"])

    @property
    def _backend(self) -> "Backend":
        return self.workspace.target.backend

    @classmethod
    def create(cls, workspace: "Workspace", name: str, *,
               timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> "Experiment":
        """Deprecated: use :meth:`Workspace.create_experiment`.

        :param Workspace workspace: the workspace.
        :param str name: the experiment's name.
        :keyword float timeout: seconds to wait; None: no limit.
        :returns: the :class:`Experiment`."""
        deprecated("Experiment.create(workspace, name)", "workspace.create_experiment(name)")
        return workspace.create_experiment(name, timeout=timeout)

    @classmethod
    def get(cls, workspace: "Workspace", name: str) -> "Experiment":
        """Deprecated: use :meth:`Workspace.get_experiment`.

        :param Workspace workspace: the workspace.
        :param str name: the experiment's name.
        :returns: the :class:`Experiment`."""
        deprecated("Experiment.get(workspace, name)", "workspace.get_experiment(name)")
        return workspace.get_experiment(name)

    @classmethod
    def list(cls, workspace: "Workspace") -> List["Experiment"]:
        """Deprecated: use :meth:`Workspace.list_experiments`.

        :param Workspace workspace: the workspace.
        :returns: the experiments."""
        deprecated("Experiment.list(workspace)", "workspace.list_experiments()")
        return workspace.list_experiments()

    def refresh(self) -> "Experiment":
        """Check that the experiment still exists; returns the experiment itself.

        :returns: the experiment itself.
        :raises NotFoundError: when the experiment is gone."""
        self._backend.get_experiment(self.workspace.resource_group, self.workspace.name, self.name)
        return self

    def begin_delete(self, *, continuation_token: Optional[str] = None, polling: bool = True,
                     polling_interval: Optional[float] = None) -> "LROPoller[None]":
        """Start deleting the experiment and its jobs; finishes at once when already gone.

        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the request
            (its result is None); True follows the operation to its end.
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is None.
        :raises InvalidSpecError: for a bad option or a token of another operation."""
        interval = check_polling(polling, polling_interval)
        poller = self._backend.begin_delete_experiment(self.workspace.resource_group, self.workspace.name, self.name,
                                                       continuation_token=continuation_token,
                                                       polling_interval=interval)
        return poller if polling else accepted(poller, None)

    def delete(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the experiment and its jobs, waiting at most ``timeout`` seconds (None: no
        limit); succeeds when already gone.

        :keyword float timeout: seconds to wait; None: no limit.
        :raises WaitTimeoutError: when ``timeout`` is spent (the deletion goes on)."""
        check_timeout(timeout)
        self.begin_delete().result(timeout)

    # -- jobs -----------------------------------------------------------------------------------
    def begin_submit(self, name: str, spec: HorovodJob, *, cluster: Union[GpuCluster, str],
                     continuation_token: Optional[str] = None, polling: bool = True,
                     polling_interval: Optional[float] = None) -> "LROPoller[Job]":
        """Start submitting ``spec`` as job ``name`` on ``cluster`` (a :class:`GpuCluster` or its
        name); the poller's result is the :class:`Job` once the service has accepted it (not once
        it has run: :meth:`Job.wait` waits for that).

        Checked before anything is created: the name, that every storage placeholder is filled
        and every mount has its key, that the script and log paths lie in a mount of the job or
        the cluster, that the cluster can ever give the job ``node_count`` nodes, that the place
        it runs can express every field, and that each mounted file share exists. Submitting the
        same name again returns the existing job if it has the same settings, and is a
        :class:`ConflictError` naming the fields that differ (secret values, keys and passwords
        included, though never shown) otherwise. ``continuation_token`` resumes an earlier call
        (``spec`` and ``cluster`` are then not used).

        :param str name: the job's name.
        :param HorovodJob spec: what the job runs.
        :keyword cluster: the :class:`GpuCluster` (or its name) the job runs on.
        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the request
            (its result is the job, not fetched); True follows the operation to its end.
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is the :class:`Job`.
        :raises InvalidSpecError: for anything the checks above refuse, before anything is sent.
        :raises ConflictError: when a job of that name exists with other settings.
        """
        check_batchai_name(name, "job")
        interval = check_polling(polling, polling_interval)
        job = Job(self, name)
        backend = self._backend
        if continuation_token is not None:
            poller = backend.begin_submit_job(job._ref, cast(HorovodJob, spec), None,
                                              continuation_token=continuation_token, polling_interval=interval)
        else:
            spec = require_spec(spec)
            if isinstance(cluster, str):
                cluster = GpuCluster(self.workspace, cluster)
            require_cluster(cluster, GpuCluster)
            if cluster._record is None:
                cluster.refresh()
            record = cluster._known()
            backend.check_submission(spec, record)
            poller = backend.begin_submit_job(job._ref, spec, record, polling_interval=interval)

        def record_of(job_record: JobRecord) -> Job:
            job._record = job_record
            return job

        submitted = MappedPoller(poller, record_of, action="submitting job", resource=job.id, same_token=True)
        return submitted if polling else accepted(submitted, job)

    def submit(self, name: str, spec: HorovodJob, *, cluster: Union[GpuCluster, str],
               timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> Job:
        """:meth:`begin_submit`, waiting at most ``timeout`` seconds (None: no limit) for the
        service to accept the job; :meth:`Job.wait` then waits for it to end.

        :param str name: the job's name.
        :param HorovodJob spec: what to run.
        :keyword cluster: the :class:`GpuCluster` (or its name, or its ARM id) to run on.
        :keyword float timeout: seconds to wait; None: no limit.
        :returns: the :class:`Job`.
        :raises InvalidSpecError: for a bad argument, before anything is sent.
        :raises ConflictError: when a job of that name exists with another spec.
        :raises WaitTimeoutError: when ``timeout`` is spent (the submission goes on)."""
        check_timeout(timeout)
        return self.begin_submit(name, spec, cluster=cluster).result(timeout)

    def get_job(self, name: str) -> Job:
        """The existing job; :class:`NotFoundError` when there is none.

        :param str name: the job's name.
        :returns: the :class:`Job`, fetched.
        :raises NotFoundError: when there is none."""
        return Job(self, name).refresh()

    def list_jobs(self) -> List[Job]:
        """The experiment's jobs.

        :returns: the jobs, fetched."""
        ws = self.workspace
        return [Job(self, r.name, _record=r) for r in self._backend.list_jobs(ws.resource_group, ws.name, self.name)]

    # -- sweeps ---------------------------------------------------------------------------------
    def sweep(self, spec: HorovodJob, *, parameters: Mapping[str, Any], cluster: Union[GpuCluster, str],
              name: Optional[str] = None, sampling: str = "grid", num_trials: Optional[int] = None,
              seed: Optional[int] = None, max_concurrent_trials: int = 2, metric: str = "val_accuracy",
              mode: str = "max", early_stopping: Optional[MedianStopping] = None) -> Sweep:
        """Start a sweep: one trial job of ``spec`` per configuration of ``parameters``, each
        configuration passed to the script as ``--<name> <value>`` options after ``spec.arguments``.

        ``parameters`` maps option names to lists of values (``{"lr": [1e-3, 1e-4], "batch-size":
        [32, 64]}``); ``sampling='grid'`` runs every combination, ``'random'`` draws ``num_trials``
        of them with ``seed`` (0 when None), where :class:`Uniform` and :class:`LogUniform` ranges
        are allowed too. At most ``max_concurrent_trials`` trials run at once; trials are named
        ``<name>-000``, ``<name>-001``, ... (``name`` defaults to ``sweep-<8 hex digits>``). Trials
        are judged by ``metric`` (a column of their ``metrics.csv``) and ``mode`` ('max' or 'min');
        ``early_stopping=MedianStopping()`` stops trials worse than the median (off by default).

        Everything is checked before the first trial is submitted; the first trials are submitted
        now, the others by :meth:`Sweep.wait`. The same call again returns the same sweep.

        :param HorovodJob spec: the job every trial runs.
        :keyword parameters: option name to a list of values, a :class:`Uniform` or a :class:`LogUniform`.
        :keyword cluster: the :class:`GpuCluster` (or its name) the trials run on.
        :keyword str name: the sweep's name, its trials' prefix.
        :keyword str sampling: ``'grid'`` or ``'random'``.
        :keyword int num_trials: how many configurations ``'random'`` draws.
        :keyword int seed: the random draw's seed.
        :keyword int max_concurrent_trials: at most this many trials run at once.
        :keyword str metric: the ``metrics.csv`` column trials are judged by.
        :keyword str mode: ``'max'`` or ``'min'``: which end of ``metric`` is best.
        :keyword MedianStopping early_stopping: the rule that stops poor trials early (None: none).
        :returns: the :class:`Sweep`, its first trials submitted.
        :raises InvalidSpecError: for a bad argument, before any trial is submitted.
        """
        spec, definition = plan_sweep(spec, cluster, GpuCluster, name, parameters=parameters, sampling=sampling,
                                      num_trials=num_trials, seed=seed, max_concurrent_trials=max_concurrent_trials,
                                      metric=metric, mode=mode, early_stopping=early_stopping)
        sweep = Sweep(self, definition, spec=spec)
        sweep.step()
        return sweep

    def get_sweep(self, name: str) -> Sweep:
        """The sweep ``name``, rebuilt from its trial jobs; :class:`NotFoundError` when no job of
        this experiment is a trial of it. Call :meth:`Sweep.resume` to submit its remaining trials
        from this process.

        :param str name: the sweep's name.
        :returns: the :class:`Sweep`.
        :raises InvalidSpecError: for a bad name.
        :raises NotFoundError: when no job is a trial of it."""
        check_batchai_name(name, "name")
        found = sweeps_in(self.list_jobs()).get(name)
        if found is None:
            raise no_sweep(self, name)
        definition, jobs = found
        return Sweep(self, definition, jobs=jobs)

    def list_sweeps(self) -> List[Sweep]:
        """The sweeps whose trials are jobs of this experiment.

        :returns: the sweeps."""
        return [Sweep(self, definition, jobs=jobs) for definition, jobs in sweeps_in(self.list_jobs()).values()]


