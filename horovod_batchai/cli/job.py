"""``horovod-batchai job``: create, show, list, wait, stream, terminate, delete, ``file list``,
``file download``, ``metrics`` and ``tensorboard``."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from .. import ExecutionState, JobFailedError, JobStatus, WaitTimeoutError
from .._shared.metrics import format_number, json_records
from .context import EXIT_FAILED, EXIT_TIMEOUT, Context, UsageError, local_dest
from .parser import _Commands, _exp, _job_file, _name, _Parser, _positive, _seconds, _timeout, job_spec_from_args
from .views import Result, Table, job_data, job_table, output_files_data, output_files_table


def job_create(ctx: Context) -> Result:
    spec = job_spec_from_args(ctx)
    job = ctx.experiment().submit(ctx.args.name, spec, cluster=ctx.args.cluster)
    return Result(job_data(job, job.status), job_table([(job, job.status)]))


def job_show(ctx: Context) -> Result:
    job = ctx.job()
    status = job.refresh().status
    return Result(lambda: job_data(job, status), job_table([(job, status)]))


def job_list(ctx: Context) -> Result:
    jobs = ctx.experiment().list_jobs()
    pairs = [(j, j.status) for j in jobs]
    return Result(lambda: [job_data(j, s) for j, s in pairs], job_table(pairs))


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
    return Result(lambda: job_data(job, status), job_table([(job, status)]))


def job_terminate(ctx: Context) -> Result:
    job = ctx.job()
    status = job.terminate()
    return Result(lambda: job_data(job, status), job_table([(job, status)]))


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
    files = job.list_output_files(output_directory_id=ctx.args.output_directory_id, directory=ctx.args.directory)
    return Result(output_files_data(files), output_files_table(files))


def job_file_download(ctx: Context) -> Result:
    job = ctx.job(ctx.args.job)
    job.refresh()
    dest = job.download(ctx.args.path, local_dest(ctx.args.dest), output_directory_id=ctx.args.output_directory_id)
    return Result({"downloaded": [str(dest)]}, Table(["Downloaded"], [[str(dest)]]))


def job_metrics(ctx: Context) -> Result:
    """The job's metrics as a table, JSON or CSV; the exit status says whether the job failed."""
    job = ctx.job()
    table = job.metrics()
    failed = table.execution_state == ExecutionState.FAILED.value
    error = f"job {job.name!r} failed" if failed else None
    if ctx.args.csv:
        sys.stdout.write(table.to_csv())
        return Result(quiet=True, exit_code=EXIT_FAILED if failed else 0, error=error)
    data = {"job": table.job, "executionState": table.execution_state, "columns": ["epoch", *table.columns],
            "rows": json_records(table.to_records()), "reason": table.reason}
    view = Table(["epoch", *table.columns], [[str(r["epoch"]), *(format_number(r[c]) for c in table.columns)]
                                             for r in table.to_records()],
                 numeric=frozenset(range(len(table.columns) + 1))) if len(table) else None
    if view is None and ctx.args.output == "table" and not ctx.args.query:
        print(f"no metrics for job {job.name}: {table.reason}")
        return Result(quiet=True, exit_code=EXIT_FAILED if failed else 0, error=error)
    return Result(data, view, EXIT_FAILED if failed else 0, error)


def job_tensorboard(ctx: Context) -> Result:
    """Sync the job's event files and start TensorBoard on them (or print its command), then keep
    syncing while the job runs, until Ctrl-C."""
    job = ctx.job()
    job.refresh()
    args = ctx.args
    if args.sync_interval <= 0:
        raise UsageError(f"--sync-interval: expected seconds > 0, got {args.sync_interval:g}")
    board = job.tensorboard(logdir=args.logdir, port=args.port, start=not args.no_start)
    if board.url is None:
        print(f"event files of job {job.name} are in {board.logdir}; start TensorBoard with:\n  {board.command_line}")
        return Result(quiet=True)
    print(f"TensorBoard of job {job.name}: {board.url} (logdir {board.logdir}); Ctrl-C stops it", flush=True)
    try:
        while True:
            time.sleep(args.sync_interval)
            if not job.refresh().execution_state.is_terminal():
                board.sync()
            elif board.sync() == 0 and args.exit_when_done:
                return Result(quiet=True)
    finally:
        board.stop()


def register(c: _Commands, sub: Any) -> None:
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
    p = c.command(sub, "metrics", job_metrics, "a job's metrics, one row per finished epoch (while it runs or "
                  "after); exit 1 if the job failed")
    _exp(p)
    _name(p, "job")
    p.add_argument("--csv", action="store_true", help="print CSV instead of a table (see also --output json)")
    p = c.command(sub, "tensorboard", job_tensorboard, "sync a job's TensorBoard event files to a local folder and "
                  "start TensorBoard on them (or print the command when it is not installed); keeps syncing "
                  "until Ctrl-C")
    _exp(p)
    _name(p, "job")
    p.add_argument("--logdir", type=Path, default=None, help="local folder (default: ./tensorboard/<job>)")
    p.add_argument("--port", type=_positive, default=None, help="TensorBoard's port (default: a free one)")
    p.add_argument("--no-start", action="store_true", help="only sync, and print the command")
    p.add_argument("--sync-interval", type=_seconds, default=15.0, help="seconds between syncs (default: 15)")
    p.add_argument("--exit-when-done", action="store_true",
                   help="stop TensorBoard and exit once the job has ended and its last files are synced")
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
