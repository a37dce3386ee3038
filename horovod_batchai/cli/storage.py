"""``horovod-batchai share``, ``directory`` and ``file``: Azure file shares and what is in them."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import InvalidSpecError, NotFoundError, ShareItem
from .context import Context, local_dest
from .parser import _account, _Commands, _positive
from .views import Result, Table, share_data, share_items_data, share_items_table

if TYPE_CHECKING:
    from .. import FileShare


def share_create(ctx: Context) -> Result:
    from .. import FileShare
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
    from .. import FileShare
    args = ctx.args
    share = FileShare(ctx.target, args.resource_group, args.account_name, args.share_name)
    share.delete(delete_account=args.delete_account)
    deleted = [f"{share.account_name}/{share.share_name}"] + ([share.account_id] if args.delete_account else [])
    return Result({"deleted": deleted}, Table(["Deleted"], [[d] for d in deleted]))


def _relative(path: str) -> str:
    """``--path`` as given, refused when absolute: '/etc/passwd' would land at etc/passwd in the
    share (the share's root itself may be written '/')."""
    if path.startswith("/") and path.strip("/"):
        raise InvalidSpecError("--path", f"{path!r} is absolute; paths in a share are relative to its root",
                               f"a path inside the share like {path.strip('/')!r}")
    return path


def directory_create(ctx: Context) -> Result:
    _relative(ctx.args.path)
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
    if args.path is not None:
        _relative(args.path)
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


def file_download(ctx: Context) -> Result:
    args = ctx.args
    _relative(args.path)
    share = ctx.share()
    if _is_share_directory(share, args.path):
        paths = share.download_directory(args.path, Path(args.dest), progress=ctx.args.progress)
    else:
        paths = [share.download_file(args.path, local_dest(args.dest), progress=ctx.args.progress)]
    return Result({"downloaded": [str(p) for p in paths]}, Table(["Downloaded"], [[str(p)] for p in paths]))


def file_list(ctx: Context) -> Result:
    items = ctx.share().list(_relative(ctx.args.path or ""), recursive=ctx.args.recursive)
    return Result(share_items_data(items), share_items_table(items))


def register_share(c: _Commands, sub: Any) -> None:
    p = c.command(sub, "create", share_create, "create a file share (and its storage account); reuses existing ones")
    _account(p)
    p.add_argument("-l", "--location", default="eastus", help="Azure region (default: eastus)")
    p.add_argument("--sku", default="Standard_LRS", help="storage SKU (default: Standard_LRS)")
    p.add_argument("--quota", type=_positive, default=None, help="share quota in GiB")
    _account(c.command(sub, "show", share_show, "show a file share"))
    p = c.command(sub, "delete", share_delete, "delete a file share")
    _account(p)
    p.add_argument("--delete-account", action="store_true", help="also delete the storage account")


def register_directory(c: _Commands, sub: Any) -> None:
    p = c.command(sub, "create", directory_create, "create a directory (and its parents)")
    _account(p)
    p.add_argument("--path", required=True, help="directory path in the share, e.g. cifar")


def register_file(c: _Commands, sub: Any) -> None:
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
