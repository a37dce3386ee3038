"""Experiments: a named group of jobs in a workspace, and the one place jobs are submitted."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Union, cast

from azure.core.polling import LROPoller

from ._cluster import GpuCluster
from ._job import Job
from ._models.constants import DEFAULT_LRO_TIMEOUT
from ._models.job_spec import HorovodJob
from ._models.names import check_batchai_name
from ._models.records import JobRecord, JobRef
from ._shared.deprecation import deprecated
from ._shared.experiment import ExperimentBase, require_cluster, require_spec
from ._shared.lro import MappedPoller, accepted, check_polling, check_timeout
from ._shared.resource_ids import names_from_id, parent_workspace

if TYPE_CHECKING:
    from ._models.sweep_job import Policy, Seconds
    from ._models.sweep_spec import MedianStopping
    from ._sweep import ClientSweep, Sweep
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
              mode: str = "max", early_stopping: Optional[MedianStopping] = None,
              early_termination: Optional[Policy] = None, sweep_timeout: Optional[Seconds] = None,
              trial_timeout: Optional[Seconds] = None) -> "Union[Sweep, ClientSweep]":
        """Start a sweep: trial jobs of ``spec``, each with other values of ``parameters`` passed to
        the script as ``--<name> <value>`` options after ``spec.arguments`` (or where
        ``spec.arguments`` or a variable names it as ``${{search_space.<name>}}``).

        ``parameters`` maps option names to a list of values or a distribution (:class:`Choice`,
        :class:`Uniform`, :class:`LogUniform`, :class:`Normal`, :class:`LogNormal`, the ``Q`` forms,
        :class:`Randint`). ``sampling='grid'`` runs every combination of lists; ``'random'`` draws
        ``num_trials`` trials with ``seed``; ``'bayesian'`` draws each from the results so far
        (Optuna's TPE on the local service; Azure ML's own Bayesian sampling there). At most
        ``max_concurrent_trials`` run at once. Trials are judged by ``metric`` (what they record with
        MLflow, or a column of their ``metrics.csv``) and ``mode``; ``early_termination``
        (:class:`BanditPolicy`, :class:`MedianStoppingPolicy`, :class:`TruncationSelectionPolicy`)
        stops poor trials; ``sweep_timeout`` and ``trial_timeout`` (seconds or a ``timedelta``)
        bound the sweep and each trial. This is Azure ML's sweep job, and
        ``early_stopping=MedianStopping(...)`` its earlier spelling.

        Where the service holds sweeps (the local service; Azure ML's sweep jobs), the sweep is
        created there and this returns at once: the service submits the trials and ends the sweep
        with no process attached; a :class:`Sweep` reads it. Where it does not (Batch AI on Azure),
        a :class:`ClientSweep` drives it from this process (grid or random sampling and
        ``MedianStopping`` only); its first trials are submitted now, the others by
        :meth:`ClientSweep.wait`. Everything is checked before anything is sent. The same call again
        returns the same sweep; another sweep under the name is a :class:`ConflictError`.

        :param HorovodJob spec: the job every trial runs.
        :keyword parameters: option name to a list of values or a distribution.
        :keyword cluster: the :class:`GpuCluster` (or its name) the trials run on.
        :keyword str name: the sweep's name, its trials' prefix (default ``sweep-<8 hex digits>``).
        :keyword str sampling: ``'grid'``, ``'random'`` or ``'bayesian'``.
        :keyword int num_trials: how many trials random or Bayesian sampling runs.
        :keyword int seed: the sampling's seed.
        :keyword int max_concurrent_trials: at most this many trials run at once.
        :keyword str metric: the objective trials are judged by.
        :keyword str mode: ``'max'`` or ``'min'``: which end of ``metric`` is best.
        :keyword MedianStopping early_stopping: the earlier spelling of a median policy.
        :keyword early_termination: the policy that stops poor trials early (None: none).
        :keyword sweep_timeout: seconds (or a ``timedelta``) after which the service cancels the sweep.
        :keyword trial_timeout: seconds (or a ``timedelta``) each trial job may run.
        :returns: the :class:`Sweep` (or :class:`ClientSweep`).
        :raises InvalidSpecError: for a bad argument, before anything is sent.
        :raises ConflictError: when another sweep has the name.
        """
        from ._shared.sweep_plan import client_sweep_options, plan_held_sweep, plan_sweep
        from ._sweep import ClientSweep, Sweep
        options: Dict[str, Any] = dict(parameters=parameters, sampling=sampling, num_trials=num_trials, seed=seed,
                                       max_concurrent_trials=max_concurrent_trials, metric=metric, mode=mode)
        backend = self._backend
        if not backend.holds_sweeps:
            client_sweep_options(sampling=sampling, early_termination=early_termination,
                                 sweep_timeout=sweep_timeout, trial_timeout=trial_timeout)
            spec, definition = plan_sweep(spec, cluster, GpuCluster, name, early_stopping=early_stopping, **options)
            client_sweep = ClientSweep(self, definition, spec=spec)
            client_sweep.step()
            return client_sweep
        trial, request = plan_held_sweep(spec, cluster, GpuCluster, name, early_stopping=early_stopping,
                                         early_termination=early_termination, sweep_timeout=sweep_timeout,
                                         trial_timeout=trial_timeout, **options)
        gpu_cluster = GpuCluster(self.workspace, request.cluster)
        record = gpu_cluster.refresh()._known()
        backend.check_submission(trial, record)
        ws = self.workspace
        return Sweep(self, backend.create_sweep(JobRef(ws.resource_group, ws.name, self.name, request.name), request,
                                                trial, record))

    def get_sweep(self, name: str) -> "Union[Sweep, ClientSweep]":
        """The sweep ``name``, as the service holds it (or, on Batch AI on Azure, rebuilt from its
        trial jobs: :meth:`ClientSweep.resume` submits its remaining trials from this process).

        :param str name: the sweep's name.
        :returns: the :class:`Sweep` (or :class:`ClientSweep`).
        :raises InvalidSpecError: for a bad name.
        :raises NotFoundError: when there is no such sweep."""
        from ._shared.sweep import sweeps_in
        from ._shared.sweep_plan import no_sweep
        from ._sweep import ClientSweep, Sweep
        check_batchai_name(name, "name")
        ws = self.workspace
        if self._backend.holds_sweeps:
            return Sweep(self, self._backend.get_sweep(JobRef(ws.resource_group, ws.name, self.name, name)))
        found = sweeps_in(self.list_jobs()).get(name)
        if found is None:
            raise no_sweep(self, name)
        definition, jobs = found
        return ClientSweep(self, definition, jobs=jobs)

    def list_sweeps(self) -> "List[Union[Sweep, ClientSweep]]":
        """The experiment's sweeps.

        :returns: the sweeps."""
        from ._shared.sweep import sweeps_in
        from ._sweep import ClientSweep, Sweep
        ws = self.workspace
        if self._backend.holds_sweeps:
            return [Sweep(self, r) for r in self._backend.list_sweeps(ws.resource_group, ws.name, self.name)]
        return [ClientSweep(self, definition, jobs=jobs)
                for definition, jobs in sweeps_in(self.list_jobs()).values()]
