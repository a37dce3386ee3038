"""One run of a job on its nodes, in a thread of its own: it carries out the run's plan
(``job_plan.py``) -- directories, mounts, logs --, then hands the processes (job preparation on
every node, then the toolkit on the master node) to the run's supervisor (``supervisor.py``), a
process detached from the service that also enforces ``maxWallClockTime`` and records how the run
ended in the run's directory. The run waits for it, and stops it when asked to (see
``processes.py``). ``stdout.txt`` and ``stderr.txt`` are appended as lines come, so streaming sees
them at once.

A service started again after it was killed re-attaches to the runs its predecessor left
(:meth:`JobRun.reattach`): it waits for the same supervisor, or reads the result it recorded.
"""
from __future__ import annotations

import enum
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..core.context import ServiceContext
from ..core.disk import disk_problem
from .gpus import detect_gpus, vm_gpus
from .environment import base_environment
from ..tracking.runs import job_runs
from ..tracking.server import TrackingServerError
from .job_plan import EXECUTION_LOG_ENV, RANK_SECRETS_FILE, JobPlan, JobStartError, Machine, Step, Tracking, plan_job
from .node_runtime import NodeRuntime, NodeRuntimeError, check, require_interpreter, resolve
from .mounts import Mount, MountError, apply_mounts, hold_mirrors, plan_mounts, release_mirrors, remove_mounts
from .node_setup import NodeSlot
from .output_dirs import record_output_dirs
from .paths import cluster_dir, digest, job_dir, job_mount_root, job_prep_log_names
from .processes import RUN_TAG_ENV, STOP_GRACE_S, signal_tagged, stop_tagged, tagged_pids
from .states import JOB_TERMINATED, ExecutionState, job_error, utc_now
from .supervisor import EXIT_FILE, PID_FILE, RUN_FILE, STARTED_FILE, write_json_atomically

__all__ = ["StopReason", "RunResult", "JobRun", "RUN_DIR_ENV", "run_dir_of", "run_has_started",
           "discard_run_secrets"]

log = logging.getLogger(__name__)


#: package managers that the container image, not the host, was meant to run (see _write_shims).
INSTALLER_SHIMS = ("apt", "apt-get", "pip", "pip3", "conda")
#: the supervisor's own variable: its run directory (the run's other processes do not have it).
RUN_DIR_ENV = "HOROVOD_BATCHAI_RUN_DIR"
SUPERVISOR = Path(__file__).with_name("supervisor.py")
RANK_EXEC = Path(__file__).with_name("rank_exec.py")
HOROVODRUN = Path(__file__).with_name("horovodrun.py")
#: how long a stopped supervisor may take beyond the grace it gives the job's processes.
SUPERVISOR_EXTRA_S = 10.0


def run_dir_of(context: ServiceContext, job_id: str, tag: str) -> Path:
    """The private directory of one run of a job (``JobPlan.run_dir``)."""
    return job_dir(context, job_id) / "runs" / tag


def discard_run_secrets(run_dir: Path) -> None:
    """Remove the files of a run that hold the job's secrets (its supervisor removes them itself,
    unless it never started or was killed)."""
    for name in (RUN_FILE, RANK_SECRETS_FILE):
        try:
            (run_dir / name).unlink()
        except FileNotFoundError:
            pass


def run_has_started(run_dir: Path) -> bool:
    """Whether the run's supervisor started any process of the job (or ended): a run that did not
    can be started afresh without running anything twice."""
    return (run_dir / STARTED_FILE).exists() or (run_dir / EXIT_FILE).exists()


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

    def __init__(self, path: Path, *, required: bool = True) -> None:
        self.path = path
        self._fh: Optional[Any] = None
        try:
            self._fh = open(path, "a", buffering=1, encoding="utf-8")
        except OSError:
            if required:
                raise
            log.warning("cannot open the execution log %s", path)  # a re-attached run goes on without it
        self._lock = threading.Lock()

    def write(self, message: str) -> None:
        with self._lock:
            if self._fh is not None and not self._fh.closed:
                try:
                    self._fh.write(f"{utc_now()} {message}\n")
                except OSError as exc:  # a full disk: the job's errors still say what happened
                    log.warning("cannot write the execution log %s: %s", self.path, exc.strerror)

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()


class JobRun:
    """One run of a job on its nodes, in a thread of its own.

    ``on_done(run, result)`` is called exactly once, from that thread, after every process of the
    run is gone. :meth:`stop` asks the run to end early for a :class:`StopReason`.
    """

    def __init__(self, context: ServiceContext, job_id: str, nodes: list[NodeSlot],
                 on_done: Callable[["JobRun", RunResult], None], *, reattach_tag: Optional[str] = None) -> None:
        self.context = context
        self.job_id = job_id
        self.nodes = nodes
        self.on_done = on_done
        #: a run a previous service started, whose supervisor this one waits for
        self.reattached = reattach_tag is not None
        self.tag = reattach_tag or f"{digest(job_id)}-{uuid.uuid4().hex[:12]}"
        self.run_dir = run_dir_of(context, job_id, self.tag)
        self.stop_reason: Optional[StopReason] = None
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._supervisor: Optional[subprocess.Popen[bytes]] = None
        self._thread = threading.Thread(target=self._main, name=f"job-run-{self.tag}", daemon=True)
        self._logs: dict[str, _NodeLog] = {}
        self._plan: Optional[JobPlan] = None
        self._held_mirrors: list[Any] = []  # mounted blob containers kept in step while the run lasts
        self._job_mounts: list[Mount] = []  # unmounted when the run ends

    @classmethod
    def reattach(cls, context: ServiceContext, job_id: str, nodes: list[NodeSlot], tag: str,
                 on_done: Callable[["JobRun", RunResult], None]) -> "JobRun":
        """The run ``tag`` of a job that a service which is gone started: waits for its supervisor
        (or reads what it recorded) instead of starting anything."""
        return cls(context, job_id, nodes, on_done, reattach_tag=tag)

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
        except Exception as exc:
            problem = disk_problem(exc, self.context.state_dir)
            if problem is not None:  # a full or read-only disk: the job fails saying so
                log.warning("job run %s failed: %s", self.job_id, problem.describe())
                message = f"The local service could not run the job: {problem.describe()}"
                self._open_logs_to_say_why()
                self._log_all(message)
                result = RunResult(ExecutionState.FAILED, errors=[job_error(
                    "StorageReadOnly" if problem.read_only else "InsufficientStorage", message)])
            else:  # a bug of ours: fail the job rather than leave it running
                log.exception("job run %s failed", self.job_id)
                result = RunResult(ExecutionState.FAILED, errors=[job_error(
                    "InternalError", f"The local service could not run the job: {type(exc).__name__}")])
        finally:
            # Whatever the supervisor left (it stops the job's processes itself) goes now.
            stop_tagged(self.tag, [], grace=0 if self.stop_reason is None else STOP_GRACE_S)
            if self._supervisor is not None and self._supervisor.poll() is None:
                self._supervisor.wait()
            discard_run_secrets(self.run_dir)
            if self.stop_reason is not None and result is not None:
                self._log_all(f"stopped: {self.stop_reason.value}")
                result = self._stopped_result(result.exit_code)
            # Everything the job wrote to a mounted container is there before it is reported finished.
            release_mirrors(self.context, self._held_mirrors, self._log_all)
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
            error = JOB_TERMINATED
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
        body = self.context.store.get(self.job_id) or {}
        return body.get("properties", {})

    def _open_logs_to_say_why(self) -> None:
        """Open the execution logs a run that failed before opening them would have written (on the
        job's share, which may be writable when the service's own directories are not)."""
        if self._logs or self._plan is None or self.reattached:
            return
        for node_plan in self._plan.nodes:
            try:
                node_plan.execution_log.parent.mkdir(parents=True, exist_ok=True)
                self._logs[node_plan.node.node_id] = _NodeLog(node_plan.execution_log)
            except OSError:
                pass  # the share is no better off: the job's errors say it

    def _log_all(self, message: str) -> None:
        for node_log in self._logs.values():
            node_log.write(message)

    def _run(self) -> RunResult:
        store = self.context.store
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
        root = job_dir(self.context, self.job_id)
        mount_root = cluster_dir(self.context, cluster_id) / "mounts"

        # Mounts: the cluster's (again: they are idempotent) and the job's, checked before planning.
        try:
            cluster_mounts = plan_mounts(self.context, (cluster_props.get("nodeSetup") or {}).get("mountVolumes"),
                                         store.get_private(cluster_id), mount_root,
                                         where="cluster nodeSetup.mountVolumes")
            job_mounts = plan_mounts(self.context, props.get("mountVolumes"), job_private, job_mount_root(root),
                                     where="mountVolumes")
        except MountError as exc:
            if self.reattached:  # the job runs already; what it mounted stays until it ends
                log.warning("job %s: the restarted service could not check the job's mounts: %s", self.job_id, exc)
                cluster_mounts, job_mounts = [], []
            else:
                raise JobStartError("MountFailed", f"Mounting volumes failed: {exc}") from None
        vm_size = str(cluster_props.get("vmSize") or "")
        runtime = self.runtime
        machine = Machine(python=runtime.python, horovodrun=str(HOROVODRUN), rank_exec=str(RANK_EXEC),
                          environment=base_environment(carry_python_path=runtime.is_service_python),
                          gpus=detect_gpus())
        plan = plan_job(job=job, job_private=job_private, cluster=cluster, nodes=self.nodes, run_tag=self.tag,
                        job_dir=root, mount_root=mount_root, cluster_mounts=cluster_mounts, job_mounts=job_mounts,
                        size_gpus=vm_gpus(vm_size), machine=machine, tracking=self._tracking(job))
        self._plan = plan
        if self.reattached:
            return self._reattach(plan)
        return self._execute(plan, machine)

    def _tracking(self, job: dict[str, Any]) -> Optional[Tracking]:
        """The job's MLflow run (started now; the tracking server first, if need be). A job runs
        without one where tracking is off, the job names its own MLflow, or the server cannot run
        (its execution log says why)."""
        runs = job_runs(self.context)
        if runs is None or self.reattached:
            return None
        props = job.get("properties", {})
        names = {str(v.get("name")) for v in (props.get("environmentVariables") or []) + (props.get("secrets") or [])}
        if "MLFLOW_TRACKING_URI" in names:
            return Tracking(note="MLflow: the job sets MLFLOW_TRACKING_URI itself; the service tracks no run for it")
        try:
            run = runs.start(job)
        except TrackingServerError as exc:
            log.warning("job %s runs without MLflow tracking: %s", self.job_id, exc)
            return Tracking(note=f"MLflow tracking is off for this job: {exc}")
        return Tracking(run.env, run.secrets, f"MLflow: run {run.run_id} of experiment {run.experiment_name!r} at "
                                              f"{runs.tracking_uri} (its token in MLFLOW_TRACKING_TOKEN)")

    def _execute(self, plan: JobPlan, machine: Machine) -> RunResult:
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
        self._held_mirrors = hold_mirrors(self.context, [*plan.cluster_mounts, *plan.job_mounts])
        try:
            for path in plan.directories:
                path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if disk_problem(exc, self.context.state_dir) is not None:
                raise  # a read-only or full share: the job fails with StorageReadOnly / InsufficientStorage
            raise JobStartError("OutputDirectoryFailed",
                                f"Creating the output directory {exc.filename} failed: {exc.strerror}") from None
        record_output_dirs(self.context, self.job_id, list(plan.outputs))
        plan.host_file.write_text(plan.host_file_text)
        self._open_logs(plan)
        for node_plan in plan.nodes:
            for line in node_plan.log_lines:
                self._logs[node_plan.node.node_id].write(line)
        self._check_runtime(machine, horovod=bool(plan.toolkit.rank_count))
        if plan.shims is not None and plan.container:
            _write_shims(plan.shims, plan.container)
        self._start_supervisor(plan)
        return self._wait_supervisor(plan)

    @property
    def runtime(self) -> NodeRuntime:
        """The node runtime this run's processes use (the service's; see node_runtime.py)."""
        runtime = self.context.node_runtime
        return runtime if isinstance(runtime, NodeRuntime) else resolve()

    def _check_runtime(self, machine: Machine, *, horovod: bool) -> None:
        """Fail the job before any of its processes starts when the node runtime cannot run it; say
        in the execution logs which runtime runs it and what it holds. Only a Horovod job needs
        the training stack (and pays for asking the runtime); any job needs the interpreter."""
        runtime = self.runtime
        # Asked in the environment a node's processes start from (without the job's secrets).
        env = {**machine.environment, "PATH": os.pathsep.join([str(Path(runtime.python).parent),
                                                                machine.environment.get("PATH", "")])}
        try:
            if horovod:
                report = check(runtime, env, horovod=True)
                self._log_all(f"node runtime: {runtime.describe()}: {report.summary()}")
            else:
                require_interpreter(runtime)
                self._log_all(f"node runtime: {runtime.describe()}")
        except NodeRuntimeError as exc:
            raise JobStartError(exc.error["code"], str(exc)) from None

    def _open_logs(self, plan: JobPlan) -> None:
        for node_plan in plan.nodes:
            self._logs[node_plan.node.node_id] = _NodeLog(node_plan.execution_log, required=not self.reattached)

    # -- the supervisor -------------------------------------------------------------------------

    def _start_supervisor(self, plan: JobPlan) -> None:
        """Write the run's directory (0700) and files (0600), then start its supervisor in a session
        of its own: the job's processes are its children, not the service's."""
        run_dir = plan.run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        run_dir.chmod(0o700)
        if plan.rank_secrets_file is not None:
            write_json_atomically(plan.rank_secrets_file, dict(plan.rank_secrets))
        logs = {n.node.node_id: str(n.execution_log) for n in plan.nodes}
        shims = " (package installs for the container image are skipped)" if plan.shims is not None else ""
        preparation = [dict(_step_spec(step), log=str(node_plan.execution_log),
                            log_start="running job preparation" + shims)
                       for node_plan, step in zip(plan.nodes, plan.preparation)]
        spec = {"tag": self.tag, "deadline": time.time() + plan.wall_clock_s, "grace": STOP_GRACE_S,
                "preparation": preparation,
                "toolkit": dict(_step_spec(plan.toolkit), log=logs[plan.nodes[0].node.node_id],
                                log_start=plan.toolkit_summary),
                "rank_secrets_file": str(plan.rank_secrets_file) if plan.rank_secrets_file else None}
        write_json_atomically(run_dir / RUN_FILE, spec)
        env = dict(base_environment())
        env.update({RUN_TAG_ENV: self.tag, RUN_DIR_ENV: str(run_dir)})
        with self._lock:
            if self.stop_reason is not None:
                raise _Stopped()
            with open(run_dir / "supervisor.log", "ab") as out:
                self._supervisor = subprocess.Popen(
                    [sys.executable, str(SUPERVISOR), str(run_dir)], env=env, cwd=str(run_dir),
                    stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True, close_fds=True,
                    umask=0o077)  # what the job writes is its owner's alone, whatever the host program's umask

    def _supervisor_alive(self) -> bool:
        if self._supervisor is not None:
            return self._supervisor.poll() is None
        # Re-attached: not our child. Its processes carry the run's tag; when none is left, it is over.
        return bool(tagged_pids(self.tag))

    def _signal_supervisor(self, sig: int) -> None:
        if self._supervisor is not None:
            try:
                self._supervisor.send_signal(sig)
            except ProcessLookupError:
                pass
            return
        pid = _read_json(self.run_dir / PID_FILE, {}).get("pid")
        if isinstance(pid, int) and pid in tagged_pids(self.tag):  # the pid is still that supervisor's
            os.kill(pid, sig)
        else:
            signal_tagged(self.tag, [], sig)

    def _wait_supervisor(self, plan: JobPlan) -> RunResult:
        """Wait until the supervisor is gone (stopping it when asked to), then read its result."""
        asked_at: Optional[float] = None
        while self._supervisor_alive() and not (self._supervisor is None and (self.run_dir / EXIT_FILE).exists()):
            if self._stop_event.is_set():
                if asked_at is None:
                    asked_at = time.monotonic()
                    self._signal_supervisor(signal.SIGTERM)
                elif time.monotonic() - asked_at > STOP_GRACE_S + SUPERVISOR_EXTRA_S:
                    break  # the backstop in _main kills what is left
            if self._supervisor is not None:
                try:
                    self._supervisor.wait(timeout=0.1)
                except subprocess.TimeoutExpired:
                    pass
            else:
                self._stop_event.wait(0.2)
        return self._result(plan, _read_json(self.run_dir / EXIT_FILE, None))

    def _reattach(self, plan: JobPlan) -> RunResult:
        # Mounted again (links are idempotent): a service killed just after the run ended had
        # already unmounted the job's volumes, which hold its logs; they go again at the end.
        try:
            apply_mounts([*plan.cluster_mounts, *plan.job_mounts])
        except MountError as exc:
            log.warning("job %s: the restarted service could not mount the job's volumes again: %s", self.job_id, exc)
        self._job_mounts = list(plan.job_mounts)
        self._held_mirrors = hold_mirrors(self.context, [*plan.cluster_mounts, *plan.job_mounts])
        self._open_logs(plan)
        self._logs[plan.nodes[0].node.node_id].write("the local service started again and re-attached to the job")
        return self._wait_supervisor(plan)

    def _result(self, plan: JobPlan, ended: Optional[dict[str, Any]]) -> RunResult:
        """What the supervisor recorded, as the job's result (the stop reason, if any, is applied later)."""
        if ended is None:
            return RunResult(ExecutionState.FAILED, errors=[job_error(
                "JobProcessesLost", "The job's processes ended without recording how (its supervisor was killed); "
                                    "the job's exit code is unknown.")])
        code = ended.get("exit_code")
        if ended.get("stopped") == "wall_clock" and self.stop_reason is None:
            self.stop_reason = StopReason.WALL_CLOCK
        if self.stop_reason is not None:
            return RunResult(ExecutionState.FAILED, exit_code=code)
        if ended.get("stopped"):
            return RunResult(ExecutionState.FAILED, exit_code=code, errors=[job_error(
                "JobStopped", "The job's processes were stopped by a signal from outside the service.")])
        if ended.get("error"):
            return RunResult(ExecutionState.FAILED, exit_code=code, errors=[job_error(
                "JobStartFailed", f"A process of the job could not start: {ended['error']}")])
        if ended.get("phase") == "preparation":
            node = plan.nodes[int(ended.get("node") or 0)].node
            out_name, err_name = job_prep_log_names(node.node_id, len(plan.nodes))
            return RunResult(ExecutionState.FAILED, exit_code=code, errors=[job_error(
                "JobPreparationFailed",
                f"Job preparation failed on node {node.node_id} with exit code {code}; see {err_name} and "
                f"{out_name} in the stdouterr output directory.")])
        if code == 0:
            return RunResult(ExecutionState.SUCCEEDED, exit_code=0)
        return RunResult(ExecutionState.FAILED, exit_code=code, errors=[job_error(
            "JobFailed", f"The job's command exited with exit code {code}; see stderr.txt and stdout.txt in the "
                         "stdouterr output directory.")])


def _step_spec(step: Step) -> dict[str, Any]:
    return {"argv": list(step.argv), "env": dict(step.env), "cwd": str(step.cwd), "stdout": str(step.stdout),
            "stderr": str(step.stderr), "split_ranks": str(step.split_ranks) if step.split_ranks else None,
            "rank_count": step.rank_count}


def _read_json(path: Path, default: Any) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return default


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
                 "node runs on its node runtime instead.")
        script = ("#!/bin/sh\n"
                  f"msg={shlex.quote(before)}\" $*\"{shlex.quote(after)}\n"
                  "echo \"$msg\"\n"
                  f"if [ -n \"${EXECUTION_LOG_ENV}\" ]; then "
                  f"echo \"$(date -u +%Y-%m-%dT%H:%M:%S.000Z) $msg\" >> \"${EXECUTION_LOG_ENV}\"; fi\n"
                  "exit 0\n")
        path = directory / name
        path.write_text(script)
        path.chmod(0o755)


