"""The service's own vocabulary for where a job or a cluster stands."""
from __future__ import annotations

import enum
import html
from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional, Sequence

from .errors import ServiceErrorDetail
from .html import html_table

__all__ = ["ExecutionState", "AllocationState", "NodeStateCounts", "ClusterStatus", "JobStatus"]


class ExecutionState(str, enum.Enum):
    """A job's ``executionState``."""

    QUEUED = "queued"            #: accepted, waiting for enough idle nodes
    RUNNING = "running"          #: nodes allocated; preparation or the script is running
    TERMINATING = "terminating"  #: the user asked to terminate; processes are being stopped
    SUCCEEDED = "succeeded"      #: the script exited with code 0
    FAILED = "failed"            #: non-zero exit, terminated, or could not be started

    def is_terminal(self) -> bool:
        """True once the job will not change state again.

        >>> ExecutionState("running").is_terminal(), ExecutionState.FAILED.is_terminal()
        (False, True)

        :returns: whether the state is final.
        """
        return self in (ExecutionState.SUCCEEDED, ExecutionState.FAILED)

    @classmethod
    def parse(cls, value: object) -> "ExecutionState":
        """The state a service or SDK value names, in any case (a string or an enum member).

        :param value: the service's value.
        :returns: the :class:`ExecutionState`.
        :raises ValueError: for a value that names no state."""
        return cls(str(getattr(value, "value", value)).lower())


class AllocationState(str, enum.Enum):
    """A cluster's ``allocationState``."""

    STEADY = "steady"      #: no change in the number of nodes is under way
    RESIZING = "resizing"  #: nodes are being added or removed

    @classmethod
    def parse(cls, value: object) -> "AllocationState":
        """The state a service or SDK value names, in any case (a string or an enum member).

        :param value: the service's value.
        :returns: the :class:`AllocationState`.
        :raises ValueError: for a value that names no state."""
        return cls(str(getattr(value, "value", value)).lower())


@dataclass(frozen=True)
class NodeStateCounts:
    """How many of a cluster's nodes are in each state (``nodeStateCounts``)."""

    idle: int = 0       #: ready for a job
    running: int = 0    #: running a job
    preparing: int = 0  #: being allocated / running the setup task
    leaving: int = 0    #: being removed
    unusable: int = 0   #: failed; will not run jobs

    @property
    def total(self) -> int:
        """All nodes the cluster has now.

        >>> NodeStateCounts(idle=3, running=1).total
        4
        """
        return self.idle + self.running + self.preparing + self.leaving + self.unusable


@dataclass(frozen=True)
class ClusterStatus:
    """A snapshot of a cluster, as ``az batchai cluster show`` printed it."""

    name: str
    resource_group: str
    workspace: str
    vm_size: str
    allocation_state: AllocationState
    current_node_count: int
    node_state_counts: NodeStateCounts
    #: manual target, or None when the cluster auto-scales
    target_node_count: Optional[int]
    #: (minimum, maximum) when the cluster auto-scales, else None
    auto_scale: Optional[tuple[int, int]]
    provisioning_state: str
    errors: Sequence[ServiceErrorDetail] = field(default_factory=tuple)
    allocation_state_transition_time: Optional[datetime] = None

    @property
    def is_ready(self) -> bool:
        """Steady at the size the scale settings ask for, with nothing preparing or leaving.

        With a manual size the cluster has exactly ``target_node_count`` nodes, each idle or
        running a job; with auto-scale it has between the minimum and the maximum. No errors and
        no unusable nodes. A service may answer a resize with the cluster as it was (steady at
        the old size), so being steady alone says nothing: the size must match.

        >>> counts = NodeStateCounts(idle=2)
        >>> steady = dict(name="c", resource_group="rg", workspace="ws", vm_size="STANDARD_NC6",
        ...               allocation_state=AllocationState.STEADY, current_node_count=2, node_state_counts=counts,
        ...               auto_scale=None, provisioning_state="succeeded")
        >>> ClusterStatus(target_node_count=2, **steady).is_ready, ClusterStatus(target_node_count=0, **steady).is_ready
        (True, False)
        """
        counts = self.node_state_counts
        if (self.allocation_state is not AllocationState.STEADY or self.errors or counts.unusable
                or counts.preparing or counts.leaving):
            return False
        nodes = counts.idle + counts.running
        if self.current_node_count != nodes:
            return False
        if self.target_node_count is not None:
            return nodes == self.target_node_count
        if self.auto_scale is not None:
            return self.auto_scale[0] <= nodes <= self.auto_scale[1]
        return True

    _HEADERS = ("Name", "Resource Group", "Workspace", "VM Size", "State", "Idle", "Running", "Preparing",
                "Leaving", "Unusable")
    _NUMERIC = frozenset(range(5, 10))

    def _row(self) -> list[str]:
        counts = self.node_state_counts
        return [self.name, self.resource_group, self.workspace, self.vm_size.upper(), self.allocation_state.value,
                str(counts.idle), str(counts.running), str(counts.preparing), str(counts.leaving),
                str(counts.unusable)]

    def table(self) -> str:
        """The tutorial's ``--output table`` view of the cluster.

        :returns: the table's text."""
        row = self._row()
        widths = [max(len(h), len(v)) for h, v in zip(self._HEADERS, row)]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(c.rjust(w) if i in self._NUMERIC else c.ljust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

        return "\n".join([line(self._HEADERS), "  ".join("-" * w for w in widths), line(row)])

    def _repr_html_(self) -> str:
        """The same table as :meth:`table`, for Jupyter; errors follow it as a list."""
        return html_table(self._HEADERS, [self._row()], numeric=self._NUMERIC) + _errors_html(self.errors)


@dataclass(frozen=True)
class JobStatus:
    """A snapshot of a job's execution."""

    name: str
    execution_state: ExecutionState
    exit_code: Optional[int] = None
    errors: Sequence[ServiceErrorDetail] = field(default_factory=tuple)
    creation_time: Optional[datetime] = None
    start_time: Optional[datetime] = None
    end_time: Optional[datetime] = None
    #: where the service writes this job's outputs under stdOutErrPathPrefix / output directories
    output_directory_path_segment: Optional[str] = None

    _HEADERS = ("Name", "State", "Exit code", "Created", "Started", "Ended")

    def _repr_html_(self) -> str:
        """The job's state, exit code and times as a table for Jupyter; errors follow it as a list."""
        def when(moment: Optional[datetime]) -> str:
            return "" if moment is None else moment.isoformat(timespec="seconds")
        row = [self.name, self.execution_state.value, "" if self.exit_code is None else str(self.exit_code),
               when(self.creation_time), when(self.start_time), when(self.end_time)]
        return html_table(self._HEADERS, [row], numeric=frozenset({2})) + _errors_html(self.errors)


def _errors_html(errors: Sequence[ServiceErrorDetail]) -> str:
    if not errors:
        return ""
    return "<ul>" + "".join(f"<li><code>{html.escape(e.code)}</code>: {html.escape(e.message)}</li>"
                            for e in errors) + "</ul>"
