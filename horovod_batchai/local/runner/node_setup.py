"""Preparing a cluster's node: its mounts, then its setup task (``nodeSetup.setupTask``)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
import os
import subprocess
from pathlib import Path
from typing import Any, Optional

from ..core.context import ServiceContext
from .mounts import MountError, apply_mounts, hold_mirrors, plan_mounts, release_mirrors
from .environment import base_environment
from .node_runtime import NodeRuntime, resolve
from .paths import cluster_dir, expand_vars
from .processes import RUN_TAG_ENV, exit_code, stop_tagged
from .states import job_error

log = logging.getLogger(__name__)

__all__ = ["NodeSlot", "prepare_node"]


@dataclass(frozen=True)
class NodeSlot:
    index: int      # the node's index in its cluster
    node_id: str


def prepare_node(context: ServiceContext, cluster_id: str, node: NodeSlot, tag: str) -> Optional[dict[str, Any]]:
    """Mount the cluster's volumes and run its setup task (``nodeSetup.setupTask``) on one node.

    Returns the cluster error to report (the node is then unusable), or None when the node is
    ready. The setup task's processes carry ``tag`` so that the scheduler can stop them.
    """
    cluster = context.store.get(cluster_id)
    if cluster is None:
        return None
    props = cluster.get("properties", {})
    private = context.store.get_private(cluster_id)
    node_setup = props.get("nodeSetup") or {}
    mount_root = cluster_dir(context, cluster_id) / "mounts"
    mount_root.mkdir(parents=True, exist_ok=True)
    try:
        mounts = plan_mounts(context, node_setup.get("mountVolumes"), private, mount_root,
                             where="nodeSetup.mountVolumes")
        apply_mounts(mounts)
    except MountError as exc:
        return job_error("MountFailed", f"Mounting volumes failed on node {node.node_id}: {exc}",
                         [("nodeId", node.node_id)])
    task = node_setup.get("setupTask")
    if not task or not task.get("commandLine"):
        return None
    held = hold_mirrors(context, mounts)
    try:
        return _run_setup_task(context, cluster_id, node, tag, task, private, mount_root)
    finally:
        release_mirrors(context, held, lambda message: log.warning("node %s: %s", node.node_id, message))


def _run_setup_task(context: ServiceContext, cluster_id: str, node: NodeSlot, tag: str, task: dict[str, Any],
                    private: dict[str, Any], mount_root: Path) -> Optional[dict[str, Any]]:
    runtime = context.node_runtime if isinstance(context.node_runtime, NodeRuntime) else resolve()
    # never the service's own environment; the node runtime's interpreter first, as for jobs
    env = base_environment(carry_python_path=runtime.is_service_python)
    env["PATH"] = os.pathsep.join([str(Path(runtime.python).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    for variable in task.get("environmentVariables") or []:
        env[str(variable["name"])] = str(variable.get("value", ""))
    secrets = private.get("setupTaskSecrets") or {}
    for variable in task.get("secrets") or []:
        if str(variable["name"]) in secrets:
            env[str(variable["name"])] = str(secrets[str(variable["name"])])
    node_root = cluster_dir(context, cluster_id) / "nodes" / node.node_id
    (node_root / "wd").mkdir(parents=True, exist_ok=True)
    env.update({"AZ_BATCHAI_MOUNT_ROOT": str(mount_root), "AZ_BATCHAI_JOB_TEMP": str(node_root / "wd"),
                "AZ_BATCHAI_NUM_GPUS": "0", RUN_TAG_ENV: tag})
    prefix = expand_vars(str(task.get("stdOutErrPathPrefix") or str(node_root)), env)
    # A relative prefix is relative to the node's working directory, never to the service's.
    out_dir = Path(os.path.normpath(node_root / "wd" / prefix / str(task.get("stdOutErrPathSuffix") or "")
                                    / node.node_id))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with open(out_dir / "stdout.txt", "ab", buffering=0) as out, open(out_dir / "stderr.txt", "ab",
                                                                           buffering=0) as err:
            proc = subprocess.Popen(["/bin/bash", "-c", str(task["commandLine"])], env=env, cwd=str(node_root / "wd"),
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                                    close_fds=True, umask=0o077)  # private, as the job's own files
    except OSError as exc:
        return job_error("SetupTaskFailed", f"The setup task could not start on node {node.node_id}: "
                                            f"{exc.strerror} ({exc.filename})", [("nodeId", node.node_id)])
    code = exit_code(proc.wait())
    stop_tagged(tag, [proc.pid], grace=0)  # nothing it started outlives it
    if code != 0:
        return job_error("SetupTaskFailed", f"The setup task failed on node {node.node_id} with exit code {code}; "
                                            f"see {out_dir / 'stderr.txt'}.", [("nodeId", node.node_id)])
    return None
