"""``Experiment.sweep``'s arguments checked, before anything is sent, for the sync and the aio
Experiment: into a held sweep's request (where the service holds sweeps) or a client-driven sweep's
definition (where it does not)."""
from __future__ import annotations

import uuid
from typing import Any, Mapping, Optional, Tuple

from .._models.errors import InvalidSpecError, NotFoundError
from .._models.job_spec import HorovodJob
from .._models.names import check_batchai_name
from .._models.sweep_job import SweepRequest, plan_request
from .._models.sweep_spec import MedianStopping, SweepDefinition
from .experiment import require_spec
from .sweep import check_no_sweep_variables, trial_spec

__all__ = ["no_sweep", "plan_sweep", "plan_held_sweep", "client_sweep_options", "sweep_name"]


def sweep_name(name: Optional[str]) -> str:
    return f"sweep-{uuid.uuid4().hex[:8]}" if name is None else name


def _cluster_name(cluster: object, cluster_class: type) -> str:
    cluster_name = getattr(cluster, "name") if isinstance(cluster, cluster_class) else cluster
    if not isinstance(cluster_name, str):
        raise InvalidSpecError("cluster", f"{type(cluster).__name__} is not a cluster", "a GpuCluster or its name")
    return check_batchai_name(cluster_name, "cluster")


def plan_held_sweep(spec: object, cluster: object, cluster_class: type, name: Optional[str], *,
                    early_stopping: Any, early_termination: Any, **options: Any) -> Tuple[HorovodJob, SweepRequest]:
    """``Experiment.sweep``'s arguments for a service that holds sweeps, checked before anything is
    sent: the trial's job (its arguments naming the parameters) and the sweep's request."""
    spec = require_spec(spec)
    spec.check_resolved()
    check_no_sweep_variables(spec)
    if early_stopping is not None and early_termination is not None:
        raise InvalidSpecError("early_stopping", "and early_termination are both given",
                               "early_termination alone (early_stopping is its earlier form)")
    request = plan_request(sweep_name(name), cluster=_cluster_name(cluster, cluster_class), arguments=spec.arguments,
                           variables=spec.environment_variables,
                           early_termination=early_stopping if early_termination is None else early_termination,
                           **options)
    return spec.replace(arguments=request.arguments), request


def client_sweep_options(*, sampling: str, early_termination: Any, sweep_timeout: Any, trial_timeout: Any) -> None:
    """What a sweep driven from the caller's process (Batch AI on Azure) cannot do, refused by name."""
    why = "Batch AI on Azure holds no sweeps: this process drives the sweep, with grid or random sampling and " \
          "MedianStopping"
    for field, value in (("early_termination", early_termination), ("sweep_timeout", sweep_timeout),
                         ("trial_timeout", trial_timeout)):
        if value is not None:
            raise InvalidSpecError(field, f"is set; {why}", "None, or a target that holds sweeps (local, Azure ML)")
    if sampling == "bayesian":
        raise InvalidSpecError("sampling", f"'bayesian' needs a service that samples; {why}", "'grid' or 'random'")


def plan_sweep(spec: object, cluster: object, cluster_class: type, name: Optional[str], *, parameters: Mapping[str, Any],
               sampling: str, num_trials: Optional[int], seed: Optional[int], max_concurrent_trials: int, metric: str,
               mode: str, early_stopping: Optional[MedianStopping]) -> Tuple[HorovodJob, SweepDefinition]:
    """``Experiment.sweep``'s arguments checked -- every trial's job included -- before anything is
    submitted: the spec and the sweep's definition."""
    spec = require_spec(spec)
    spec.check_resolved()
    check_no_sweep_variables(spec)
    definition = SweepDefinition.build(
        sweep_name(name), cluster=_cluster_name(cluster, cluster_class),
        base_arguments=spec.arguments, parameters=parameters, sampling=sampling, num_trials=num_trials, seed=seed,
        metric=metric, mode=mode, max_concurrent_trials=max_concurrent_trials, early_stopping=early_stopping)
    for index in range(len(definition.trials)):  # every trial's job is valid before one is submitted
        trial_spec(spec, definition, index)
    return spec, definition


def no_sweep(experiment: Any, name: str) -> NotFoundError:  # a sweep driven from a client
    return NotFoundError(f"experiment {experiment.name!r} has no sweep {name!r} (no trial job carries it)",
                         resource=f"{experiment.id}/sweeps/{name}")
