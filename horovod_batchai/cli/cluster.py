"""``horovod-batchai cluster``: create, show, list, resize, wait, delete."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from .. import AutoScale, InvalidSpecError
from .context import Context, UsageError
from .parser import _Commands, _name, _scale, _timeout, _ws
from .views import Result, Table, cluster_data, cluster_table

if TYPE_CHECKING:
    from .. import ClusterStatus, GpuCluster


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
    # The scale request is sent here; without --wait the command returns once it is accepted.
    if auto_scale is not None:
        cluster.begin_auto_scale(auto_scale.minimum, auto_scale.maximum, initial=auto_scale.initial)
    else:
        assert target_nodes is not None
        cluster.begin_resize(target_nodes, deallocation_option=ctx.args.deallocation_option)
    status = _wait_for_cluster(ctx, cluster) if ctx.args.wait else cluster.status()
    return Result(cluster_data(cluster, status), cluster_table([status]))


def cluster_wait(ctx: Context) -> Result:
    cluster = ctx.workspace().get_cluster(ctx.args.name)
    status = _wait_for_cluster(ctx, cluster)
    return Result(cluster_data(cluster, status), cluster_table([status]))


def cluster_delete(ctx: Context) -> Result:
    from .. import GpuCluster
    cluster = GpuCluster(ctx.workspace(), ctx.args.name)
    cluster.delete()
    return Result({"deleted": [cluster.id]}, Table(["Deleted"], [[cluster.id]]))


def register(c: _Commands, sub: Any) -> None:
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
