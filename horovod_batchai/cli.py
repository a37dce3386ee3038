"""``horovod-batchai``: the tutorial's ``az batchai`` and ``az storage`` verbs, for pipelines.

The tutorial, one command per step::

    horovod-batchai workspace create -g batchai.horovod -n batchaidev
    horovod-batchai experiment create -g batchai.horovod -w batchaidev -n cifar
    horovod-batchai cluster create -g batchai.horovod -w batchaidev -n nc6cluster \\
        --vm-size Standard_NC6 --vm-priority dedicated --target 4 --generate-ssh-keys --wait
    horovod-batchai share create -g batchai.horovod --account-name mystorageaccount --share-name myshare
    horovod-batchai directory create -g batchai.horovod --account-name mystorageaccount \\
        --share-name myshare --path cifar
    horovod-batchai file upload -g batchai.horovod --account-name mystorageaccount --share-name myshare \\
        --source cifar_cnn_distributed.py --path cifar
    horovod-batchai job create -g batchai.horovod -w batchaidev -e cifar -n cifar_distributed \\
        --cluster nc6cluster --config-file job.json --storage-account-name mystorageaccount
    horovod-batchai job show -g batchai.horovod -w batchaidev -e cifar -n cifar_distributed \\
        --query executionState
    horovod-batchai job stream -g batchai.horovod -w batchaidev -e cifar -n cifar_distributed

It runs on the local service unless told otherwise (``--target azureml`` for Azure Machine
Learning, with ``-g``/``-w`` naming the Azure ML workspace; ``--target azure`` for Batch AI's API;
or ``HOROVOD_BATCHAI_TARGET``); locally the service is started on first use and found again
through its state directory. ``--output json`` prints what every show / list / create returns as
JSON; ``--query PATH`` picks one value from it (``nodeStateCounts.runningNodeCount``).

Exit status, for pipelines: 0 success; 1 a job or an operation failed; 2 a usage or input
mistake (nothing was changed); 3 not found; 4 a wait timed out. Mistakes are reported in one line
naming the option or field and its valid form, never with a traceback; secrets (keys, passwords,
download links) are never printed.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from azure.core.exceptions import AzureError, ResourceNotFoundError

from . import (AutoScale, AzureFileShareMount, ClusterNotReadyError, ClusterStatus, ExecutionState, Experiment,
               FileShare, GpuCluster, HorovodBatchAIError, HorovodJob, InvalidSpecError, Job, JobFailedError, JobStatus,
               NotFoundError, OutputFile, ShareItem, Target, TargetError, TransferError, WaitTimeoutError, Workspace)
from ._errors import redact

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_NOT_FOUND", "EXIT_TIMEOUT"]

EXIT_OK = 0
EXIT_FAILED = 1      # a job failed, or a request did
EXIT_USAGE = 2       # a mistake in the command line or its inputs; nothing was changed
EXIT_NOT_FOUND = 3   # the resource (or the local service) does not exist
EXIT_TIMEOUT = 4     # a wait ran out of time
EXIT_INTERRUPTED = 130

PROG = "horovod-batchai"
STORAGE_ACCOUNT_ENV = "AZURE_BATCHAI_STORAGE_ACCOUNT"  # what az batchai job create read too


class UsageError(Exception):
    """A mistake in the command line that argparse cannot see (option combinations)."""


# -- what a command returns -----------------------------------------------------------------------
@dataclass
class Table:
    headers: Sequence[str]
    rows: Sequence[Sequence[Any]]
    #: column indexes printed right-aligned
    numeric: frozenset[int] = frozenset()

    def render(self) -> str:
        cells = [["" if v is None else str(v) for v in row] for row in self.rows]
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(self.headers)]

        def line(values: Sequence[str]) -> str:
            return "  ".join(v.rjust(w) if i in self.numeric else v.ljust(w)
                             for i, (v, w) in enumerate(zip(values, widths))).rstrip()

        return "\n".join([line(self.headers), "  ".join("-" * w for w in widths)] + [line(r) for r in cells])


@dataclass
class Result:
    """What a command prints: ``data`` for ``--output json`` (and ``--query``), ``table`` for
    ``--output table`` (``data`` as JSON when there is no table); ``exit_code`` and ``error``
    (printed to stderr) when the command ran but what it reports is a failure."""

    data: Any = None
    table: Optional[Table] = None
    exit_code: int = EXIT_OK
    error: Optional[str] = None
    quiet: bool = False  # the command already wrote its output (job stream)


# -- JSON views of the SDK's objects (camelCase, as the service names things) ----------------------
def _time(value: Optional[datetime]) -> Optional[str]:
    return value.isoformat() if value is not None else None


def _errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"code": e.code, "message": e.message, "details": [{"name": n, "value": v} for n, v in e.details]}
            for e in errors]


def workspace_data(ws: Workspace) -> dict[str, Any]:
    return {"id": ws.id, "name": ws.name, "resourceGroup": ws.resource_group, "location": ws.location}


def workspace_table(items: Sequence[Workspace]) -> Table:
    return Table(["Name", "Resource Group", "Location"], [[w.name, w.resource_group, w.location] for w in items])


def experiment_data(exp: Experiment) -> dict[str, Any]:
    return {"id": exp.id, "name": exp.name, "workspace": exp.workspace.name,
            "resourceGroup": exp.workspace.resource_group}


def experiment_table(items: Sequence[Experiment]) -> Table:
    return Table(["Name", "Resource Group", "Workspace"],
                 [[e.name, e.workspace.resource_group, e.workspace.name] for e in items])


def node_counts_data(status: ClusterStatus) -> dict[str, int]:
    c = status.node_state_counts
    return {"idleNodeCount": c.idle, "leavingNodeCount": c.leaving, "preparingNodeCount": c.preparing,
            "runningNodeCount": c.running, "unusableNodeCount": c.unusable}


def cluster_data(cluster: GpuCluster, status: ClusterStatus) -> dict[str, Any]:
    scale: dict[str, Any]
    if status.auto_scale is not None:
        scale = {"autoScale": {"minimumNodeCount": status.auto_scale[0], "maximumNodeCount": status.auto_scale[1]}}
    else:
        scale = {"manual": {"targetNodeCount": status.target_node_count}}
    return {"id": cluster.id, "name": status.name, "resourceGroup": status.resource_group,
            "workspace": status.workspace, "vmSize": status.vm_size, "provisioningState": status.provisioning_state,
            "allocationState": status.allocation_state.value,
            "allocationStateTransitionTime": _time(status.allocation_state_transition_time),
            "currentNodeCount": status.current_node_count, "scaleSettings": scale,
            "nodeStateCounts": node_counts_data(status), "errors": _errors(status.errors)}


def cluster_table(statuses: Sequence[ClusterStatus]) -> Table:
    """The tutorial's ``az batchai cluster show --output table``."""
    rows = [[s.name, s.resource_group, s.workspace, s.vm_size.upper(), s.allocation_state.value,
             s.node_state_counts.idle, s.node_state_counts.running, s.node_state_counts.preparing,
             s.node_state_counts.leaving, s.node_state_counts.unusable] for s in statuses]
    return Table(["Name", "Resource Group", "Workspace", "VM Size", "State", "Idle", "Running", "Preparing",
                  "Leaving", "Unusable"], rows, frozenset(range(5, 10)))


def job_data(job: Job, status: JobStatus) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": job.id, "name": job.name, "experiment": job.experiment.name,
        "workspace": job.experiment.workspace.name, "resourceGroup": job.experiment.workspace.resource_group,
        "executionState": status.execution_state.value, "exitCode": status.exit_code,
        "errors": _errors(status.errors), "creationTime": _time(status.creation_time),
        "startTime": _time(status.start_time), "endTime": _time(status.end_time),
        "jobOutputDirectoryPathSegment": status.output_directory_path_segment}
    try:
        # As submitted, with every key and secret value replaced by a placeholder.
        data["properties"] = job.spec.to_dict()["properties"]
    except InvalidSpecError:
        pass  # not a Horovod job (made by another client): the state above is all we show
    return data


def job_table(items: Sequence[tuple[Job, JobStatus]]) -> Table:
    return Table(["Name", "Experiment", "State", "Exit Code", "Created", "Ended"],
                 [[j.name, j.experiment.name, s.execution_state.value, s.exit_code, _time(s.creation_time),
                   _time(s.end_time)] for j, s in items], frozenset({3}))


def output_files_data(files: Sequence[OutputFile]) -> list[dict[str, Any]]:
    # download_url is a SAS link, i.e. a credential: `job file download` fetches files instead.
    return [{"name": f.name, "fileType": "directory" if f.is_directory else "file", "contentLength": f.size,
             "lastModified": _time(f.last_modified)} for f in files]


def output_files_table(files: Sequence[OutputFile]) -> Table:
    """The tutorial's ``az batchai job file list --output table``."""
    return Table(["Name", "Type", "Size", "Modified"],
                 [[f.name, "directory" if f.is_directory else "file", f.size, _time(f.last_modified)] for f in files],
                 frozenset({2}))


def share_items_data(items: Sequence[ShareItem]) -> list[dict[str, Any]]:
    return [{"path": i.path, "type": "directory" if i.is_directory else "file", "size": i.size} for i in items]


def share_items_table(items: Sequence[ShareItem]) -> Table:
    return Table(["Path", "Type", "Size"], [[i.path, "directory" if i.is_directory else "file", i.size]
                                            for i in items], frozenset({2}))


def share_data(share: FileShare) -> dict[str, Any]:
    return {"accountName": share.account_name, "shareName": share.share_name, "resourceGroup": share.resource_group,
            "url": share.url}


# -- the commands ---------------------------------------------------------------------------------
class Context:
    """The parsed command line and the target it names, built on first use."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._target: Optional[Target] = None

    @property
    def target(self) -> Target:
        if self._target is None:
            args = self.args
            if args.target in ("azure", "azureml") and not args.subscription:
                raise UsageError(f"--subscription (or $AZURE_SUBSCRIPTION_ID) is required with --target {args.target}")
            if args.target == "azure":
                self._target = Target.azure(args.subscription)
            elif args.target == "azureml":
                group = getattr(args, "resource_group", None) or os.environ.get("AZURE_RESOURCE_GROUP")
                workspace = getattr(args, "workspace", None) or os.environ.get("AZUREML_WORKSPACE_NAME")
                if not group or not workspace:
                    raise UsageError("--target azureml works in one Azure ML workspace: give -g and -w (or "
                                     "$AZURE_RESOURCE_GROUP and $AZUREML_WORKSPACE_NAME)")
                self._target = Target.azureml(args.subscription, group, workspace)
            else:
                kwargs: dict[str, Any] = {"state_dir": args.state_dir}
                if args.subscription:
                    kwargs["subscription_id"] = args.subscription
                self._target = Target.local(**kwargs)
        return self._target

    def close(self) -> None:
        if self._target is not None:
            self._target.close()

    def workspace(self, name: Optional[str] = None) -> Workspace:
        return Workspace(self.target, self.args.resource_group, name or self.args.workspace)

    def experiment(self) -> Experiment:
        return Experiment(self.workspace(), self.args.experiment)

    def job(self, name: Optional[str] = None) -> Job:
        return Job(self.experiment(), name or self.args.name)

    def share(self) -> FileShare:
        return FileShare.get(self.target, self.args.resource_group, self.args.account_name, self.args.share_name)


# workspace --------------------------------------------------------------------------------------
def workspace_create(ctx: Context) -> Result:
    ws = Workspace.create(ctx.target, ctx.args.resource_group, ctx.args.name, location=ctx.args.location)
    return Result(workspace_data(ws), workspace_table([ws]))


def workspace_show(ctx: Context) -> Result:
    ws = Workspace.get(ctx.target, ctx.args.resource_group, ctx.args.name)
    return Result(workspace_data(ws), workspace_table([ws]))


def workspace_list(ctx: Context) -> Result:
    items = Workspace.list(ctx.target, ctx.args.resource_group)
    return Result([workspace_data(w) for w in items], workspace_table(items))


def workspace_delete(ctx: Context) -> Result:
    ws = ctx.workspace(ctx.args.name)
    ws.delete(delete_resource_group=ctx.args.delete_resource_group)
    deleted = [ws.id] + ([f"/subscriptions/{ctx.target.subscription_id}/resourceGroups/{ws.resource_group}"]
                         if ctx.args.delete_resource_group else [])
    return Result({"deleted": deleted}, Table(["Deleted"], [[d] for d in deleted]))


# experiment -------------------------------------------------------------------------------------
def experiment_create(ctx: Context) -> Result:
    exp = ctx.workspace().create_experiment(ctx.args.name)
    return Result(experiment_data(exp), experiment_table([exp]))


def experiment_show(ctx: Context) -> Result:
    exp = ctx.workspace().get_experiment(ctx.args.name)
    return Result(experiment_data(exp), experiment_table([exp]))


def experiment_list(ctx: Context) -> Result:
    items = ctx.workspace().list_experiments()
    return Result([experiment_data(e) for e in items], experiment_table(items))


def experiment_delete(ctx: Context) -> Result:
    exp = Experiment(ctx.workspace(), ctx.args.name)
    exp.delete()
    return Result({"deleted": [exp.id]}, Table(["Deleted"], [[exp.id]]))


# cluster ----------------------------------------------------------------------------------------
def _scale_arguments(args: argparse.Namespace, *, required: bool) -> tuple[Optional[int], Optional[AutoScale]]:
    """``--target N`` or ``--min M --max N`` (auto-scale), never both."""
    if args.target_nodes is not None and (args.min is not None or args.max is not None):
        raise UsageError("--target: give either --target N (a fixed size) or --min and --max (auto-scale), not both")
    if (args.min is None) != (args.max is None):
        raise UsageError("--min/--max: auto-scale needs both --min and --max")
    if args.min is not None:
        return None, AutoScale(minimum=args.min, maximum=args.max, initial=args.initial or 0)
    if args.initial is not None:
        raise UsageError("--initial: only with --min and --max (auto-scale)")
    if args.target_nodes is None and required:
        raise UsageError("--target: give --target N (a fixed size) or --min and --max (auto-scale)")
    return args.target_nodes, None


def _read_public_key(path: Path) -> str:
    try:
        return path.expanduser().read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidSpecError("--ssh-key-file", f"cannot read {str(path)!r} ({type(err).__name__})",
                               "the path of an OpenSSH public key file such as ~/.ssh/id_rsa.pub") from None


_PROMPT = object()  # --password given without a value: ask on the terminal
_PASSWORD_WAYS = "--password-file PATH (a file only you can read), --password-file - (read from stdin) " \
                 "or --password with no value (asked on the terminal)"


def _admin_password(args: argparse.Namespace) -> Optional[str]:
    """The admin password from a file, stdin or a prompt: never from the command line, where
    every user of the machine sees it (``ps``) and the shell keeps it in its history."""
    if args.password is not None and args.password is not _PROMPT:
        raise UsageError("--password: a password on the command line is visible to other users and kept in "
                         f"shell history, so it was not used; give it with {_PASSWORD_WAYS}")
    if args.password is _PROMPT:
        if not sys.stdin.isatty():
            raise UsageError("--password: asks for the password on a terminal, and stdin is not one; in a "
                             "pipeline use --password-file PATH or --password-file -")
        import getpass
        password = getpass.getpass("Admin password: ")
        if getpass.getpass("Admin password again: ") != password:
            raise UsageError("--password: the two passwords typed differ; nothing was created")
    elif args.password_file is not None:
        password = _read_password_file(args.password_file)
    else:
        return None
    if not password:
        raise UsageError(f"--password{'-file' if args.password_file is not None else ''}: the password is empty")
    return password


def _read_password_file(path: str) -> str:
    if path == "-":
        text = sys.stdin.readline()
    else:
        where = Path(path).expanduser()
        try:
            with open(where, encoding="utf-8") as fh:
                mode = os.fstat(fh.fileno()).st_mode
                if mode & 0o077:
                    raise UsageError(f"--password-file: {path!r} can be read by other users (mode "
                                     f"{mode & 0o777:o}); make it yours only (chmod 600) or pipe it through "
                                     "--password-file -")
                text = fh.readline()
        except (OSError, UnicodeDecodeError) as err:
            raise InvalidSpecError("--password-file", f"cannot read {path!r} ({type(err).__name__})",
                                   "a file holding the password on its first line") from None
    return text.rstrip("\r\n")  # the line's end, not spaces a password may hold


def _wait_for_cluster(ctx: Context, cluster: GpuCluster) -> ClusterStatus:
    def progress(status: ClusterStatus) -> None:
        counts = status.node_state_counts
        print(f"{status.name}: {status.allocation_state.value}, {counts.idle} idle, {counts.preparing} preparing, "
              f"{counts.running} running, {counts.leaving} leaving, {counts.unusable} unusable", file=sys.stderr)
    return cluster.wait_until_ready(timeout=ctx.args.timeout, on_status=progress)


def cluster_create(ctx: Context) -> Result:
    args = ctx.args
    target_nodes, auto_scale = _scale_arguments(args, required=False)
    if target_nodes is None and auto_scale is None:
        target_nodes = 1
    ssh_key = _read_public_key(args.ssh_key_file) if args.ssh_key_file else None
    password = _admin_password(args)
    if not (ssh_key or password or args.generate_ssh_keys):
        raise UsageError("--generate-ssh-keys: the admin user needs --generate-ssh-keys, --ssh-key-file PATH, "
                         "--password-file PATH or --password (asked on the terminal)")
    cluster = ctx.workspace().create_cluster(
        args.name, vm_size=args.vm_size, vm_priority=args.vm_priority, target_node_count=target_nodes,
        auto_scale=auto_scale, admin_user_name=args.admin_user, ssh_public_key=ssh_key, admin_password=password,
        generate_ssh_keys=args.generate_ssh_keys)
    status = _wait_for_cluster(ctx, cluster) if args.wait else cluster.status()
    return Result(cluster_data(cluster, status), cluster_table([status]))


def cluster_show(ctx: Context) -> Result:
    cluster = ctx.workspace().get_cluster(ctx.args.name)
    status = cluster.status()
    return Result(cluster_data(cluster, status), cluster_table([status]))


def cluster_list(ctx: Context) -> Result:
    clusters = ctx.workspace().list_clusters()
    statuses = [c.status() for c in clusters]
    return Result([cluster_data(c, s) for c, s in zip(clusters, statuses)], cluster_table(statuses))


def cluster_resize(ctx: Context) -> Result:
    target_nodes, auto_scale = _scale_arguments(ctx.args, required=True)
    cluster = ctx.workspace().get_cluster(ctx.args.name)
    if auto_scale is not None:
        status = cluster.auto_scale(auto_scale.minimum, auto_scale.maximum, initial=auto_scale.initial)
    else:
        assert target_nodes is not None
        status = cluster.resize(target_nodes, deallocation_option=ctx.args.deallocation_option)
    if ctx.args.wait:
        status = _wait_for_cluster(ctx, cluster)
    return Result(cluster_data(cluster, status), cluster_table([status]))


def cluster_wait(ctx: Context) -> Result:
    cluster = ctx.workspace().get_cluster(ctx.args.name)
    status = _wait_for_cluster(ctx, cluster)
    return Result(cluster_data(cluster, status), cluster_table([status]))


def cluster_delete(ctx: Context) -> Result:
    cluster = GpuCluster(ctx.workspace(), ctx.args.name)
    cluster.delete()
    return Result({"deleted": [cluster.id]}, Table(["Deleted"], [[cluster.id]]))


# job --------------------------------------------------------------------------------------------
def _job_spec(ctx: Context) -> HorovodJob:
    """The job.json, with storage placeholders and keys filled, the node count and arguments varied."""
    args = ctx.args
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
    dest = job.download(ctx.args.path, _local_dest(ctx.args.dest), output_directory_id=ctx.args.output_directory_id)
    return Result({"downloaded": [str(dest)]}, Table(["Downloaded"], [[str(dest)]]))


# storage ----------------------------------------------------------------------------------------
def share_create(ctx: Context) -> Result:
    args = ctx.args
    share = FileShare.create(ctx.target, args.resource_group, args.account_name, args.share_name,
                             location=args.location, sku=args.sku, quota_gib=args.quota)
    return Result(share_data(share), Table(["Account", "Share", "URL"], [[share.account_name, share.share_name,
                                                                           share.url]]))


def share_show(ctx: Context) -> Result:
    share = ctx.share()
    return Result(share_data(share), Table(["Account", "Share", "URL"], [[share.account_name, share.share_name,
                                                                           share.url]]))


def share_delete(ctx: Context) -> Result:
    args = ctx.args
    share = FileShare(ctx.target, args.resource_group, args.account_name, args.share_name)
    share.delete(delete_account=args.delete_account)
    deleted = [f"{share.account_name}/{share.share_name}"] + ([share.account_id] if args.delete_account else [])
    return Result({"deleted": deleted}, Table(["Deleted"], [[d] for d in deleted]))


def directory_create(ctx: Context) -> Result:
    share = ctx.share()
    share.create_directory(ctx.args.path)
    item = ShareItem(path=ctx.args.path.strip("/"), is_directory=True)
    return Result(share_items_data([item]), share_items_table([item]))


def _is_share_directory(share: FileShare, path: str) -> bool:
    if not path.strip("/"):
        return True
    parent, _, name = path.strip("/").rpartition("/")
    try:
        entries = share.list(parent)
    except NotFoundError:
        return False
    return any(e.name == name and e.is_directory for e in entries)


def file_upload(ctx: Context) -> Result:
    """``--source`` a file: to ``--path`` (a directory in the share, or the file's own path; default
    the share root). ``--source`` a directory: its tree into ``--path`` (default: its own name)."""
    args = ctx.args
    source: Path = args.source
    if not source.exists():
        raise InvalidSpecError("--source", f"{str(source)!r} does not exist", "a local file or directory")
    share = ctx.share()
    if source.is_dir():
        remote = args.path if args.path is not None else source.resolve().name
        items = share.upload_directory(source, remote, progress=ctx.args.progress)
    else:
        remote = (args.path or "").strip("/")
        if not remote or args.path.endswith("/") or _is_share_directory(share, remote):
            remote = f"{remote}/{source.name}" if remote else source.name
        items = [share.upload_file(source, remote, progress=ctx.args.progress)]
    return Result(share_items_data(items), share_items_table(items))


def _local_dest(text: str) -> Path:
    """``--dest``: a path ending in '/' names a directory, created when missing (``Path`` would
    drop the slash, so the option is kept as text until here)."""
    dest = Path(text).expanduser()
    if text.endswith(("/", os.sep)):
        dest.mkdir(parents=True, exist_ok=True)
    return dest


def file_download(ctx: Context) -> Result:
    args = ctx.args
    share = ctx.share()
    if _is_share_directory(share, args.path):
        paths = share.download_directory(args.path, Path(args.dest), progress=ctx.args.progress)
    else:
        paths = [share.download_file(args.path, _local_dest(args.dest), progress=ctx.args.progress)]
    return Result({"downloaded": [str(p) for p in paths]}, Table(["Downloaded"], [[str(p)] for p in paths]))


def file_list(ctx: Context) -> Result:
    items = ctx.share().list(ctx.args.path or "", recursive=ctx.args.recursive)
    return Result(share_items_data(items), share_items_table(items))


# local service ----------------------------------------------------------------------------------
def _local_only(ctx: Context) -> Path:
    if ctx.args.target != "local":
        raise UsageError("local: these commands manage the local service; drop --target azure")
    from .local import default_state_dir
    return Path(ctx.args.state_dir).expanduser() if ctx.args.state_dir else default_state_dir()


def _service_data(info: Any) -> dict[str, Any]:
    return {"running": True, "endpoint": info.endpoint, "pid": info.pid, "stateDir": str(info.state_dir),
            "caCert": str(info.ca_cert)}


def _service_table(data: dict[str, Any]) -> Table:
    return Table(["Running", "Endpoint", "PID", "State Directory"],
                 [[str(data["running"]).lower(), data.get("endpoint"), data.get("pid"), data["stateDir"]]])


def local_start(ctx: Context) -> Result:
    from .local import ensure_running
    data = _service_data(ensure_running(_local_only(ctx)))
    return Result(data, _service_table(data))


def local_stop(ctx: Context) -> Result:
    from .local import stop_daemon
    state_dir = _local_only(ctx)
    stopped = stop_daemon(state_dir)
    return Result({"stopped": stopped, "stateDir": str(state_dir)},
                  Table(["Stopped", "State Directory"], [[str(stopped).lower(), str(state_dir)]]))


def local_status(ctx: Context) -> Result:
    from .local import find_running
    state_dir = _local_only(ctx)
    info = find_running(state_dir)
    if info is None:
        data = {"running": False, "stateDir": str(state_dir)}
        return Result(data, _service_table(data), EXIT_NOT_FOUND, f"no local service is running for {state_dir}")
    data = _service_data(info)
    return Result(data, _service_table(data))


def local_az_env(ctx: Context) -> Result:
    """The shell lines that point an installed Azure CLI at the local service (started if need be):
    ``eval "$(horovod-batchai local az-env)"``, then the tutorial's az commands."""
    from .local import ensure_running
    from .local.az_env import az_env_lines
    info = ensure_running(_local_only(ctx))
    try:
        lines = az_env_lines(info, storage_account=ctx.args.storage_account)
    except ValueError as err:
        raise UsageError(str(err)) from None
    print("\n".join(lines))
    return Result(quiet=True)


# -- the command line -----------------------------------------------------------------------------
def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def _positive(text: str) -> int:
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text}")
    return value


def _global_options(parser: argparse.ArgumentParser, *, suppress: bool, with_target: bool = True) -> None:
    """Options every command takes, before or after the verb. On the sub-commands their default
    is SUPPRESS, so that a value given before the verb is not overwritten by the default.
    ``cluster create`` and ``resize`` use ``--target N`` for the node count, as ``az`` did, so
    there the global ``--target local|azure`` goes before the verb."""
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options")
    if with_target:
        group.add_argument("--target", choices=("local", "azure", "azureml"),
                           default=default(os.environ.get("HOROVOD_BATCHAI_TARGET", "local").strip().lower()
                                           or "local"),
                           help="where to run: the local service (default), Azure Machine Learning (azureml) "
                                "or Batch AI's API on Azure (azure) ($HOROVOD_BATCHAI_TARGET)")
    group.add_argument("--subscription", default=default(os.environ.get("AZURE_SUBSCRIPTION_ID")),
                       help="Azure subscription id ($AZURE_SUBSCRIPTION_ID); required with --target azure/azureml")
    group.add_argument("--state-dir", type=Path, default=default(None),
                       help="the local service's state directory ($HOROVOD_BATCHAI_STATE_DIR, else "
                            "~/.horovod-batchai/local); a service running for it is reused, else one is started")
    group.add_argument("-o", "--output", choices=("table", "json"), default=default("table"),
                       help="table (default) or json")
    group.add_argument("--json", dest="output", action="store_const", const="json", default=default("table"),
                       help="same as --output json")
    group.add_argument("--query", default=default(None), metavar="PATH",
                       help="print one value of the JSON result, e.g. executionState or nodeStateCounts.idleNodeCount")
    group.add_argument("--progress", action="store_true", default=default(False),
                       help="show progress bars for uploads and downloads")
    group.add_argument("-v", "--verbose", action="store_true", default=default(False),
                       help="log each request's purpose to stderr")
    group.add_argument("--debug", action="store_true", default=default(False),
                       help="print a traceback for unexpected errors")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


class _Commands:
    """Builds the command groups: a verb is a parser with its function and the options it shares."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self._groups = parser.add_subparsers(dest="group", metavar="COMMAND", required=True, parser_class=_Parser)

    def group(self, name: str, text: str) -> Any:
        p = self._groups.add_parser(name, help=text, description=text)
        return p.add_subparsers(dest="verb", metavar="VERB", required=True, parser_class=_Parser)

    @staticmethod
    def command(sub: Any, name: str, func: Callable[[Context], Result], text: str, *,
                with_target: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text, description=text)
        p.set_defaults(func=func)
        _global_options(p, suppress=True, with_target=with_target)
        return p


def _rg(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("-g", "--resource-group", required=required, help="resource group")


def _ws(p: argparse.ArgumentParser) -> None:
    _rg(p)
    p.add_argument("-w", "--workspace", required=True, help="workspace")


def _exp(p: argparse.ArgumentParser) -> None:
    _ws(p)
    p.add_argument("-e", "--experiment", required=True, help="experiment")


def _name(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("-n", "--name", required=True, help=f"{what} name")


def _timeout(p: argparse.ArgumentParser, default: Optional[float], what: str) -> None:
    p.add_argument("--timeout", type=_seconds, default=default,
                   help=f"seconds to wait for {what} (default: {default or 'no limit'}); exit 4 after")


def _account(p: argparse.ArgumentParser) -> None:
    _rg(p)
    p.add_argument("--account-name", required=True, help="storage account")
    p.add_argument("--share-name", required=True, help="file share")


def _scale(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--target", dest="target_nodes", type=_count, default=None, metavar="N",
                   help="a fixed number of nodes")
    p.add_argument("--min", type=_count, default=None, help="auto-scale: fewest nodes")
    p.add_argument("--max", type=_positive, default=None, help="auto-scale: most nodes")
    p.add_argument("--initial", type=_count, default=None, help="auto-scale: nodes to start with (default 0)")
    p.add_argument("--wait", action="store_true", help="wait until the cluster is steady and its nodes idle")
    _timeout(p, 900.0, "the cluster")


def _workspace_commands(c: _Commands) -> None:
    sub = c.group("workspace", "Batch AI workspaces (and their resource group)")
    p = c.command(sub, "create", workspace_create,
                  "create a workspace (and its resource group); reuses an existing one")
    _rg(p)
    _name(p, "workspace")
    p.add_argument("-l", "--location", default="eastus", help="Azure region (default: eastus)")
    p = c.command(sub, "show", workspace_show, "show a workspace")
    _rg(p)
    _name(p, "workspace")
    p = c.command(sub, "list", workspace_list, "list workspaces (of a resource group, or all)")
    _rg(p, required=False)
    p = c.command(sub, "delete", workspace_delete, "delete a workspace with its clusters, experiments and jobs")
    _rg(p)
    _name(p, "workspace")
    p.add_argument("--delete-resource-group", action="store_true",
                   help="also delete the resource group with everything in it (storage accounts too)")


def _experiment_commands(c: _Commands) -> None:
    sub = c.group("experiment", "experiments: named groups of jobs in a workspace")
    for verb, func, text in (("create", experiment_create, "create an experiment; reuses an existing one"),
                             ("show", experiment_show, "show an experiment"),
                             ("delete", experiment_delete, "delete an experiment and its jobs")):
        p = c.command(sub, verb, func, text)
        _ws(p)
        _name(p, "experiment")
    _ws(c.command(sub, "list", experiment_list, "list the experiments of a workspace"))


def _cluster_commands(c: _Commands) -> None:
    sub = c.group("cluster", "GPU clusters")
    p = c.command(sub, "create", cluster_create, "create a cluster; reuses an existing one of the same VM size",
                with_target=False)
    _ws(p)
    _name(p, "cluster")
    p.add_argument("-s", "--vm-size", default="Standard_NC6", help="VM size (default: Standard_NC6)")
    p.add_argument("--vm-priority", choices=("dedicated", "lowpriority"), default="dedicated",
                   help="dedicated (default) or lowpriority")
    _scale(p)
    p.add_argument("-u", "--admin-user", default=None, help="admin user name (default: your user name)")
    p.add_argument("--generate-ssh-keys", action="store_true",
                   help="use ~/.ssh/id_rsa.pub for the admin user, creating the key pair when missing")
    p.add_argument("--ssh-key-file", type=Path, default=None, help="an OpenSSH public key file for the admin user")
    secret = p.add_mutually_exclusive_group()
    secret.add_argument("--password-file", default=None, metavar="PATH",
                        help="read the admin password from the first line of PATH (mode 600), or of stdin for '-'")
    secret.add_argument("-p", "--password", nargs="?", const=_PROMPT, default=None, metavar="",
                        help="ask for the admin password on the terminal (a value here is refused: the command "
                             "line is visible to other users)")
    p = c.command(sub, "show", cluster_show, "show a cluster: state and node counts")
    _ws(p)
    _name(p, "cluster")
    _ws(c.command(sub, "list", cluster_list, "list the clusters of a workspace"))
    p = c.command(sub, "resize", cluster_resize, "set a fixed size (--target N, 0 releases every node) or auto-scale",
                with_target=False)
    _ws(p)
    _name(p, "cluster")
    _scale(p)
    p.add_argument("--deallocation-option", choices=("requeue", "terminate", "waitforjobcompletion"),
                   default=None, help="what happens to jobs on removed nodes (Batch AI's default: requeue; "
                                      "Azure ML only removes idle nodes and takes none)")
    p = c.command(sub, "wait", cluster_wait, "wait until a cluster is steady with its nodes idle")
    _ws(p)
    _name(p, "cluster")
    _timeout(p, 900.0, "the cluster")
    p = c.command(sub, "delete", cluster_delete, "delete a cluster")
    _ws(p)
    _name(p, "cluster")


def _job_commands(c: _Commands) -> None:
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


def _storage_commands(c: _Commands) -> None:
    sub = c.group("share", "Azure file shares (and their storage account)")
    p = c.command(sub, "create", share_create, "create a file share (and its storage account); reuses existing ones")
    _account(p)
    p.add_argument("-l", "--location", default="eastus", help="Azure region (default: eastus)")
    p.add_argument("--sku", default="Standard_LRS", help="storage SKU (default: Standard_LRS)")
    p.add_argument("--quota", type=_positive, default=None, help="share quota in GiB")
    _account(c.command(sub, "show", share_show, "show a file share"))
    p = c.command(sub, "delete", share_delete, "delete a file share")
    _account(p)
    p.add_argument("--delete-account", action="store_true", help="also delete the storage account")

    sub = c.group("directory", "directories in a file share")
    p = c.command(sub, "create", directory_create, "create a directory (and its parents)")
    _account(p)
    p.add_argument("--path", required=True, help="directory path in the share, e.g. cifar")

    sub = c.group("file", "files in a file share")
    p = c.command(sub, "upload", file_upload, "upload a file or a directory tree")
    _account(p)
    p.add_argument("--source", type=Path, required=True, help="local file or directory")
    p.add_argument("--path", default=None,
                   help="where in the share: a directory (the file keeps its name) or a file path; for a "
                        "directory source, the directory to fill (default: the source's name)")
    p = c.command(sub, "download", file_download, "download a file or a directory tree")
    _account(p)
    p.add_argument("--path", required=True, help="file or directory in the share")
    p.add_argument("--dest", default=".", help="local file or directory (default: .)")
    p = c.command(sub, "list", file_list, "list files and directories")
    _account(p)
    p.add_argument("--path", default="", help="directory in the share (default: the root)")
    p.add_argument("-r", "--recursive", action="store_true", help="list the whole tree")


def _local_commands(c: _Commands) -> None:
    sub = c.group("local", "the local service (state, jobs and files on this machine)")
    c.command(sub, "start", local_start, "start the local service in the background (reused if running)")
    c.command(sub, "stop", local_stop, "stop the local service")
    c.command(sub, "status", local_status, "say whether the local service runs; exit 3 if not")
    p = c.command(sub, "az-env", local_az_env, "print the shell lines that point the Azure CLI at the local service: "
                                             'eval "$(horovod-batchai local az-env)"')
    p.add_argument("--storage-account", default="mystorageaccount",
                   help="the storage account az storage commands use (default: the tutorial's mystorageaccount)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Batch AI workspaces, clusters, jobs and file shares, on Azure or the "
                                            "local service.", epilog="exit status: 0 ok, 1 failed, 2 usage, "
                                                                    "3 not found, 4 timeout")
    _global_options(parser, suppress=False)
    commands = _Commands(parser)
    for add in (_workspace_commands, _experiment_commands, _cluster_commands, _job_commands, _storage_commands,
                _local_commands):
        add(commands)
    return parser


# -- output ---------------------------------------------------------------------------------------
def _query(data: Any, path: str) -> Any:
    """``a.b[0].c`` in ``data``; a missing key is a usage mistake naming what exists."""
    value = data
    for part in path.replace("]", "").replace("[", ".").split("."):
        if not part:
            continue
        if isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            keys = ", ".join(value) if isinstance(value, dict) else f"an index below {len(value)}" \
                if isinstance(value, list) else "nothing: it is a single value"
            raise UsageError(f"--query: {path!r} has no {part!r}; what is there: {keys}")
    return value


def _print(result: Result, args: argparse.Namespace) -> None:
    if result.quiet:
        return
    if args.query:
        value = _query(result.data, args.query)
        if args.output == "table" and not isinstance(value, (dict, list)):
            print("" if value is None else value)
        else:
            print(json.dumps(value, indent=2))
        return
    if args.output == "json" or result.table is None:
        print(json.dumps(result.data, indent=2))
    else:
        print(result.table.render())


def _log_steps(verbose: bool) -> Callable[[], None]:
    """With ``-v``, this package's steps go to stderr (not azure-core's HTTP lines); returns what
    undoes it, so that ``main`` called in-process leaves logging as it found it."""
    if not verbose:
        return lambda: None
    package = logging.getLogger("horovod_batchai")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    level = package.level
    package.addHandler(handler)
    package.setLevel(logging.INFO)

    def restore() -> None:
        package.removeHandler(handler)
        package.setLevel(level)
    return restore


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {redact(message)}", file=sys.stderr)
    return code


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command; returns the exit status (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # usage mistakes and --help
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else EXIT_USAGE
    ctx = Context(args)
    restore_logging = _log_steps(args.verbose)
    try:
        result = args.func(ctx)
        _print(result, args)
        if result.error:
            return _fail(result.error, result.exit_code)
        return result.exit_code
    except (UsageError, InvalidSpecError, TargetError) as err:
        return _fail(str(err), EXIT_USAGE)
    except (NotFoundError, ResourceNotFoundError) as err:
        return _fail(str(err), EXIT_NOT_FOUND)
    except (WaitTimeoutError, TimeoutError) as err:
        return _fail(str(err), EXIT_TIMEOUT)
    except (JobFailedError, ClusterNotReadyError, TransferError, HorovodBatchAIError) as err:
        return _fail(str(err), EXIT_FAILED)
    except AzureError as err:
        return _fail(f"{type(err).__name__}: {err}", EXIT_FAILED)
    except OSError as err:  # a local file that cannot be read or written
        return _fail(f"{err.strerror or type(err).__name__}: {err.filename or err}", EXIT_FAILED)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # a bug: say so in one line, the traceback only when asked
        if args.debug:
            raise
        return _fail(f"unexpected {type(err).__name__}: {err} (run again with --debug for the traceback)",
                     EXIT_FAILED)
    finally:
        ctx.close()
        restore_logging()


if __name__ == "__main__":
    sys.exit(main())
