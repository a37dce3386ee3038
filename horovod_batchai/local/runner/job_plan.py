"""What one run of a job will do, decided before anything happens: a pure function of the job, its
cluster, its nodes and this machine.

:func:`plan_job` lays out a run the way Batch AI lays it out on its nodes. A local node is a slot
on this machine, so a job's nodes share one file system:

- ``$AZ_BATCHAI_MOUNT_ROOT`` (per cluster) holds the cluster's mounts and ``$AZ_BATCHAI_JOB_MOUNT_ROOT``
  (per job) the job's own (see ``mounts.py``);
- ``{stdOutErrPathPrefix}/{jobOutputDirectoryPathSegment}/stdouterr/`` receives ``stdout.txt``,
  ``stderr.txt``, each node's execution log and job-preparation output; output directories are
  ``{pathPrefix}/{jobOutputDirectoryPathSegment}/outputs/{pathSuffix}``, as the recorded service put
  them;
- ``jobPreparation`` runs first on every node; then the toolkit runs on the master node:
  ``horovodrun -np <processCount> -H localhost:<processCount> --gloo <python> <script> <args>`` for
  Horovod (horovodrun's own launcher, started through ``horovodrun.py``, which spares it importing
  TensorFlow before any rank starts), or the command line under ``/bin/bash -c`` for custom MPI and
  custom toolkit jobs.
  Command lines reach a shell untouched, so ``$AZ_BATCHAI_*`` variables are expanded on the node.
- Every process starts from a clean environment (``environment.py``), never the service's. The
  job's secrets are in the environments of its processes and nowhere else: horovodrun, which
  copies its environment onto each rank's command line, runs without them (``env -u``), and each
  rank gets them from a 0600 file in the run's directory through ``rank_exec.py``. horovodrun's
  ``[<rank>]<stdout>:`` tags are taken off the lines of ``stdout.txt`` and ``stderr.txt``; each
  rank's own lines also go to ``ranks/rank.<rank>/`` in the stdouterr directory.

The plan is data: directories to create, mounts, every node's environment, the exact argv of each
process, the execution logs' opening lines. ``job_executor.py`` carries it out.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ..core.durations import parse_duration
from .mounts import Mount
from .node_setup import NodeSlot
from .output_dirs import STDOUTERR
from .paths import execution_log_name, expand_vars, job_prep_log_names
from .paths import job_mount_root as mount_root_of_job
from .processes import RUN_TAG_ENV
from .states import job_error

__all__ = ["Machine", "NodePlan", "Step", "JobPlan", "Tracking", "JobStartError", "plan_job", "EXECUTION_LOG_ENV",
           "DEFAULT_WALL_CLOCK_S", "RANK_SECRETS_FILE"]


#: the file in a run's directory from which each Horovod rank reads the job's secrets (``rank_exec.py``).
RANK_SECRETS_FILE = "rank-secrets.json"
#: where a node's execution log is, for the package-manager stand-ins of container jobs.
EXECUTION_LOG_ENV = "HOROVOD_BATCHAI_EXECUTION_LOG"
#: constraints.maxWallClockTime when the job says none (Batch AI's default, 7 days).
DEFAULT_WALL_CLOCK_S = 7 * 86400.0


class JobStartError(Exception):
    """The job cannot start; ``error`` is its executionInfo error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.error = job_error(code, message)


@dataclass(frozen=True)
class Machine:
    """What a plan needs to know of this machine."""
    python: str                      # the interpreter jobs run with (the node runtime's)
    horovodrun: str                  # horovodrun.py: horovodrun's launcher, run with ``python``
    rank_exec: str                   # rank_exec.py: starts a rank with the job's secrets from a file
    environment: Mapping[str, str]   # what the job's processes start from (environment.base_environment)
    gpus: int                        # NVIDIA GPUs this machine has


@dataclass(frozen=True)
class Step:
    """One process to start."""
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(repr=False)   # holds the job's secrets
    cwd: Path
    stdout: Path
    stderr: Path
    #: horovodrun's output: lines go to stdout/stderr without their ``[<rank>]<stream>:`` tags, and
    #: each rank's also to ``<split_ranks>/rank.<rank>/stdout.txt`` / ``stderr.txt`` (None: as they come)
    split_ranks: Optional[Path] = None
    rank_count: int = 0


@dataclass(frozen=True)
class NodePlan:
    node: NodeSlot
    env: Mapping[str, str] = field(repr=False)   # holds the job's secrets
    execution_log: Path
    log_lines: tuple[str, ...]       # what its execution log says before anything runs


@dataclass(frozen=True)
class JobPlan:
    directories: tuple[Path, ...]    # created first, in order
    cluster_mounts: tuple[Mount, ...]
    job_mounts: tuple[Mount, ...]
    outputs: tuple[tuple[str, Path], ...]    # (output directory id, where it is), stdouterr first
    host_file: Path
    host_file_text: str
    nodes: tuple[NodePlan, ...]
    container: Optional[str]         # the image the job names (the host's Python runs it here)
    shims: Optional[Path]            # where the package-manager stand-ins go when it names one
    preparation: tuple[Step, ...]    # jobPreparation, one per node (empty when there is none)
    toolkit: Step                    # the toolkit's command, on the master node
    toolkit_summary: str             # for the master node's execution log
    wall_clock_s: float
    run_dir: Path                    # the run's private directory (0700): its supervisor's files
    #: the secrets each Horovod rank adds to its environment (``rank_exec.py``), and where they go
    rank_secrets_file: Optional[Path] = None
    rank_secrets: Mapping[str, str] = field(default_factory=dict, repr=False)


def _process_count(props: Mapping[str, Any], node_count: int) -> int:
    for name in ("horovodSettings", "customMpiSettings"):
        settings = props.get(name)
        if settings and settings.get("processCount"):
            return int(settings["processCount"])
    return node_count


def _toolkit_argv(props: Mapping[str, Any], process_count: int, machine: Machine,
                  secrets_file: Optional[Path], secret_names: Sequence[str]) -> tuple[str, ...]:
    horovod = props.get("horovodSettings")
    if horovod:
        python = horovod.get("pythonInterpreterPath") or shlex.quote(machine.python)
        # horovodrun writes its environment into every rank's command line, so it runs without the
        # secrets (env -u takes names, never values) and each rank reads them from a 0600 file.
        unset = "".join(f"-u {shlex.quote(name)} " for name in secret_names)
        start = (f"env {unset}" if unset else "") + f"{shlex.quote(machine.python)} {shlex.quote(machine.horovodrun)}"
        rank = (f"{shlex.quote(machine.python)} {shlex.quote(machine.rank_exec)} {shlex.quote(str(secrets_file))} -- "
                if secrets_file is not None else "")
        # The script path and arguments go to the shell as written, so that the shell expands
        # $AZ_BATCHAI_* variables and splits the arguments, as it did on a Batch AI node.
        command = (f"exec {start} -np {process_count} -H localhost:{process_count} --gloo "
                   f"{rank}{python} {horovod['pythonScriptFilePath']} {horovod.get('commandLineArgs') or ''}")
        return ("/bin/bash", "-c", command.rstrip())
    for name in ("customMpiSettings", "customToolkitSettings"):
        settings = props.get(name)
        if settings is not None:
            command = settings.get("commandLine")
            if not command:
                raise JobStartError("InvalidJob", f"{name}.commandLine is empty; nothing to run")
            return ("/bin/bash", "-c", str(command))
    raise JobStartError("UnsupportedToolkit", f"The local service cannot run {props.get('toolType')!r} jobs; "
                                              "use horovodSettings, customMpiSettings or customToolkitSettings")


def _gpu_lines(vm_size: str, size_gpus: Optional[int], machine_gpus: int, given: Sequence[str]) -> str:
    if machine_gpus and size_gpus:
        return f"GPUs: {len(given)} of this machine's {machine_gpus} (CUDA_VISIBLE_DEVICES={','.join(given)})"
    if size_gpus:
        return f"GPUs: {vm_size} has {size_gpus} but this machine has none; the job runs on CPU " \
               "(CUDA_VISIBLE_DEVICES is empty)"
    if size_gpus is None:
        return f"GPUs: none (VM size {vm_size!r} is not in the local size table); the job runs on CPU"
    return f"GPUs: none ({vm_size} has no GPU); the job runs on CPU"


def _shared_environment(props: Mapping[str, Any], job_private: Mapping[str, Any], machine: Machine,
                        mount_root: Path, job_mount_root: Path, shared_temp: Path,
                        run_tag: str) -> tuple[dict[str, str], dict[str, str]]:
    """(the variables every node shares, the job's secrets among them by name)."""
    env: dict[str, str] = dict(machine.environment)
    env["PATH"] = os.pathsep.join([str(Path(machine.python).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    for variable in props.get("environmentVariables") or []:
        env[str(variable["name"])] = str(variable.get("value", ""))
    secrets = job_private.get("secrets") or {}
    job_secrets: dict[str, str] = {}
    for variable in props.get("secrets") or []:
        name = str(variable["name"])
        if name in secrets:
            env[name] = job_secrets[name] = str(secrets[name])
    env.update({
        "AZ_BATCHAI_MOUNT_ROOT": str(mount_root),
        "AZ_BATCHAI_JOB_MOUNT_ROOT": str(job_mount_root),
        "AZ_BATCHAI_SHARED_JOB_TEMP": str(shared_temp),
        RUN_TAG_ENV: run_tag,
    })
    return env, job_secrets


def _directories(props: Mapping[str, Any], env: Mapping[str, str],
                 master_root: Path) -> tuple[Path, list[tuple[str, Path]], dict[str, str]]:
    """(stdouterr, the output directories with stdouterr first, the variables naming them and the
    input directories). Paths are expanded as the master node's shell would expand them: a
    relative one is relative to the node's working directory, never to the service's."""
    segment = str(props.get("jobOutputDirectoryPathSegment") or "")
    expansion_env = {**env, "AZ_BATCHAI_JOB_TEMP": str(master_root / "temp"), "AZ_BATCHAI_TASK_INDEX": "0"}

    def node_path(*parts: str) -> Path:
        return Path(os.path.normpath(master_root / "wd" / Path(*(expand_vars(p, expansion_env) for p in parts))))

    stdouterr = node_path(str(props.get("stdOutErrPathPrefix") or "$AZ_BATCHAI_SHARED_JOB_TEMP"), segment,
                          STDOUTERR)
    variables = {"AZ_BATCHAI_STDOUTERR_DIR": str(stdouterr)}
    outputs: list[tuple[str, Path]] = [(STDOUTERR, stdouterr)]
    for directory in props.get("outputDirectories") or []:
        path = node_path(str(directory["pathPrefix"]), segment, "outputs", str(directory.get("pathSuffix") or ""))
        variables[f"AZ_BATCHAI_OUTPUT_{directory['id']}"] = str(path)
        outputs.append((str(directory["id"]), path))
    for directory in props.get("inputDirectories") or []:
        variables[f"AZ_BATCHAI_INPUT_{directory['id']}"] = str(node_path(str(directory["path"])))
    return stdouterr, outputs, variables


def _node_plans(job: Mapping[str, Any], cluster: Mapping[str, Any], nodes: Sequence[NodeSlot],
                env: Mapping[str, str], job_dir: Path, stdouterr: Path, cluster_mounts: Sequence[Mount],
                job_mounts: Sequence[Mount], size_gpus: Optional[int], machine: Machine,
                container: Optional[str]) -> tuple[list[NodePlan], list[str]]:
    """(each node's environment and the opening lines of its execution log, every GPU handed out)."""
    props = job.get("properties", {})
    vm_size = str(cluster.get("properties", {}).get("vmSize") or "")
    user_names = [str(v["name"]) for v in props.get("environmentVariables") or []]
    secret_names = [str(v["name"]) for v in props.get("secrets") or []]
    node_count = len(nodes)
    node_plans: list[NodePlan] = []
    all_gpus: list[str] = []
    for position, node in enumerate(nodes):
        node_root = job_dir / "nodes" / node.node_id
        execution_log = stdouterr / execution_log_name(node.node_id, node_count)
        node_env = dict(env)
        node_env["AZ_BATCHAI_TASK_INDEX"] = str(position)
        node_env["AZ_BATCHAI_JOB_TEMP"] = node_env["TMPDIR"] = str(node_root / "temp")
        node_env[EXECUTION_LOG_ENV] = str(execution_log)
        gpus: list[str] = []
        if machine.gpus and size_gpus:
            gpus = [str((position * size_gpus + k) % machine.gpus) for k in range(size_gpus)]
        all_gpus.extend(g for g in gpus if g not in all_gpus)
        node_env["AZ_BATCHAI_NUM_GPUS"] = str(len(gpus))
        node_env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        lines = [f"node {node.node_id} (task index {position}) of cluster {cluster.get('name')} ({vm_size}) runs "
                 f"job {job.get('name')} ({position + 1} of {node_count} nodes)"]
        lines += [f"cluster mount: {mount}" for mount in cluster_mounts]
        lines += [f"job mount: {mount}" for mount in job_mounts]
        lines.append(_gpu_lines(vm_size, size_gpus, machine.gpus, gpus))
        if container:
            lines.append(f"no container engine: running on the node runtime ({machine.python}) instead of "
                         f"{container}")
        names = sorted(n for n in node_env if n.startswith(("AZ_BATCHAI_", "AZ_BATCH_")))
        lines.append("variables: " + ", ".join(names + user_names))
        if secret_names:
            lines.append("secret variables (values not shown): " + ", ".join(secret_names))
        node_plans.append(NodePlan(node, node_env, execution_log, tuple(lines)))
    return node_plans, all_gpus


def _preparation(props: Mapping[str, Any], node_plans: Sequence[NodePlan], job_dir: Path, stdouterr: Path,
                 shims: Optional[Path]) -> list[Step]:
    """jobPreparation's command, one step per node (they run at once); none without one."""
    command = (props.get("jobPreparation") or {}).get("commandLine")
    steps: list[Step] = []
    for plan in node_plans if command else ():
        prep_env = dict(plan.env)
        if shims is not None:
            prep_env["PATH"] = os.pathsep.join([str(shims), prep_env["PATH"]])
        out_name, err_name = job_prep_log_names(plan.node.node_id, len(node_plans))
        steps.append(Step(("/bin/bash", "-c", str(command)), prep_env, job_dir / "nodes" / plan.node.node_id / "wd",
                          stdouterr / out_name, stdouterr / err_name))
    return steps


@dataclass(frozen=True)
class Tracking:
    """The job's MLflow run as its processes see it (``tracking/runs.py``): variables, secret
    variables (carried as the job's own secrets are), and the execution log's line about it."""
    env: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    note: str = ""


def plan_job(*, job: Mapping[str, Any], job_private: Mapping[str, Any], cluster: Mapping[str, Any],
             nodes: Sequence[NodeSlot], run_tag: str, job_dir: Path, mount_root: Path,
             cluster_mounts: Sequence[Mount], job_mounts: Sequence[Mount], size_gpus: Optional[int],
             machine: Machine, tracking: Optional[Tracking] = None) -> JobPlan:
    """The plan of one run of ``job`` on ``nodes`` of ``cluster``.

    ``job_dir`` is the job's scratch directory, ``mount_root`` the cluster's mount root; the mounts
    were checked already (``mounts.plan_mounts``); ``size_gpus`` is what the cluster's VM size
    promises (None when the size is unknown). Raises :class:`JobStartError` for a job that cannot run.
    """
    props = job.get("properties", {})
    limit = parse_duration(str((props.get("constraints") or {}).get("maxWallClockTime") or "P7D"))
    job_mount_root, shared_temp = mount_root_of_job(job_dir), job_dir / "shared"
    node_count = len(nodes)
    process_count = _process_count(props, node_count)
    env, job_secrets = _shared_environment(props, job_private, machine, mount_root, job_mount_root, shared_temp,
                                           run_tag)
    if tracking is not None:
        env.update(tracking.env)
        env.update(tracking.secrets)
        job_secrets.update(tracking.secrets)
    master_root = job_dir / "nodes" / nodes[0].node_id
    stdouterr, outputs, variables = _directories(props, env, master_root)
    env.update(variables)
    host_file = job_dir / "hostfile"
    per_node = max(1, -(-process_count // node_count))
    env["AZ_BATCHAI_MPI_HOST_FILE"] = str(host_file)
    # Azure Batch's own names for the same list, which MPI scripts of the era read.
    env["AZ_BATCH_HOST_LIST"] = ",".join("localhost" for _ in nodes)
    env["AZ_BATCH_NODE_LIST"] = ";".join("localhost" for _ in nodes)

    container = (props.get("containerSettings") or {}).get("imageSourceRegistry", {}).get("image")
    shims = job_dir / "shims" if container else None
    node_plans, all_gpus = _node_plans(job, cluster, nodes, env, job_dir, stdouterr, cluster_mounts, job_mounts,
                                       size_gpus, machine, container)
    if tracking is not None and tracking.note:
        node_plans = [NodePlan(p.node, p.env, p.execution_log, (*p.log_lines, tracking.note)) for p in node_plans]
    directories = [mount_root, job_mount_root, shared_temp]
    for plan in node_plans:
        node_root = job_dir / "nodes" / plan.node.node_id
        directories += [node_root / "temp", node_root / "wd"]
    directories += [path for _, path in outputs]

    # The toolkit, on the master node.
    master_env = dict(node_plans[0].env)
    master_env["CUDA_VISIBLE_DEVICES"] = ",".join(all_gpus)
    run_dir = job_dir / "runs" / run_tag
    horovod = bool(props.get("horovodSettings"))
    secrets_file = run_dir / RANK_SECRETS_FILE if horovod and job_secrets else None
    argv = _toolkit_argv(props, process_count, machine, secrets_file, sorted(job_secrets))
    toolkit = Step(argv, master_env, master_root / "wd", stdouterr / "stdout.txt", stdouterr / "stderr.txt",
                   split_ranks=stdouterr / "ranks" if horovod else None, rank_count=process_count if horovod else 0)
    summary = f"starting {props.get('toolType') or 'the job'}: " + (argv[-1] if argv[0] == "/bin/bash"
                                                                     else " ".join(argv))
    return JobPlan(
        directories=tuple(directories), cluster_mounts=tuple(cluster_mounts), job_mounts=tuple(job_mounts),
        outputs=tuple(outputs), host_file=host_file,
        host_file_text="".join(f"localhost slots={per_node}\n" for _ in nodes), nodes=tuple(node_plans),
        container=container, shims=shims,
        preparation=tuple(_preparation(props, node_plans, job_dir, stdouterr, shims)), toolkit=toolkit,
        toolkit_summary=summary,
        wall_clock_s=limit if limit is not None else DEFAULT_WALL_CLOCK_S, run_dir=run_dir,
        rank_secrets_file=secrets_file, rank_secrets=job_secrets if secrets_file is not None else {})
