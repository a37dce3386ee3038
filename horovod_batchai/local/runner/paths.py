"""Where a run's and a node's things are, and how a node's shell expands what the job wrote."""
from __future__ import annotations

import datetime
import hashlib
import re
from pathlib import Path

from ..core.context import ServiceContext
from ..core.store import resource_key

__all__ = ["job_dir", "job_mount_root", "cluster_dir", "node_id_for", "execution_log_name", "job_prep_log_names",
           "expand_vars", "digest"]


def digest(resource_id: str) -> str:
    return hashlib.sha256(resource_key(resource_id).encode()).hexdigest()[:16]


def job_dir(context: ServiceContext, job_id: str) -> Path:
    """The job's scratch directory: its mount root, shared temp and per-node working dirs."""
    return Path(context.jobs_root) / digest(job_id)


def cluster_dir(context: ServiceContext, cluster_id: str) -> Path:
    """The cluster's directory; ``mounts/`` under it is the cluster's ``$AZ_BATCHAI_MOUNT_ROOT``."""
    return Path(context.state_dir) / "clusters" / digest(cluster_id)


def node_id_for(cluster_id: str, index: int, created: float) -> str:
    """A node id shaped like Batch AI's: ``tvm-676767296_1-20180718t174802z-p``."""
    number = int(hashlib.sha256(resource_key(cluster_id).encode()).hexdigest()[:8], 16) % 10**9
    stamp = datetime.datetime.fromtimestamp(created, datetime.timezone.utc).strftime("%Y%m%dt%H%M%Sz")
    return f"tvm-{number}_{index + 1}-{stamp}-p"


def execution_log_name(node_id: str, node_count: int) -> str:
    # The recorded single-node job wrote execution.log; multi-node jobs write one per node.
    return "execution.log" if node_count == 1 else f"execution-{node_id}.log"


def job_prep_log_names(node_id: str, node_count: int) -> tuple[str, str]:
    suffix = "" if node_count == 1 else f"-{node_id}"
    return f"stdout-job_prep{suffix}.txt", f"stderr-job_prep{suffix}.txt"


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def expand_vars(text: str, env: dict[str, str]) -> str:
    """Expand ``$NAME`` and ``${NAME}`` as a shell would (unknown names become empty)."""
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), text)


def job_mount_root(job_root: Path) -> Path:
    """``$AZ_BATCHAI_JOB_MOUNT_ROOT`` of the job whose scratch directory is ``job_root``."""
    return job_root / "mounts"
