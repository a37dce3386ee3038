"""One run of a job on its nodes, in a thread of its own: it carries out the run's plan
(``job_plan.py``) -- directories, mounts, logs, job preparation on every node, then the toolkit on
the master node -- watches the processes, enforces ``maxWallClockTime``, and stops everything it
started when asked to (see ``processes.py``). ``stdout.txt`` and ``stderr.txt`` are appended by the
processes themselves, unbuffered, so streaming sees lines as they come.
"""
from __future__ import annotations

import enum
import logging
import os
import shlex
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..batchai.outputs import record_output_dirs
from ..core.backend import LocalBackend
from .gpus import detect_gpus, vm_gpus
from .job_plan import EXECUTION_LOG_ENV, JobPlan, JobStartError, Machine, Step, plan_job
from .mounts import Mount, MountError, apply_mounts, hold_mirrors, plan_mounts, release_mirrors, remove_mounts
from .node_setup import NodeSlot
from .paths import cluster_dir, digest, job_dir, job_mount_root, job_prep_log_names
from .processes import STOP_GRACE_S, exit_code, stop_tagged
from .states import ExecutionState, job_error, utc_now

__all__ = ["StopReason", "RunResult", "JobRun"]

log = logging.getLogger(__name__)


#: package managers that the container image, not the host, was meant to run (see _write_shims).
INSTALLER_SHIMS = ("apt", "apt-get", "pip", "pip3", "conda")


class StopReason(enum.Enum):
    TERMINATED = "terminated"        # the user terminated the job
    WALL_CLOCK = "wall_clock"        # constraints.maxWallClockTime was reached
    SERVICE_STOP = "service_stop"    # the local service is stopping
    REQUEUE = "requeue"              # its nodes were removed with nodeDeallocationOption=requeue
    NODES_REMOVED = "nodes_removed"  # its nodes were removed with nodeDeallocationOption=terminate
    FORGET = "forget"                # the job is being deleted


@dataclass
class RunResult:
    state: ExecutionState                 # SUCCEEDED or FAILED (QUEUED when requeued)
    exit_code: Optional[int] = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: Optional[StopReason] = None


class _NodeLog:
    """The node's execution log: what the node did, never a secret value."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = open(path, "a", buffering=1, encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, message: str) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.write(f"{utc_now()} {message}\n")

    def close(self) -> None:
        with self._lock:
            self._fh.close()


class JobRun:
    """One run of a job on its nodes, in a thread of its own.

    ``on_done(run, result)`` is called exactly once, from that thread, after every process of the
    run is gone. :meth:`stop` asks the run to end early for a :class:`StopReason`.
    """

    def __init__(self, backend: LocalBackend, job_id: str, nodes: list[NodeSlot],
                 on_done: Callable[["JobRun", RunResult], None]) -> None:
        self.backend = backend
        self.job_id = job_id
        self.nodes = nodes
        self.on_done = on_done
        self.tag = f"{digest(job_id)}-{uuid.uuid4().hex[:12]}"
        self.pgids: list[int] = []
        self.stop_reason: Optional[StopReason] = None
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen[bytes]] = []
        self._thread = threading.Thread(target=self._main, name=f"job-run-{self.tag}", daemon=True)
        self._logs: dict[str, _NodeLog] = {}
        self._stopped_exit_code: Optional[int] = None  # how the process that was running when stopped ended
        self._held_mirrors: list[Any] = []  # mounted blob containers kept in step while the run lasts
        self._job_mounts: list[Mount] = []  # unmounted when the run ends

    # -- control ------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self, reason: StopReason) -> None:
        with self._lock:
            if self.stop_reason is None:
                self.stop_reason = reason
        self._stop_event.set()

    def join(self, timeout: Optional[float] = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- the run ------------------------------------------------------------------------------

    def _main(self) -> None:
        result: Optional[RunResult] = None
        try:
            result = self._run()
        except _Stopped:
            result = RunResult(ExecutionState.FAILED)
        except JobStartError as exc:
            self._log_all(f"the job could not start: {exc}")
            result = RunResult(ExecutionState.FAILED, errors=[exc.error])
        except Exception as exc:  # a bug of ours: fail the job rather than leave it running
            log.exception("job run %s failed", self.job_id)
            result = RunResult(ExecutionState.FAILED, errors=[job_error(
                "InternalError", f"The local service could not run the job: {type(exc).__name__}")])
        finally:
            stop_tagged(self.tag, self.pgids, grace=0 if self.stop_reason is None else STOP_GRACE_S)
            for proc in self._procs:
                if proc.poll() is None:
                    proc.wait()
            if self.stop_reason is not None and result is not None:
                result = self._stopped_result(self._stopped_exit_code if result.exit_code is None
                                              else result.exit_code)
            # Everything the job wrote to a mounted container is there before it is reported finished.
            release_mirrors(self.backend, self._held_mirrors, self._log_all)
            # The job's own volumes are unmounted when it ends, as Batch AI did; the cluster's stay.
            remove_mounts(self._job_mounts)
            for node_log in self._logs.values():
                node_log.close()
            self.on_done(self, result or RunResult(ExecutionState.FAILED))

    def _stopped_result(self, exit_code: Optional[int]) -> RunResult:
        reason = self.stop_reason
        if reason is StopReason.REQUEUE:
            return RunResult(ExecutionState.QUEUED, stop_reason=reason)
        if reason is StopReason.WALL_CLOCK:
            limit = self._job_props().get("constraints", {}).get("maxWallClockTime", "P7D")
            error = job_error("MaxWallClockTimeExceeded",
                              f"The job reached its maximum wall-clock time ({limit}) and was stopped.")
        elif reason is StopReason.TERMINATED:
            error = job_error("JobTerminated", "The job was terminated by the user.")
        elif reason is StopReason.NODES_REMOVED:
            error = job_error("JobTerminated", "The job was terminated because its nodes were removed from the "
                                               "cluster (nodeDeallocationOption=terminate).")
        elif reason is StopReason.SERVICE_STOP:
            error = job_error("LocalServiceStopped",
                              "The local service stopped while the job was running; the job was stopped.")
        else:
            error = job_error("JobDeleted", "The job was deleted while it ran.")
        return RunResult(ExecutionState.FAILED, exit_code=exit_code, errors=[error], stop_reason=reason)

    def _job_props(self) -> dict[str, Any]:
        body = self.backend.store.get(self.job_id) or {}
        return body.get("properties", {})

    def _log_all(self, message: str) -> None:
        for node_log in self._logs.values():
            node_log.write(message)

    def _run(self) -> RunResult:
        store = self.backend.store
        job = store.get(self.job_id)
        if job is None:
            raise JobStartError("JobNotFound", "The job was deleted before it started.")
        props = job.get("properties", {})
        job_private = store.get_private(self.job_id)
        cluster_id = str((props.get("cluster") or {}).get("id") or "")
        cluster = store.get(cluster_id) if cluster_id else None
        if cluster is None:
            raise JobStartError("ClusterNotFound", f"The job's cluster {cluster_id!r} does not exist.")
        cluster_props = cluster.get("properties", {})
        root = job_dir(self.backend, self.job_id)
        mount_root = cluster_dir(self.backend, cluster_id) / "mounts"

        # Mounts: the cluster's (again: they are idempotent) and the job's, checked before planning.
        try:
            cluster_mounts = plan_mounts(self.backend, (cluster_props.get("nodeSetup") or {}).get("mountVolumes"),
                                         store.get_private(cluster_id), mount_root,
                                         where="cluster nodeSetup.mountVolumes")
            job_mounts = plan_mounts(self.backend, props.get("mountVolumes"), job_private, job_mount_root(root),
                                     where="mountVolumes")
        except MountError as exc:
            raise JobStartError("MountFailed", f"Mounting volumes failed: {exc}") from None
        vm_size = str(cluster_props.get("vmSize") or "")
        machine = Machine(python=sys.executable, horovodrun=str(Path(sys.executable).parent / "horovodrun"),
                          environment=dict(os.environ), gpus=detect_gpus())
        if props.get("horovodSettings") and not Path(machine.horovodrun).exists():
            raise JobStartError("HorovodNotInstalled",
                                f"horovodrun was not found next to {machine.python}; install horovod "
                                "into the local service's Python environment")
        plan = plan_job(job=job, job_private=job_private, cluster=cluster, nodes=self.nodes, run_tag=self.tag,
                        job_dir=root, mount_root=mount_root, cluster_mounts=cluster_mounts, job_mounts=job_mounts,
                        size_gpus=vm_gpus(vm_size), machine=machine)
        return self._execute(plan)

    def _execute(self, plan: JobPlan) -> RunResult:
        deadline = time.monotonic() + plan.wall_clock_s
        outputs = {path for _, path in plan.outputs}
        for path in plan.directories:
            if path in outputs:
                break
            path.mkdir(parents=True, exist_ok=True)
        try:
            apply_mounts([*plan.cluster_mounts, *plan.job_mounts])
        except MountError as exc:
            raise JobStartError("MountFailed", f"Mounting volumes failed: {exc}") from None
        self._job_mounts = list(plan.job_mounts)
        self._held_mirrors = hold_mirrors(self.backend, [*plan.cluster_mounts, *plan.job_mounts])
        try:
            for path in plan.directories:
                path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JobStartError("OutputDirectoryFailed",
                                f"Creating the output directory {exc.filename} failed: {exc.strerror}") from None
        record_output_dirs(self.backend, self.job_id, list(plan.outputs))
        plan.host_file.write_text(plan.host_file_text)
        for node_plan in plan.nodes:
            node_log = _NodeLog(node_plan.execution_log)
            self._logs[node_plan.node.node_id] = node_log
            for line in node_plan.log_lines:
                node_log.write(line)
        if plan.shims is not None and plan.container:
            _write_shims(plan.shims, plan.container)

        # Job preparation, on every node at once.
        if plan.preparation:
            failed = self._run_job_preparation(plan, deadline)
            if self.stop_reason is not None:
                return RunResult(ExecutionState.FAILED)
            if failed:
                node, code = failed
                out_name, err_name = job_prep_log_names(node.node_id, len(plan.nodes))
                return RunResult(ExecutionState.FAILED, exit_code=code, errors=[job_error(
                    "JobPreparationFailed",
                    f"Job preparation failed on node {node.node_id} with exit code {code}; see {err_name} and "
                    f"{out_name} in the stdouterr output directory.")])

        # The toolkit, on the master node.
        master_log = self._logs[plan.nodes[0].node.node_id]
        master_log.write(plan.toolkit_summary)
        returncode = self._wait(self._spawn(plan.toolkit), deadline)
        if returncode is None:
            master_log.write(f"stopped: {self.stop_reason.value if self.stop_reason else 'unknown'}")
            return RunResult(ExecutionState.FAILED)
        code = exit_code(returncode)
        master_log.write(f"the job's command exited with code {code}")
        if code == 0:
            return RunResult(ExecutionState.SUCCEEDED, exit_code=0)
        return RunResult(ExecutionState.FAILED, exit_code=code, errors=[job_error(
            "JobFailed", f"The job's command exited with exit code {code}; see stderr.txt and stdout.txt in the "
                         "stdouterr output directory.")])

    def _spawn(self, step: Step) -> "subprocess.Popen[bytes]":
        with self._lock:
            if self.stop_reason is not None:
                raise _Stopped()
            with open(step.stdout, "ab", buffering=0) as out, open(step.stderr, "ab", buffering=0) as err:
                proc = subprocess.Popen(list(step.argv), env=dict(step.env), cwd=str(step.cwd),
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                                        close_fds=True)
            self._procs.append(proc)
            self.pgids.append(proc.pid)
        return proc

    def _wait(self, proc: "subprocess.Popen[bytes]", deadline: float) -> Optional[int]:
        """The process's return code, or None if the run was stopped (or ran out of time) first."""
        while True:
            try:
                return proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() >= deadline:
                self.stop(StopReason.WALL_CLOCK)
            if self._stop_event.is_set():
                stop_tagged(self.tag, self.pgids)
                self._stopped_exit_code = exit_code(proc.wait())
                return None

    def _run_job_preparation(self, plan: JobPlan, deadline: float) -> Optional[tuple[NodeSlot, int]]:
        """Run jobPreparation on every node; the first node that failed and its exit code, if any."""
        procs = []
        for node_plan, step in zip(plan.nodes, plan.preparation):
            self._logs[node_plan.node.node_id].write("running job preparation"
                                                     + (" (package installs for the container image are skipped)"
                                                        if plan.shims is not None else ""))
            try:
                proc = self._spawn(step)
            except _Stopped:
                return None
            procs.append((node_plan.node, proc))
        failed: Optional[tuple[NodeSlot, int]] = None
        for node, proc in procs:
            returncode = self._wait(proc, deadline)
            if returncode is None:
                return None
            code = exit_code(returncode)
            self._logs[node.node_id].write(f"job preparation exited with code {code}")
            if code != 0 and failed is None:
                failed = (node, code)
        return failed


class _Stopped(Exception):
    """The run was stopped before a process could be started."""


def _write_shims(directory: Path, image: str) -> None:
    """Stand-ins for package managers, first on jobPreparation's PATH when the job names a
    container image: its installs were meant for that image, and running them on the host would
    change (and, with unpinned packages, break) the user's own environment."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in INSTALLER_SHIMS:
        before = f"horovod-batchai local node: skipped '{name}"
        after = (f"': package installs in jobPreparation target the container image {image}, and the local "
                 "node runs on the host Python instead.")
        script = ("#!/bin/sh\n"
                  f"msg={shlex.quote(before)}\" $*\"{shlex.quote(after)}\n"
                  "echo \"$msg\"\n"
                  f"if [ -n \"${EXECUTION_LOG_ENV}\" ]; then "
                  f"echo \"$(date -u +%Y-%m-%dT%H:%M:%S.000Z) $msg\" >> \"${EXECUTION_LOG_ENV}\"; fi\n"
                  "exit 0\n")
        path = directory / name
        path.write_text(script)
        path.chmod(0o755)


