"""The Batch AI resource types: the provider stores documents of them, the scheduler reads them.

Spelt as a document's ``type`` says it; the store keys types in lower case (``Store.put`` and
``Store.list`` lower them; raw queries use :func:`stored_type`).
"""
from __future__ import annotations

__all__ = ["WORKSPACE_TYPE", "EXPERIMENT_TYPE", "CLUSTER_TYPE", "JOB_TYPE", "FILE_SERVER_TYPE", "stored_type"]

WORKSPACE_TYPE = "Microsoft.BatchAI/workspaces"
EXPERIMENT_TYPE = "Microsoft.BatchAI/workspaces/experiments"
CLUSTER_TYPE = "Microsoft.BatchAI/workspaces/clusters"
JOB_TYPE = "Microsoft.BatchAI/workspaces/experiments/jobs"
FILE_SERVER_TYPE = "Microsoft.BatchAI/workspaces/fileservers"


def stored_type(resource_type: str) -> str:
    """The ``type`` column of the ``resources`` table for documents of ``resource_type``."""
    return resource_type.lower()
