"""``horovod-batchai job``: create, show, list, wait, stream, terminate, delete, ``file list`` and
``file download``."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .. import (AzureFileShareMount, ExecutionState, FileShare, HorovodJob, InvalidSpecError, JobFailedError, JobStatus,
                WaitTimeoutError)
from .context import EXIT_FAILED, EXIT_TIMEOUT, Context, UsageError, local_dest
from .parser import _Commands, _exp, _name, _Parser, _positive, _timeout
from .views import Result, Table, job_data, job_table, output_files_data, output_files_table


STORAGE_ACCOUNT_ENV = "AZURE_BATCHAI_STORAGE_ACCOUNT"  # what az batchai job create read too


def _job_spec(ctx: Context) -> HorovodJob:
    """The job.json, with storage placeholders and keys filled, the node count and arguments varied."""
    args = ctx.args
    if args.package_environment and args.target != "azureml":
        raise UsageError("--package-environment: only Azure ML builds the package's Docker environment; "
                         f"drop it with --target {args.target}")
    if not args.config_file.is_file():
        raise InvalidSpecError("--config-file", f"{str(args.config_file)!r} is not a file", "the path of a job.json")
    spec = HorovodJob.from_file(args.config_file)
    account = args.storage_account_name or os.environ.get(STORAGE_ACCOUNT_ENV)
    if spec.needs_storage:
        if not account:
            raise InvalidSpecError("--storage-account-name", f"{args.config_file} mounts a file share whose "
                                   "storage account or key is not given",
                                   f"--storage-account-name NAME (or ${STORAGE_ACCOUNT_ENV}), the account that "
                                   "<AZURE_BATCHAI_STORAGE_ACCOUNT> stands for")
        share_name = next((m.share_name for m in spec.mounts if isinstance(m, AzureFileShareMount)), None) or "myshare"
        share = FileShare(ctx.target, args.storage_resource_group or args.resource_group, account, share_name)
        spec = spec.with_storage(share)
    changes: dict[str, Any] = {}
    if args.append_args:
        changes["arguments"] = f"{spec.arguments} {args.append_args}".strip()
    if args.package_environment:
        # job.json's TensorFlow 1.8 image cannot run the training package, nor does its preparation apply
        changes.update(container_image=None, job_preparation=None)
    if args.node_count is not None:
        changes["node_count"] = args.node_count
        if spec.process_count is not None:
            # Keep the processes per node of the file (one per node unless it said otherwise).
            per_node = spec.process_count // spec.node_count if spec.process_count % spec.node_count == 0 else None
            changes["process_count"] = per_node * args.node_count if per_node else None
    return spec.replace(**changes) if changes else spec


def job_create(ctx: Context) -> Result:
    spec = _job_spec(ctx)
    job = ctx.experiment().submit(ctx.args.name, spec, cluster=ctx.args.cluster)
    return Result(job_data(job, job.status), job_table([(job, job.status)]))


def job_show(ctx: Context) -> Result:
    job = ctx.job()
    status = job.refresh().status
    return Result(job_data(job, status), job_table([(job, status)]))


def job_list(ctx: Context) -> Result:
    jobs = ctx.experiment().list_jobs()
    pairs = [(j, j.status) for j in jobs]
    return Result([job_data(j, s) for j, s in pairs], job_table(pairs))


def job_wait(ctx: Context) -> Result:
    job = ctx.job()
    job.refresh()  # a missing job is "not found" (3), not a timeout
    try:
        status = job.wait(timeout=ctx.args.timeout)
    except JobFailedError as err:
        return Result(job_data(job, job.status), job_table([(job, job.status)]), EXIT_FAILED, str(err))
    except WaitTimeoutError as err:  # where the job stands is printed too (-o json included)
        last = err.last_state if isinstance(err.last_state, JobStatus) else job.refresh().status
        return Result(job_data(job, last), job_table([(job, last)]), EXIT_TIMEOUT, str(err))
    return Result(job_data(job, status), job_table([(job, status)]))


def job_terminate(ctx: Context) -> Result:
    job = ctx.job()
    status = job.terminate()
    return Result(job_data(job, status), job_table([(job, status)]))


def job_delete(ctx: Context) -> Result:
    job = ctx.job()
    job.delete()
    return Result({"deleted": [job.id]}, Table(["Deleted"], [[job.id]]))


def job_stream(ctx: Context) -> Result:
    """Write the file's text as the job appends it; the exit status is the job's."""
    job = ctx.job()
    job.refresh()
    for text in job.stream(ctx.args.file, output_directory_id=ctx.args.output_directory_id,
                           timeout=ctx.args.timeout):
        sys.stdout.write(text)
        sys.stdout.flush()
    status = job.refresh().status
    if status.execution_state is ExecutionState.FAILED:
        return Result(quiet=True, exit_code=EXIT_FAILED,
                      error=f"job {job.name!r} failed with exit code {status.exit_code}"
                            + "".join(f"; {e}" for e in status.errors))
    return Result(quiet=True)


def job_file_list(ctx: Context) -> Result:
    job = ctx.job(ctx.args.job)
    job.refresh()
    files = job.list_output_files(ctx.args.output_directory_id, ctx.args.directory)
    return Result(output_files_data(files), output_files_table(files))


def job_file_download(ctx: Context) -> Result:
    job = ctx.job(ctx.args.job)
    job.refresh()
    dest = job.download(ctx.args.path, local_dest(ctx.args.dest), output_directory_id=ctx.args.output_directory_id)
    return Result({"downloaded": [str(dest)]}, Table(["Downloaded"], [[str(dest)]]))


def register(c: _Commands) -> None:
    sub = c.group("job", "jobs: submit, watch, stream, stop")
    p = c.command(sub, "create", job_create, "submit a Horovod job described by a job.json")
    _exp(p)
    _name(p, "job")
    p.add_argument("-c", "--cluster", required=True, help="cluster to run on (in the same workspace)")
    p.add_argument("-f", "--config-file", type=Path, required=True, help="job.json, e.g. the tutorial's")
    p.add_argument("--storage-account-name", default=None,
                   help=f"storage account that fills <AZURE_BATCHAI_STORAGE_ACCOUNT> and whose key the file share "
                        f"mounts get (default: ${STORAGE_ACCOUNT_ENV})")
    p.add_argument("--storage-resource-group", default=None,
                   help="resource group of that storage account (default: --resource-group)")
    p.add_argument("--node-count", type=_positive, default=None, help="override the file's nodeCount")
    p.add_argument("--package-environment", action="store_true",
                   help="Azure ML only: run in the image built from the package's Dockerfile (TensorFlow 2.15.1, "
                        "Horovod 0.28.1) instead of the file's containerSettings and jobPreparation (the "
                        "tutorial's TensorFlow 1.8 image cannot run its training package); the build context is "
                        "uploaded through the same client options as every other request")
    p.add_argument("--append-args", default=None, metavar="ARGS",
                   help="arguments appended to the file's commandLineArgs, e.g. '--epochs=3' "
                        "(the node expands $AZ_BATCHAI_* variables in them)")
    for verb, func, text in (("show", job_show, "show a job's state"),
                             ("terminate", job_terminate, "stop a job; it ends failed"),
                             ("delete", job_delete, "delete a job (stopping it if it runs)")):
        p = c.command(sub, verb, func, text)
        _exp(p)
        _name(p, "job")
    _exp(c.command(sub, "list", job_list, "list the jobs of an experiment"))
    p = c.command(sub, "wait", job_wait, "wait until a job ends; exit 1 if it failed")
    _exp(p)
    _name(p, "job")
    _timeout(p, None, "the job")
    p = c.command(sub, "stream", job_stream, "print an output file as the job writes it; exit 1 if the job failed")
    _exp(p)
    _name(p, "job")
    p.add_argument("--file", default="stdout.txt", help="the file (default: stdout.txt)")
    p.add_argument("--output-directory-id", default="stdouterr", help="output directory (default: stdouterr)")
    _timeout(p, None, "the job")
    files = sub.add_parser("file", help="a job's output files", description="a job's output files")
    files_sub = files.add_subparsers(dest="file_verb", metavar="VERB", required=True, parser_class=_Parser)
    for verb, func, text in (("list", job_file_list, "list a job's output files (names, sizes, times)"),
                             ("download", job_file_download, "download one of a job's output files")):
        p = c.command(files_sub, verb, func, text)
        _exp(p)
        p.add_argument("-j", "--job", required=True, help="job name")
        p.add_argument("-d", "--output-directory-id", default="stdouterr",
                       help="output directory (default: stdouterr: stdout.txt, stderr.txt, logs)")
        if verb == "list":
            p.add_argument("--directory", default=".", help="directory inside it (default: .)")
        else:
            p.add_argument("--path", required=True, help="file (or directory) inside it, e.g. stdout.txt")
            p.add_argument("--dest", default=".", help="local file or directory (default: .)")
