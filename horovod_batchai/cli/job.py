"""``horovod-batchai job``: create, show, list, wait, stream, terminate, delete, ``file list`` and
``file download``."""
from __future__ import annotations

import sys

from .. import ExecutionState, JobFailedError
from .context import EXIT_FAILED, Context, local_dest
from .parser import _Commands, _exp, _job_file, _name, _Parser, _timeout, job_spec_from_args
from .views import Result, Table, job_data, job_table, output_files_data, output_files_table


def job_create(ctx: Context) -> Result:
    spec = job_spec_from_args(ctx)
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
    _job_file(p)
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
