"""One job on its nodes: the node environment Batch AI gives a job, and the job's processes.

A local node is a slot on this machine, so a job's nodes share one file system. What a job sees
is laid out the way Batch AI lays it out on a node:

- ``$AZ_BATCHAI_MOUNT_ROOT`` (per cluster) holds the cluster's mounts (``nodeSetup.mountVolumes``)
  and ``$AZ_BATCHAI_JOB_MOUNT_ROOT`` (per job) the job's own; an Azure file share is "mounted" as a
  symlink to its directory under the Files data plane's root, a file server as a symlink to its
  data directory, so whatever a job writes there is at once visible through the Files endpoint.
- ``{stdOutErrPathPrefix}/{jobOutputDirectoryPathSegment}/stdouterr/`` receives ``stdout.txt``,
  ``stderr.txt`` (appended by the processes themselves, unbuffered, so streaming sees lines as
  they come), the execution log and the job-preparation output of each node; output directories
  are ``{pathPrefix}/{jobOutputDirectoryPathSegment}/outputs/{pathSuffix}``, as the recorded
  service put them.
- ``jobPreparation`` runs first on every node; then the toolkit runs on the master node:
  ``horovodrun -np <processCount> -H localhost:<processCount> --gloo <python> <script> <args>``
  for Horovod, or the command line under ``/bin/bash -c`` for custom MPI and custom toolkit jobs.
  Command lines reach a shell untouched, so ``$AZ_BATCHAI_*`` variables are expanded on the node.

Every process of a run carries a random tag in its environment (``HOROVOD_BATCHAI_RUN``) and
starts its own session; stopping a run signals both the process groups it started and every
process carrying its tag, because horovodrun starts its ranks in sessions of their own. No
process outlives its run.
"""
from __future__ import annotations

import datetime
import enum
import hashlib
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional
from urllib.parse import urlparse

from . import accounts
from .durations import parse_duration
from .job_states import ExecutionState, job_error, utc_now
from .store import resource_key

__all__ = ["NodeSlot", "StopReason", "RunResult", "JobRun", "MountError", "Mount",
           "job_dir", "cluster_dir", "node_id_for", "expand_vars",
           "parse_share_url", "plan_mounts", "apply_mounts", "detect_gpus", "signal_tagged",
           "RUN_TAG_ENV", "execution_log_name", "job_prep_log_names", "prepare_node", "stop_tagged"]

log = logging.getLogger(__name__)

RUN_TAG_ENV = "HOROVOD_BATCHAI_RUN"
EXECUTION_LOG_ENV = "HOROVOD_BATCHAI_EXECUTION_LOG"
#: seconds processes get between SIGTERM and SIGKILL when a run is stopped.
STOP_GRACE_S = 3.0
#: package managers that the container image, not the host, was meant to run (see _write_shims).
INSTALLER_SHIMS = ("apt", "apt-get", "pip", "pip3", "conda")


# -- where things are -------------------------------------------------------------------------

def _digest(resource_id: str) -> str:
    return hashlib.sha256(resource_key(resource_id).encode()).hexdigest()[:16]


def job_dir(backend: Any, job_id: str) -> Path:
    """The job's scratch directory: its mount root, shared temp and per-node working dirs."""
    return Path(backend.jobs_root) / _digest(job_id)


def cluster_dir(backend: Any, cluster_id: str) -> Path:
    """The cluster's directory; ``mounts/`` under it is the cluster's ``$AZ_BATCHAI_MOUNT_ROOT``."""
    return Path(backend.state_dir) / "clusters" / _digest(cluster_id)


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


# -- small parsers ----------------------------------------------------------------------------

_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def expand_vars(text: str, env: dict[str, str]) -> str:
    """Expand ``$NAME`` and ``${NAME}`` as a shell would (unknown names become empty)."""
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), text)


def parse_share_url(url: str, base_url: str = "") -> tuple[str, str]:
    """(account, share) of a share URL (see :func:`accounts.parse_share_url`); MountError if it is none."""
    try:
        return accounts.parse_share_url(url, base_url)
    except ValueError as exc:
        raise MountError(str(exc)) from None


# -- mounts -------------------------------------------------------------------------------------

class MountError(Exception):
    """A volume could not be mounted; the message names it and never holds a key."""


@dataclass(frozen=True)
class Mount:
    kind: str            # azureFileShare | azureBlobFileSystem | fileServer
    mount_point: Path    # where the job sees it
    target: Path         # the directory behind it
    description: str     # for the execution log

    def __str__(self) -> str:
        return f"{self.description} at {self.mount_point}"


def _relative_mount_path(entry: dict[str, Any], where: str) -> str:
    rel = str(entry.get("relativeMountPath") or "").strip("/")
    if not rel or any(part in ("..", ".") for part in rel.split("/")):
        raise MountError(f"{where}.relativeMountPath must be a relative path such as 'myshare', "
                         f"got {entry.get('relativeMountPath')!r}")
    return rel


def _share_dir(backend: Any, account: str, share: str) -> Optional[Path]:
    from . import files_store
    try:
        found = files_store.share_path(backend, account, share)
    except ValueError as exc:  # a name Azure would refuse
        raise MountError(f"file share {account}/{share}: {exc}") from None
    return Path(found) if found is not None and Path(found).is_dir() else None


def _mount_key(private: dict[str, Any], account: str, name: str) -> Optional[str]:
    wanted = f"{account}/{name}".lower()
    for key, value in (private.get("mountKeys") or {}).items():
        if key.lower() == wanted:
            return value
    return None


def plan_mounts(backend: Any, volumes: Optional[dict[str, Any]], private: dict[str, Any], root: Path,
                *, where: str) -> list[Mount]:
    """Check every volume of a ``mountVolumes`` and say where each would appear under ``root``.

    Raises :class:`MountError` for what Azure would have failed to mount: an unknown account or
    share, an account key that is not one of the account's current keys, an unknown file server,
    an unmanaged file system.
    """
    mounts: list[Mount] = []
    volumes = volumes or {}
    for i, entry in enumerate(volumes.get("azureFileShares") or []):
        field_name = f"{where}.azureFileShares[{i}]"
        rel = _relative_mount_path(entry, field_name)
        url = str(entry.get("azureFileUrl") or "")
        if "<" in url:
            raise MountError(f"{field_name}.azureFileUrl {url!r} still holds a placeholder; put the storage "
                             "account name in it")
        account, share = parse_share_url(url, backend.base_url)
        if accounts.find_account(backend.store, account) is None:
            raise MountError(f"{field_name}: storage account {account!r} does not exist")
        key = _mount_key(private, entry.get("accountName") or account, share) or _mount_key(private, account, share)
        if key is None:
            raise MountError(f"{field_name}: no account key was given for {account}/{share} "
                             "(credentials.accountKey)")
        if key not in accounts.account_keys(backend.store, account):
            raise MountError(f"{field_name}: the account key given for {account}/{share} is not a current "
                             f"key of storage account {account!r}; mount error (access denied)")
        target = _share_dir(backend, account, share)
        if target is None:
            raise MountError(f"{field_name}: file share {share!r} does not exist in storage account {account!r}")
        mounts.append(Mount("azureFileShare", root / rel, target, f"Azure file share {account}/{share}"))
    for i, entry in enumerate(volumes.get("azureBlobFileSystems") or []):
        field_name = f"{where}.azureBlobFileSystems[{i}]"
        rel = _relative_mount_path(entry, field_name)
        account, container = str(entry.get("accountName") or ""), str(entry.get("containerName") or "")
        if not account or not container or "/" in account + container or ".." in account + container:
            raise MountError(f"{field_name} needs accountName and containerName")
        if accounts.find_account(backend.store, account) is None:
            raise MountError(f"{field_name}: storage account {account!r} does not exist")
        # There is no Blob endpoint locally: the container is a plain directory in the state dir.
        target = Path(backend.state_dir) / "blobfs" / account.lower() / container
        target.mkdir(parents=True, exist_ok=True)
        mounts.append(Mount("azureBlobFileSystem", root / rel, target,
                            f"blob container {account}/{container} (a plain local directory: the local "
                            "service has no Blob endpoint)"))
    for i, entry in enumerate(volumes.get("fileServers") or []):
        field_name = f"{where}.fileServers[{i}]"
        rel = _relative_mount_path(entry, field_name)
        server_id = str((entry.get("fileServer") or {}).get("id") or "")
        if not server_id or backend.store.get(server_id) is None:
            raise MountError(f"{field_name}.fileServer.id: file server {server_id!r} does not exist")
        data = Path(backend.fileserver_dir(server_id))
        source = str(entry.get("sourceDirectory") or "").strip("/")
        if ".." in source.split("/"):
            raise MountError(f"{field_name}.sourceDirectory must stay inside the file server, got {source!r}")
        target = data / source if source else data
        if not target.is_dir():
            raise MountError(f"{field_name}: directory {source or '/'!r} does not exist on file server "
                             f"{server_id.rsplit('/', 1)[-1]!r}")
        mounts.append(Mount("fileServer", root / rel, target,
                            f"file server {server_id.rsplit('/', 1)[-1]}:/{source}"))
    if volumes.get("unmanagedFileSystems"):
        raise MountError(f"{where}.unmanagedFileSystems cannot be mounted by the local service (it runs no "
                         "mount commands on this machine); use azureFileShares or fileServers")
    return mounts


#: the nodes of a cluster share its mount root and are set up in parallel threads: one at a time
#: may look at a mount point and change it, or two would each find the other's fresh link "in the way".
_MOUNT_LOCK = threading.Lock()


def apply_mounts(mounts: Iterable[Mount]) -> None:
    """Make each mount point a symlink to its target (atomically replacing an older link)."""
    with _MOUNT_LOCK:
        _apply_mounts(mounts)


def _apply_mounts(mounts: Iterable[Mount]) -> None:
    for mount in mounts:
        point = mount.mount_point
        point.parent.mkdir(parents=True, exist_ok=True)
        if point.is_symlink():
            if Path(os.readlink(point)) == mount.target:
                continue
        elif point.is_dir():
            try:
                point.rmdir()  # an empty directory left where nothing was mounted yet
            except OSError:
                raise MountError(f"cannot mount {mount.description}: {point} already exists and is not "
                                 "empty") from None
        elif point.exists():
            raise MountError(f"cannot mount {mount.description}: {point} already exists")
        tmp = point.with_name(f".{point.name}.{uuid.uuid4().hex[:8]}")
        os.symlink(mount.target, tmp, target_is_directory=True)
        os.replace(tmp, point)


# -- GPUs ---------------------------------------------------------------------------------------

_gpu_count: Optional[int] = None
_gpu_lock = threading.Lock()


def detect_gpus() -> int:
    """How many NVIDIA GPUs this machine has (``nvidia-smi -L``); 0 without the driver."""
    global _gpu_count
    with _gpu_lock:
        if _gpu_count is None:
            try:
                out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
                _gpu_count = sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
            except (OSError, subprocess.SubprocessError):
                _gpu_count = 0
        return _gpu_count


def _vm_gpus(vm_size: str) -> Optional[int]:
    from .vm_sizes import lookup_vm_size
    size = lookup_vm_size(vm_size)
    return size.gpus if size is not None else None


# -- stopping processes --------------------------------------------------------------------------

def _tagged_pids(tag: str) -> list[int]:
    """Processes whose environment carries ``HOROVOD_BATCHAI_RUN=<tag>`` (our own user's only)."""
    needle = f"{RUN_TAG_ENV}={tag}".encode()
    pids: list[int] = []
    proc = Path("/proc")
    if proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue  # gone, a zombie, or another user's
            if needle in environ.split(b"\0"):
                pids.append(int(entry.name))
        return pids
    try:
        import psutil
    except ImportError:
        return pids
    for p in psutil.process_iter():
        try:
            if p.environ().get(RUN_TAG_ENV) == tag:
                pids.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return pids


def signal_tagged(tag: str, pgids: Iterable[int], sig: int) -> int:
    """Send ``sig`` to the process groups and to every tagged process; returns how many tagged
    processes were found alive."""
    for pgid in pgids:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    found = _tagged_pids(tag)
    for pid in found:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return len(found)


def stop_tagged(tag: str, pgids: Iterable[int], *, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM, then SIGKILL whatever is left after ``grace`` seconds, until nothing is left."""
    pgids = list(pgids)
    if grace > 0 and signal_tagged(tag, pgids, signal.SIGTERM):
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _tagged_pids(tag):
            time.sleep(0.05)
    for _ in range(100):
        if not signal_tagged(tag, pgids, signal.SIGKILL):
            return
        time.sleep(0.05)
    log.warning("processes of run %s survived SIGKILL", tag)


# -- one run of a job -----------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeSlot:
    index: int      # the node's index in its cluster
    node_id: str


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


class JobStartError(Exception):
    """The job could not start; ``error`` is its executionInfo error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.error = job_error(code, message)


def _exit_code(returncode: int) -> int:
    # What bash reports for a process killed by a signal.
    return 128 - returncode if returncode < 0 else returncode


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

    def __init__(self, backend: Any, job_id: str, nodes: list[NodeSlot],
                 on_done: Callable[["JobRun", RunResult], None]) -> None:
        self.backend = backend
        self.job_id = job_id
        self.nodes = nodes
        self.on_done = on_done
        self.tag = f"{_digest(job_id)}-{uuid.uuid4().hex[:12]}"
        self.pgids: list[int] = []
        self.stop_reason: Optional[StopReason] = None
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen[bytes]] = []
        self._thread = threading.Thread(target=self._main, name=f"job-run-{self.tag}", daemon=True)
        self._logs: dict[str, _NodeLog] = {}
        self._stopped_exit_code: Optional[int] = None  # how the process that was running when stopped ended

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
        job = self.backend.store.get(self.job_id)
        if job is None:
            raise JobStartError("JobNotFound", "The job was deleted before it started.")
        props = job.get("properties", {})
        job_private = self.backend.store.get_private(self.job_id)
        cluster_id = str((props.get("cluster") or {}).get("id") or "")
        cluster = self.backend.store.get(cluster_id) if cluster_id else None
        if cluster is None:
            raise JobStartError("ClusterNotFound", f"The job's cluster {cluster_id!r} does not exist.")
        cluster_props = cluster.get("properties", {})
        cluster_private = self.backend.store.get_private(cluster_id)
        # Stored in ISO 8601 by the job's validation; a limit that cannot be read means the default.
        limit = parse_duration(str((props.get("constraints") or {}).get("maxWallClockTime") or "P7D"))
        deadline = time.monotonic() + (limit if limit is not None else 7 * 86400)

        # Directories of the run.
        root = job_dir(self.backend, self.job_id)
        mount_root = cluster_dir(self.backend, cluster_id) / "mounts"
        job_mount_root, shared_temp = root / "mounts", root / "shared"
        for path in (mount_root, job_mount_root, shared_temp):
            path.mkdir(parents=True, exist_ok=True)

        # Mounts: the cluster's (again: they are idempotent) and the job's.
        try:
            cluster_mounts = plan_mounts(self.backend, (cluster_props.get("nodeSetup") or {}).get("mountVolumes"),
                                         cluster_private, mount_root, where="cluster nodeSetup.mountVolumes")
            job_mounts = plan_mounts(self.backend, props.get("mountVolumes"), job_private, job_mount_root,
                                     where="mountVolumes")
            apply_mounts(cluster_mounts + job_mounts)
        except MountError as exc:
            raise JobStartError("MountFailed", f"Mounting volumes failed: {exc}") from None

        # The variables every node shares.
        segment = str(props.get("jobOutputDirectoryPathSegment") or "")
        node_count = len(self.nodes)
        process_count = self._process_count(props, node_count)
        env: dict[str, str] = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env["PYTHONUNBUFFERED"] = "1"
        for variable in props.get("environmentVariables") or []:
            env[str(variable["name"])] = str(variable.get("value", ""))
        secrets = job_private.get("secrets") or {}
        for variable in props.get("secrets") or []:
            name = str(variable["name"])
            if name in secrets:
                env[name] = str(secrets[name])
        env.update({
            "AZ_BATCHAI_MOUNT_ROOT": str(mount_root),
            "AZ_BATCHAI_JOB_MOUNT_ROOT": str(job_mount_root),
            "AZ_BATCHAI_SHARED_JOB_TEMP": str(shared_temp),
            RUN_TAG_ENV: self.tag,
        })
        # Paths the service itself needs, expanded as the master node's shell would expand them
        # (a relative one is relative to the node's working directory, never to the service's).
        master_root = root / "nodes" / self.nodes[0].node_id
        expansion_env = {**env, "AZ_BATCHAI_JOB_TEMP": str(master_root / "temp"), "AZ_BATCHAI_TASK_INDEX": "0"}

        def node_path(*parts: str) -> Path:
            return Path(os.path.normpath(master_root / "wd" / Path(*(expand_vars(p, expansion_env) for p in parts))))

        stdouterr = node_path(str(props.get("stdOutErrPathPrefix") or "$AZ_BATCHAI_SHARED_JOB_TEMP"), segment,
                              "stdouterr")
        env["AZ_BATCHAI_STDOUTERR_DIR"] = str(stdouterr)
        outputs: list[tuple[str, Path]] = [("stdouterr", stdouterr)]
        for directory in props.get("outputDirectories") or []:
            path = node_path(str(directory["pathPrefix"]), segment, "outputs", str(directory.get("pathSuffix") or ""))
            env[f"AZ_BATCHAI_OUTPUT_{directory['id']}"] = str(path)
            outputs.append((str(directory["id"]), path))
        for directory in props.get("inputDirectories") or []:
            env[f"AZ_BATCHAI_INPUT_{directory['id']}"] = str(node_path(str(directory["path"])))
        try:
            for _, path in outputs:
                path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JobStartError("OutputDirectoryFailed",
                                f"Creating the output directory {exc.filename} failed: {exc.strerror}") from None
        from .outputs import record_output_dirs  # outputs imports this module's helpers
        record_output_dirs(self.backend, self.job_id, outputs)

        host_file = root / "hostfile"
        per_node = max(1, -(-process_count // node_count))
        host_file.write_text("".join(f"localhost slots={per_node}\n" for _ in self.nodes))
        env["AZ_BATCHAI_MPI_HOST_FILE"] = str(host_file)
        # Azure Batch's own names for the same list, which MPI scripts of the era read.
        env["AZ_BATCH_HOST_LIST"] = ",".join("localhost" for _ in self.nodes)
        env["AZ_BATCH_NODE_LIST"] = ";".join("localhost" for _ in self.nodes)

        # GPUs: handed out only when this machine has them.
        vm_size = str(cluster_props.get("vmSize") or "")
        size_gpus = _vm_gpus(vm_size)
        machine_gpus = detect_gpus()

        # Per-node environments and logs.
        container = (props.get("containerSettings") or {}).get("imageSourceRegistry", {}).get("image")
        shims = root / "shims"
        if container:
            _write_shims(shims, container)
        node_envs: list[dict[str, str]] = []
        all_gpus: list[str] = []
        for position, node in enumerate(self.nodes):
            node_root = root / "nodes" / node.node_id
            (node_root / "temp").mkdir(parents=True, exist_ok=True)
            (node_root / "wd").mkdir(parents=True, exist_ok=True)
            node_log = _NodeLog(stdouterr / execution_log_name(node.node_id, node_count))
            self._logs[node.node_id] = node_log
            node_env = dict(env)
            node_env["AZ_BATCHAI_TASK_INDEX"] = str(position)
            node_env["AZ_BATCHAI_JOB_TEMP"] = str(node_root / "temp")
            node_env[EXECUTION_LOG_ENV] = str(node_log.path)
            gpus: list[str] = []
            if machine_gpus and size_gpus:
                gpus = [str((position * size_gpus + k) % machine_gpus) for k in range(size_gpus)]
            all_gpus.extend(g for g in gpus if g not in all_gpus)
            node_env["AZ_BATCHAI_NUM_GPUS"] = str(len(gpus))
            node_env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
            node_envs.append(node_env)

            node_log.write(f"node {node.node_id} (task index {position}) of cluster "
                           f"{cluster.get('name')} ({vm_size}) runs job {job.get('name')} "
                           f"({position + 1} of {node_count} nodes)")
            for mount in cluster_mounts:
                node_log.write(f"cluster mount: {mount}")
            for mount in job_mounts:
                node_log.write(f"job mount: {mount}")
            if machine_gpus and size_gpus:
                node_log.write(f"GPUs: {len(gpus)} of this machine's {machine_gpus} "
                               f"(CUDA_VISIBLE_DEVICES={node_env['CUDA_VISIBLE_DEVICES']})")
            elif size_gpus:
                node_log.write(f"GPUs: {vm_size} has {size_gpus} but this machine has none; the job runs on "
                               "CPU (CUDA_VISIBLE_DEVICES is empty)")
            elif size_gpus is None:
                node_log.write(f"GPUs: none (VM size {vm_size!r} is not in the local size table); the job runs "
                               "on CPU")
            else:
                node_log.write(f"GPUs: none ({vm_size} has no GPU); the job runs on CPU")
            if container:
                node_log.write(f"no container engine: running on the host Python ({sys.executable}) instead of "
                               f"{container}")
            names = sorted(n for n in node_env if n.startswith(("AZ_BATCHAI_", "AZ_BATCH_")))
            user_names = [str(v["name"]) for v in props.get("environmentVariables") or []]
            secret_names = [str(v["name"]) for v in props.get("secrets") or []]
            node_log.write("variables: " + ", ".join(names + user_names))
            if secret_names:
                node_log.write("secret variables (values not shown): " + ", ".join(secret_names))

        # Job preparation, on every node at once.
        preparation = (props.get("jobPreparation") or {}).get("commandLine")
        if preparation:
            failed = self._run_job_preparation(preparation, node_envs, stdouterr, node_count, shims if container else None,
                                               deadline)
            if self.stop_reason is not None:
                return RunResult(ExecutionState.FAILED)
            if failed:
                node, code = failed
                out_name, err_name = job_prep_log_names(node.node_id, node_count)
                return RunResult(ExecutionState.FAILED, exit_code=code, errors=[job_error(
                    "JobPreparationFailed",
                    f"Job preparation failed on node {node.node_id} with exit code {code}; see {err_name} and "
                    f"{out_name} in the stdouterr output directory.")])

        # The toolkit, on the master node.
        master_env = dict(node_envs[0])
        master_env["CUDA_VISIBLE_DEVICES"] = ",".join(all_gpus)
        argv = self._toolkit_argv(props, process_count)
        master_log = self._logs[self.nodes[0].node_id]
        master_log.write(f"starting {props.get('toolType') or 'the job'}: {argv[-1] if argv[0] == '/bin/bash' else ' '.join(argv)}")
        proc = self._spawn(argv, master_env, root / "nodes" / self.nodes[0].node_id / "wd",
                           stdouterr / "stdout.txt", stdouterr / "stderr.txt")
        returncode = self._wait(proc, deadline)
        if returncode is None:
            master_log.write(f"stopped: {self.stop_reason.value if self.stop_reason else 'unknown'}")
            return RunResult(ExecutionState.FAILED)
        code = _exit_code(returncode)
        master_log.write(f"the job's command exited with code {code}")
        if code == 0:
            return RunResult(ExecutionState.SUCCEEDED, exit_code=0)
        return RunResult(ExecutionState.FAILED, exit_code=code, errors=[job_error(
            "JobFailed", f"The job's command exited with exit code {code}; see stderr.txt and stdout.txt in the "
                         "stdouterr output directory.")])

    @staticmethod
    def _process_count(props: dict[str, Any], node_count: int) -> int:
        for name in ("horovodSettings", "customMpiSettings"):
            settings = props.get(name)
            if settings and settings.get("processCount"):
                return int(settings["processCount"])
        return node_count

    def _toolkit_argv(self, props: dict[str, Any], process_count: int) -> list[str]:
        horovod = props.get("horovodSettings")
        if horovod:
            horovodrun = Path(sys.executable).parent / "horovodrun"
            if not horovodrun.exists():
                raise JobStartError("HorovodNotInstalled",
                                    f"horovodrun was not found next to {sys.executable}; install horovod "
                                    "into the local service's Python environment")
            python = horovod.get("pythonInterpreterPath") or shlex.quote(sys.executable)
            # The script path and arguments go to the shell as written, so that the shell expands
            # $AZ_BATCHAI_* variables and splits the arguments, as it did on a Batch AI node.
            command = (f"exec {shlex.quote(str(horovodrun))} -np {process_count} -H localhost:{process_count} "
                       f"--gloo {python} {horovod['pythonScriptFilePath']} {horovod.get('commandLineArgs') or ''}")
            return ["/bin/bash", "-c", command.rstrip()]
        for name in ("customMpiSettings", "customToolkitSettings"):
            settings = props.get(name)
            if settings is not None:
                command = settings.get("commandLine")
                if not command:
                    raise JobStartError("InvalidJob", f"{name}.commandLine is empty; nothing to run")
                return ["/bin/bash", "-c", str(command)]
        raise JobStartError("UnsupportedToolkit", f"The local service cannot run {props.get('toolType')!r} jobs; "
                                                  "use horovodSettings, customMpiSettings or customToolkitSettings")

    def _spawn(self, argv: list[str], env: dict[str, str], cwd: Path, stdout: Path,
               stderr: Path) -> "subprocess.Popen[bytes]":
        with self._lock:
            if self.stop_reason is not None:
                raise _Stopped()
            with open(stdout, "ab", buffering=0) as out, open(stderr, "ab", buffering=0) as err:
                proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=err, start_new_session=True, close_fds=True)
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
                self._stopped_exit_code = _exit_code(proc.wait())
                return None

    def _run_job_preparation(self, command: str, node_envs: list[dict[str, str]], stdouterr: Path,
                             node_count: int, shims: Optional[Path],
                             deadline: float) -> Optional[tuple[NodeSlot, int]]:
        """Run jobPreparation on every node; the first node that failed and its exit code, if any."""
        procs = []
        for node, node_env in zip(self.nodes, node_envs):
            env = dict(node_env)
            if shims is not None:
                env["PATH"] = os.pathsep.join([str(shims), env["PATH"]])
            out_name, err_name = job_prep_log_names(node.node_id, node_count)
            self._logs[node.node_id].write("running job preparation"
                                           + (" (package installs for the container image are skipped)"
                                              if shims is not None else ""))
            try:
                proc = self._spawn(["/bin/bash", "-c", command], env,
                                   job_dir(self.backend, self.job_id) / "nodes" / node.node_id / "wd",
                                   stdouterr / out_name, stdouterr / err_name)
            except _Stopped:
                return None
            procs.append((node, proc))
        failed: Optional[tuple[NodeSlot, int]] = None
        for node, proc in procs:
            returncode = self._wait(proc, deadline)
            if returncode is None:
                return None
            code = _exit_code(returncode)
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


# -- cluster node preparation ---------------------------------------------------------------------

def prepare_node(backend: Any, cluster_id: str, node: NodeSlot, tag: str) -> Optional[dict[str, Any]]:
    """Mount the cluster's volumes and run its setup task (``nodeSetup.setupTask``) on one node.

    Returns the cluster error to report (the node is then unusable), or None when the node is
    ready. The setup task's processes carry ``tag`` so that the scheduler can stop them.
    """
    cluster = backend.store.get(cluster_id)
    if cluster is None:
        return None
    props = cluster.get("properties", {})
    private = backend.store.get_private(cluster_id)
    node_setup = props.get("nodeSetup") or {}
    mount_root = cluster_dir(backend, cluster_id) / "mounts"
    mount_root.mkdir(parents=True, exist_ok=True)
    try:
        apply_mounts(plan_mounts(backend, node_setup.get("mountVolumes"), private, mount_root,
                                 where="nodeSetup.mountVolumes"))
    except MountError as exc:
        return job_error("MountFailed", f"Mounting volumes failed on node {node.node_id}: {exc}",
                         [("nodeId", node.node_id)])
    task = node_setup.get("setupTask")
    if not task or not task.get("commandLine"):
        return None
    env: dict[str, str] = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    for variable in task.get("environmentVariables") or []:
        env[str(variable["name"])] = str(variable.get("value", ""))
    secrets = private.get("setupTaskSecrets") or {}
    for variable in task.get("secrets") or []:
        if str(variable["name"]) in secrets:
            env[str(variable["name"])] = str(secrets[str(variable["name"])])
    node_root = cluster_dir(backend, cluster_id) / "nodes" / node.node_id
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
                                    close_fds=True)
    except OSError as exc:
        return job_error("SetupTaskFailed", f"The setup task could not start on node {node.node_id}: "
                                            f"{exc.strerror} ({exc.filename})", [("nodeId", node.node_id)])
    code = _exit_code(proc.wait())
    stop_tagged(tag, [proc.pid], grace=0)  # nothing it started outlives it
    if code != 0:
        return job_error("SetupTaskFailed", f"The setup task failed on node {node.node_id} with exit code {code}; "
                                            f"see {out_dir / 'stderr.txt'}.", [("nodeId", node.node_id)])
    return None
