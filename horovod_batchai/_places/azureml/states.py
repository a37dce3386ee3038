"""Azure ML's words for where a job or a compute stands, in the service vocabulary this package
uses (``ExecutionState``, ``AllocationState``). The table is documented in docs/azureml.rst."""
from __future__ import annotations

from typing import Mapping

from ..._models.states import AllocationState, ExecutionState

__all__ = ["JOB_STATES", "execution_state", "allocation_state"]

#: Azure ML JobStatus (mfe.json) -> ExecutionState. Everything before the command runs is
#: "queued"; Finalizing (outputs being uploaded) and NotResponding (no heartbeat yet, not given
#: up) are still "running"; a cancelled job ends "failed", as a terminated Batch AI job did.
JOB_STATES: Mapping[str, ExecutionState] = {
    "NotStarted": ExecutionState.QUEUED,
    "Starting": ExecutionState.QUEUED,
    "Provisioning": ExecutionState.QUEUED,
    "Preparing": ExecutionState.QUEUED,
    "Queued": ExecutionState.QUEUED,
    "Paused": ExecutionState.QUEUED,
    "Unknown": ExecutionState.QUEUED,
    "Running": ExecutionState.RUNNING,
    "Finalizing": ExecutionState.RUNNING,
    "NotResponding": ExecutionState.RUNNING,
    "CancelRequested": ExecutionState.TERMINATING,
    "Completed": ExecutionState.SUCCEEDED,
    "Failed": ExecutionState.FAILED,
    "Canceled": ExecutionState.FAILED,
}

_LOWER = {name.lower(): state for name, state in JOB_STATES.items()}


def execution_state(status: object) -> ExecutionState:
    """The ExecutionState of an Azure ML job status; a status this table does not know (a newer
    service) counts as queued rather than stopping the caller's wait with an error."""
    return _LOWER.get(str(getattr(status, "value", status) or "").lower(), ExecutionState.QUEUED)


def allocation_state(value: object) -> AllocationState:
    """AmlCompute's allocationState (Steady | Resizing); unknown or missing counts as resizing."""
    text = str(getattr(value, "value", value) or "").lower()
    return AllocationState.STEADY if text == "steady" else AllocationState.RESIZING
