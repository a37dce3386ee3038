"""The shell command an Azure ML job runs on every process: the Batch AI job's world, rebuilt.

Azure ML mounts each datastore input and output at a path of its choosing and substitutes it
for ``${{inputs.<name>}}`` / ``${{outputs.<name>}}`` in the command. The command links every share under
``$AZ_BATCHAI_JOB_MOUNT_ROOT/<relativeMountPath>`` so the tutorial's paths resolve unchanged,
sets the ``AZ_BATCHAI_*`` variables a job.json and its script use, runs the job preparation once
per node (local rank 0; the node's other processes wait for it), then the script.
It is plain POSIX sh: Azure ML starts it once per MPI process (``distribution: Mpi``).

A sweep's trials share one command, so a trial's command names its job by the run id Azure ML
sets on its nodes (``$AZUREML_RUN_ID``, the child job's name): each trial gets its own
stdouterr directory and its own ``$AZ_BATCHAI_OUTPUT_TRIAL``, where the ``training`` package
writes its results instead of a fixed ``--dir``. Azure ML substitutes ``${{search_space.<name>}}``
in the command only, so variables that name a parameter are exported by the command.
"""
from __future__ import annotations

import shlex
from typing import Mapping

from ..._models.job_spec import HorovodJob
from ..._models.sweep_job import PLACEHOLDER

__all__ = ["node_command", "input_placeholder", "output_placeholder", "stdouterr_under_prefix", "swept_variables",
           "WORK_ROOT", "RUN_ID_VARIABLE", "TRIAL_OUTPUT_VARIABLE"]

#: where the job's mount links and temporary directories live on a node
WORK_ROOT = "${TMPDIR:-/tmp}/azbatchai"
#: the job's name on its nodes (Azure ML sets it for every job; a sweep trial's is its child job's)
RUN_ID_VARIABLE = "AZUREML_RUN_ID"
#: a sweep trial's own output directory (the ``training`` package's name for it)
TRIAL_OUTPUT_VARIABLE = "AZ_BATCHAI_OUTPUT_TRIAL"


def swept_variables(variables: Mapping[str, str]) -> dict[str, str]:
    """The environment variables whose values name a sweep parameter (the command exports them)."""
    return {name: value for name, value in variables.items() if PLACEHOLDER.search(value)}


def stdouterr_under_prefix(job_name: str) -> str:
    """Where ``$AZ_BATCHAI_STDOUTERR_DIR`` is under the job's stdOutErrPathPrefix."""
    return f"{job_name}/stdouterr"


def output_placeholder(output_name: str) -> str:
    """What Azure ML replaces with the mount path of output ``output_name``."""
    return "${{outputs." + output_name + "}}"


def input_placeholder(input_name: str) -> str:
    """What Azure ML replaces with the mount path of input ``input_name``."""
    return "${{inputs." + input_name + "}}"


def node_command(spec: HorovodJob, *, job_name: str, mounts: Mapping[str, str], sweep_trial: bool = False) -> str:
    """The command for ``spec``; ``mounts`` maps each mount's relativeMountPath to the
    placeholder of the job input or output that mounts its datastore. For a sweep's trial
    (``sweep_trial``) the job is named by ``$AZUREML_RUN_ID`` on the node, not ``job_name``."""
    job = f'"${RUN_ID_VARIABLE}"' if sweep_trial else shlex.quote(job_name)
    lines = ["set -e"]
    if sweep_trial:  # without it every trial would write into one directory
        lines.append(f': "${{{RUN_ID_VARIABLE}:?is not set: Azure ML sets it for every job}}"')
    lines += [
        f'export AZ_BATCHAI_MOUNT_ROOT="{WORK_ROOT}/mounts"',
        f'export AZ_BATCHAI_JOB_MOUNT_ROOT="{WORK_ROOT}/jobs/"{job}"/mounts"',
        f'export AZ_BATCHAI_JOB_TEMP="{WORK_ROOT}/jobs/"{job}"/temp"',
        'export AZ_BATCHAI_TASK_INDEX="${OMPI_COMM_WORLD_RANK:-0}"',
        "export AZ_BATCHAI_NUM_GPUS=\"$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)\"",
        'mkdir -p "$AZ_BATCHAI_MOUNT_ROOT" "$AZ_BATCHAI_JOB_MOUNT_ROOT" "$AZ_BATCHAI_JOB_TEMP"',
    ]
    for relative, placeholder in mounts.items():
        link = '"$AZ_BATCHAI_JOB_MOUNT_ROOT"/' + shlex.quote(relative)
        lines.append(f'mkdir -p "$(dirname {link})"')
        lines.append(f'ln -sfn "{placeholder}" {link}')
    for directory in spec.input_directories:
        # The path is the node's, with its $AZ_BATCHAI_* variables: expanded here, as Batch AI did.
        lines.append(f'export AZ_BATCHAI_INPUT_{directory.id}="{_double_quoted(directory.path)}"')
    prefix = _double_quoted(spec.std_out_err_path_prefix or "")
    if spec.std_out_err_path_prefix:
        leaf = stdouterr_under_prefix("").lstrip("/")
        lines.append(f'export AZ_BATCHAI_STDOUTERR_DIR="{prefix}/"{job}"/{leaf}"')
        lines.append('mkdir -p "$AZ_BATCHAI_STDOUTERR_DIR"')
    if sweep_trial:  # beside its stdouterr, as the local service places it
        where = f'"{prefix}/"{job}"/outputs"' if spec.std_out_err_path_prefix else '"$AZ_BATCHAI_JOB_TEMP/outputs"'
        lines.append(f"export {TRIAL_OUTPUT_VARIABLE}={where}")
        lines.append(f'mkdir -p "${TRIAL_OUTPUT_VARIABLE}"')
        for name, value in swept_variables(spec.environment_variables).items():
            lines.append(f'export {name}="{_double_quoted(value)}"')
    if spec.job_preparation:
        done, failed = '"$AZ_BATCHAI_JOB_TEMP/.prepared"', '"$AZ_BATCHAI_JOB_TEMP/.preparation-failed"'
        lines.append(
            'if [ "${OMPI_COMM_WORLD_LOCAL_RANK:-0}" = 0 ]; then '
            f"if ( {spec.job_preparation}\n ); then touch {done}; "
            f'else touch {failed}; echo "job preparation failed" >&2; exit 1; fi; '
            f"else while [ ! -e {done} ]; do if [ -e {failed} ]; then exit 1; fi; sleep 1; done; fi")
    interpreter = spec.interpreter or "python"
    run = f"exec {interpreter} {spec.script}"
    if spec.arguments:
        run += f" {spec.arguments}"
    lines.append(run)
    return "\n".join(lines)


def _double_quoted(text: str) -> str:
    """``text`` for a double-quoted sh string: ``$VARIABLES`` still expand, nothing else does."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
