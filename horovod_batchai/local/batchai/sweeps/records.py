"""A sweep as the store keeps it, its trials, and the only way their states change.

The sweep is an ARM resource document (``Microsoft.BatchAI/workspaces/experiments/sweeps``) whose
properties hold its settings (``spec.py``), its ``status`` and the ``trials`` the service has
decided on, each with the job that runs it. The driver changes them only through
:func:`move_sweep` and :func:`move_trial`, inside one store update, and refuses moves the graphs
below do not have::

    sweep:  running -> completed | failed | cancelled          (the last three are terminal)
    trial:  pending -> queued -> running -> completed | failed | stopped
            pending | queued | running -> cancelled | failed    (the sweep ended, or it could not run)

A trial is ``pending`` from the moment it is recorded until its job exists: recording it first, in
the sweep's document, is what keeps a restarted service from submitting a trial twice (its job's
name is fixed when it is recorded, and a job PUT of an existing job changes nothing).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Optional

from ...runner.states import utc_now
from ..records import BatchAIResource
from .errors import SweepNotFound

__all__ = ["SWEEP_TYPE", "LIVE", "Sweep", "SweepStatus", "TrialStatus", "IllegalSweepTransition", "move_sweep",
           "move_trial"]

SWEEP_TYPE = "Microsoft.BatchAI/workspaces/experiments/sweeps"


class SweepStatus(str, enum.Enum):
    RUNNING = "running"      # trials are submitted as slots free up
    COMPLETED = "completed"  # every trial ended, and at least one recorded the objective
    FAILED = "failed"        # no trial recorded the objective, or the objective names no recorded metric
    CANCELLED = "cancelled"  # the user cancelled it

    def is_terminal(self) -> bool:
        return self is not SweepStatus.RUNNING


class TrialStatus(str, enum.Enum):
    PENDING = "pending"      # decided on (values drawn, job named); its job is being created
    QUEUED = "queued"        # its job waits for nodes
    RUNNING = "running"      # its job runs
    COMPLETED = "completed"  # its job succeeded and recorded the objective
    FAILED = "failed"        # its job failed, or succeeded without recording the objective
    STOPPED = "stopped"      # stopped by the early termination policy
    CANCELLED = "cancelled"  # the sweep ended (cancelled, failed or timed out) before it did

    def is_terminal(self) -> bool:
        return self in (TrialStatus.COMPLETED, TrialStatus.FAILED, TrialStatus.STOPPED, TrialStatus.CANCELLED)


#: the statuses of trials that have not ended.
LIVE = frozenset(status.value for status in TrialStatus if not status.is_terminal())
_SWEEP_MOVES = {SweepStatus.RUNNING: {SweepStatus.COMPLETED, SweepStatus.FAILED, SweepStatus.CANCELLED}}
_ENDS = {TrialStatus.CANCELLED, TrialStatus.FAILED}
_TRIAL_MOVES = {
    TrialStatus.PENDING: {TrialStatus.QUEUED, TrialStatus.RUNNING, *_ENDS, TrialStatus.COMPLETED},
    TrialStatus.QUEUED: {TrialStatus.RUNNING, TrialStatus.COMPLETED, *_ENDS},
    TrialStatus.RUNNING: {TrialStatus.COMPLETED, TrialStatus.STOPPED, TrialStatus.QUEUED, *_ENDS},
}


class IllegalSweepTransition(RuntimeError):
    """A sweep or trial was asked to move between two states it never moves between."""


@dataclass(frozen=True, repr=False)
class Sweep(BatchAIResource):
    what = "sweep"
    missing = SweepNotFound

    @property
    def status(self) -> SweepStatus:
        return SweepStatus(self.properties["status"])

    @property
    def trials(self) -> list[dict[str, Any]]:
        return list(self.properties.get("trials") or [])



def move_sweep(props: dict[str, Any], to: SweepStatus, reason: Optional[str] = None) -> None:
    """Move a sweep's properties (being updated in the store) to ``to``."""
    current = SweepStatus(props["status"])
    if to not in _SWEEP_MOVES.get(current, set()):
        raise IllegalSweepTransition(f"a sweep cannot move from {current.value} to {to.value}")
    props["status"] = to.value
    props["statusTransitionTime"] = props["endTime"] = utc_now()
    if reason:
        props["statusReason"] = reason


def move_trial(trial: dict[str, Any], to: TrialStatus, reason: Optional[str] = None) -> None:
    """Move one trial entry (of a sweep being updated in the store) to ``to``; a move to where it is
    already changes nothing."""
    current = TrialStatus(trial["status"])
    if to is current:
        return
    if to not in _TRIAL_MOVES.get(current, set()):
        raise IllegalSweepTransition(f"trial {trial['name']} cannot move from {current.value} to {to.value}")
    trial["status"] = to.value
    if reason:
        trial["reason"] = reason

