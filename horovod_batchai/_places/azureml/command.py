"""The shell command an Azure ML job runs on every process: the Batch AI job's world, rebuilt.

Azure ML mounts each datastore input and output at a path of its choosing and substitutes it
for ``${{inputs.<name>}}`` / ``${{outputs.<name>}}`` in the command. The command links every share under
``$AZ_BATCHAI_JOB_MOUNT_ROOT/<relativeMountPath>`` so the tutorial's paths resolve unchanged,
sets the ``AZ_BATCHAI_*`` variables a job.json and its script use, runs the job preparation once
per node (local rank 0; the node's other processes wait for it), then the script.
It is plain POSIX sh: Azure ML starts it once per MPI process (``distribution: Mpi``).
"""
from __future__ import annotations

import shlex
from typing import Mapping

from ..._models.job_spec import HorovodJob

__all__ = ["node_command", "input_placeholder", "output_placeholder", "stdouterr_under_prefix", "WORK_ROOT"]

#: where the job's mount links and temporary directories live on a node
WORK_ROOT = "${TMPDIR:-/tmp}/azbatchai"


def stdouterr_under_prefix(job_name: str) -> str:
    """Where ``$AZ_BATCHAI_STDOUTERR_DIR`` is under the job's stdOutErrPathPrefix."""
    return f"{job_name}/stdouterr"


def output_placeholder(output_name: str) -> str:
    """What Azure ML replaces with the mount path of output ``output_name``."""
    return "${{outputs." + output_name + "}}"


def input_placeholder(input_name: str) -> str:
    """What Azure ML replaces with the mount path of input ``input_name``."""
    return "${{inputs." + input_name + "}}"


def node_command(spec: HorovodJob, *, job_name: str, mounts: Mapping[str, str]) -> str:
    """The command for ``spec``; ``mounts`` maps each mount's relativeMountPath to the
    placeholder of the job input or output that mounts its datastore."""
    job = shlex.quote(job_name)
    lines = [
        "set -e",
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
    if spec.std_out_err_path_prefix:
        job_dir, _, leaf = stdouterr_under_prefix(job_name).partition("/")
        lines.append(f'export AZ_BATCHAI_STDOUTERR_DIR="{_double_quoted(spec.std_out_err_path_prefix)}/"'
                     f'{shlex.quote(job_dir)}"/{leaf}"')
        lines.append('mkdir -p "$AZ_BATCHAI_STDOUTERR_DIR"')
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
