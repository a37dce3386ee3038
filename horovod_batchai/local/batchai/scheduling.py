"""What the Batch AI provider asks of whatever runs jobs: the :class:`JobScheduler` protocol.

The provider stores clusters and jobs; a scheduler (``runner/scheduler.py`` in a running service)
moves them afterwards. The provider tells it when something changed and asks it to stop work; a
provider used without a service holds :class:`NoScheduler`, which has nothing running to tell.
"""
from __future__ import annotations

from typing import Protocol

__all__ = ["JobScheduler", "NoScheduler"]


class JobScheduler(Protocol):
    def notify(self) -> None:
        """Clusters or jobs changed: reconcile nodes and start what can start."""

    def terminate_job(self, job_id: str, *, wait: bool = True) -> None:
        """Stop a queued or running job; it ends ``failed``."""

    def forget_job(self, job_id: str) -> None:
        """The job is being deleted: stop its processes and drop what the scheduler keeps for it."""

    def forget_cluster(self, cluster_id: str) -> None:
        """The cluster is being deleted: stop its nodes' work and drop its nodes."""

    def running_jobs(self, cluster_id: str) -> list[str]:
        """Ids of the jobs running on the cluster's nodes."""


class NoScheduler:
    """The scheduler of a provider that runs nothing."""

    def notify(self) -> None:
        pass

    def terminate_job(self, job_id: str, *, wait: bool = True) -> None:
        pass

    def forget_job(self, job_id: str) -> None:
        pass

    def forget_cluster(self, cluster_id: str) -> None:
        pass

    def running_jobs(self, cluster_id: str) -> list[str]:
        return []
