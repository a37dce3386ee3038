"""The states of jobs and compute nodes, and the only way a job's execution state changes.

A job document moves ``queued → running → succeeded | failed``, through ``terminating`` when the
user terminates it. The scheduler is the only writer of ``executionState``,
``executionStateTransitionTime`` and ``executionInfo`` once a job exists, and it writes them
through :func:`transition_job`, which refuses moves the service never makes::

    queued      → running | terminating | failed (its cluster is gone)
    running     → succeeded | failed | terminating | queued (requeued when its nodes were removed)
    terminating → failed
    succeeded, failed: terminal
"""
from __future__ import annotations

import datetime
import enum
from typing import TYPE_CHECKING, Any, Iterable, Optional

if TYPE_CHECKING:  # a hint only: finding the service (local/daemon.py) then imports no database
    from ..core.store import Store

__all__ = ["ExecutionState", "AllocationState", "NodeState", "IllegalTransition", "JobGone",
           "ALLOWED_TRANSITIONS", "transition_job", "job_error", "utc_now", "JOB_TERMINATED", "NODE_COUNT_FIELDS",
           "node_state_counts"]


class ExecutionState(str, enum.Enum):
    QUEUED = "queued"            # waiting for nodeCount idle nodes of its cluster
    RUNNING = "running"          # nodes allocated: mounts, job preparation, then the toolkit
    TERMINATING = "terminating"  # the user terminated it; its processes are being stopped
    SUCCEEDED = "succeeded"      # the toolkit's command exited 0
    FAILED = "failed"            # non-zero exit, terminated, timed out, or could not start

    def is_terminal(self) -> bool:
        return self in (ExecutionState.SUCCEEDED, ExecutionState.FAILED)


class AllocationState(str, enum.Enum):
    STEADY = "steady"      # the cluster has the nodes its scale settings ask for
    RESIZING = "resizing"  # nodes are being added (preparing) or removed (leaving)


class NodeState(str, enum.Enum):
    IDLE = "idle"            # ready for a job
    RUNNING = "running"      # allocated to a job
    PREPARING = "preparing"  # being provisioned; runs the cluster's setup task
    LEAVING = "leaving"      # being removed from the cluster
    UNUSABLE = "unusable"    # its setup task failed; it takes no jobs

    @property
    def count_field(self) -> str:
        """The ``nodeStateCounts`` field that counts nodes in this state."""
        return f"{self.value}NodeCount"


#: the fields of a cluster's ``nodeStateCounts``, in the order the service answered them.
NODE_COUNT_FIELDS = ("runningNodeCount", "idleNodeCount", "unusableNodeCount", "preparingNodeCount",
                     "leavingNodeCount")


def node_state_counts(states: Iterable[NodeState] = ()) -> dict[str, int]:
    """A cluster's ``nodeStateCounts`` for nodes in ``states`` (all zero for none)."""
    counts = dict.fromkeys(NODE_COUNT_FIELDS, 0)
    for state in states:
        counts[state.count_field] += 1
    return counts


ALLOWED_TRANSITIONS: dict[ExecutionState, frozenset[ExecutionState]] = {
    ExecutionState.QUEUED: frozenset({ExecutionState.RUNNING, ExecutionState.TERMINATING,
                                      ExecutionState.FAILED}),
    ExecutionState.RUNNING: frozenset({ExecutionState.SUCCEEDED, ExecutionState.FAILED,
                                       ExecutionState.TERMINATING, ExecutionState.QUEUED}),
    ExecutionState.TERMINATING: frozenset({ExecutionState.FAILED}),
    ExecutionState.SUCCEEDED: frozenset(),
    ExecutionState.FAILED: frozenset(),
}


class IllegalTransition(RuntimeError):
    """A job was asked to move between two states the service never moves it between."""

    def __init__(self, job_id: str, current: str, wanted: ExecutionState) -> None:
        super().__init__(f"job {job_id} cannot move from {current!r} to {wanted.value!r}")
        self.current = current
        self.wanted = wanted


class JobGone(LookupError):
    """The job document no longer exists (it was deleted)."""


def utc_now() -> str:
    """A timestamp the way Batch AI writes them: ``2018-06-07T21:16:57.114Z``."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def job_error(code: str, message: str, details: Optional[Iterable[tuple[str, str]]] = None) -> dict[str, Any]:
    """One entry of ``executionInfo.errors`` (a BatchAIError)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = [{"name": name, "value": value} for name, value in details]
    return error


#: the error a job the user terminated ends with.
JOB_TERMINATED = job_error("JobTerminated", "The job was terminated by the user.")


def transition_job(store: Store, job_id: str, to: ExecutionState, *,
                   exit_code: Optional[int] = None, errors: Optional[list[dict[str, Any]]] = None,
                   allowed_from: Optional[Iterable[ExecutionState]] = None) -> dict[str, Any]:
    """Move a job to ``to`` atomically and return the new document.

    Raises :class:`IllegalTransition` for a move outside :data:`ALLOWED_TRANSITIONS` (or outside
    ``allowed_from`` when given) and :class:`JobGone` if the document was deleted.
    """
    sources = frozenset(allowed_from) if allowed_from is not None else None

    def change(body: dict[str, Any]) -> None:
        props = body.setdefault("properties", {})
        current = props.get("executionState", ExecutionState.QUEUED.value)
        try:
            state = ExecutionState(current)
        except ValueError:
            raise IllegalTransition(job_id, current, to) from None
        if to not in ALLOWED_TRANSITIONS[state] or (sources is not None and state not in sources):
            raise IllegalTransition(job_id, current, to)
        now = utc_now()
        props["executionState"] = to.value
        props["executionStateTransitionTime"] = now
        if to is ExecutionState.RUNNING:
            props["executionInfo"] = {"startTime": now}
        elif to is ExecutionState.QUEUED:
            props.pop("executionInfo", None)  # requeued: it will start afresh
        elif to.is_terminal():
            info = props.setdefault("executionInfo", {})
            info["endTime"] = now
            if exit_code is not None:
                info["exitCode"] = exit_code
            if errors:
                info["errors"] = errors

    body = store.update(job_id, change)
    if body is None:
        raise JobGone(job_id)
    return body
