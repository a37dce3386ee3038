"""File shares, directories and files through the command line: the tutorial's storage steps,
directory trees both ways, and the exit statuses for missing shares and files."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from horovod_batchai.cli import EXIT_NOT_FOUND, EXIT_USAGE

from cli_support import ACCOUNT, RG, SHARE, STORAGE, CliRun

Cli = Callable[..., CliRun]


def test_share_create_show_delete(cli: Cli) -> None:
    created = cli("share", "create", *STORAGE, "-o", "json")
    assert created.code == 0, created.err
    assert created.json() == {"accountName": ACCOUNT, "shareName": SHARE, "resourceGroup": RG,
                              "url": f"https://{ACCOUNT}.file.core.windows.net/{SHARE}"}
    # calling it again reuses the account and the share
    assert cli("share", "create", *STORAGE).code == 0
    shown = cli("share", "show", *STORAGE)
    assert shown.code == 0 and shown.out.splitlines()[-1].split()[:2] == [ACCOUNT, SHARE]
    assert cli("share", "show", "-g", RG, "--account-name", ACCOUNT, "--share-name", "other").code == EXIT_NOT_FOUND
    assert cli("share", "delete", *STORAGE).code == 0
    assert cli("share", "show", *STORAGE).code == EXIT_NOT_FOUND
    deleted = cli("share", "delete", *STORAGE, "--delete-account", "-o", "json")
    assert deleted.code == 0 and deleted.json()["deleted"][-1].endswith(f"/storageAccounts/{ACCOUNT}")
    assert cli("share", "show", *STORAGE).code == EXIT_NOT_FOUND


def test_tutorial_upload_into_a_directory(cli: Cli, share: str, tmp_path: Path) -> None:
    assert cli("directory", "create", *STORAGE, "--path", "cifar").code == 0
    script = tmp_path / "cifar_cnn_distributed.py"
    script.write_text("print('training')\n")
    # az storage file upload --path cifar --source cifar_cnn_distributed.py: the file keeps its name
    uploaded = cli("file", "upload", *STORAGE, "--source", str(script), "--path", "cifar", "-o", "json")
    assert uploaded.code == 0, uploaded.err
    assert uploaded.json() == [{"path": "cifar/cifar_cnn_distributed.py", "type": "file", "size": script.stat().st_size}]
    # --path naming a file renames it; a trailing '/' names a directory to create
    assert cli("file", "upload", *STORAGE, "--source", str(script), "--path", "cifar/renamed.py").code == 0
    assert cli("file", "upload", *STORAGE, "--source", str(script), "--path", "new/dir/").code == 0
    assert cli("file", "upload", *STORAGE, "--source", str(script)).code == 0

    listed = cli("file", "list", *STORAGE, "-r", "-o", "json").json()
    assert {(i["path"], i["type"]) for i in listed} == {
        ("cifar", "directory"), ("cifar/cifar_cnn_distributed.py", "file"), ("cifar/renamed.py", "file"),
        ("new", "directory"), ("new/dir", "directory"), ("new/dir/cifar_cnn_distributed.py", "file"),
        ("cifar_cnn_distributed.py", "file")}
    table = cli("file", "list", *STORAGE, "--path", "cifar")
    assert [line.split() for line in table.out.splitlines()[2:]] == [
        ["cifar/cifar_cnn_distributed.py", "file", str(script.stat().st_size)],
        ["cifar/renamed.py", "file", str(script.stat().st_size)]]

    dest = tmp_path / "back"
    downloaded = cli("file", "download", *STORAGE, "--path", "cifar/cifar_cnn_distributed.py", "--dest",
                     f"{dest}/", "-o", "json")
    assert downloaded.code == 0, downloaded.err
    assert downloaded.json() == {"downloaded": [str(dest / "cifar_cnn_distributed.py")]}
    assert (dest / "cifar_cnn_distributed.py").read_text() == "print('training')\n"


def test_directory_trees_both_ways(cli: Cli, share: str, tmp_path: Path) -> None:
    tree = tmp_path / "cifar-10-batches-py"
    (tree / "sub").mkdir(parents=True)
    blobs = {"data_batch_1": bytes(range(256)) * 1000, "test_batch": b"t" * 5000, "sub/batches.meta": b"meta"}
    for name, data in blobs.items():
        (tree / name).write_bytes(data)
    up = cli("file", "upload", *STORAGE, "--source", str(tree), "--path", "cifar/data", "-o", "json")
    assert up.code == 0, up.err
    assert sorted((i["path"], i["size"]) for i in up.json()) == sorted(
        (f"cifar/data/{name}", len(data)) for name, data in blobs.items())

    dest = tmp_path / "copy"
    down = cli("file", "download", *STORAGE, "--path", "cifar/data", "--dest", str(dest), "-o", "json")
    assert down.code == 0, down.err
    assert sorted(down.json()["downloaded"]) == sorted(str(dest / name) for name in blobs)
    for name, data in blobs.items():
        assert (dest / name).read_bytes() == data


def test_missing_files_and_bad_paths(cli: Cli, share: str, tmp_path: Path) -> None:
    missing = cli("file", "download", *STORAGE, "--path", "cifar/nothing.h5", "--dest", str(tmp_path))
    assert missing.code == EXIT_NOT_FOUND and "nothing.h5" in missing.err
    assert not list(tmp_path.glob("nothing.h5*"))
    no_source = cli("file", "upload", *STORAGE, "--source", str(tmp_path / "absent.py"), "--path", "cifar")
    assert no_source.code == EXIT_USAGE and "--source" in no_source.err
    bad_path = cli("directory", "create", *STORAGE, "--path", "a/../b")
    assert bad_path.code == EXIT_USAGE and "'..'" in bad_path.err
    script = tmp_path / "x.py"
    script.write_text("print(1)")
    absolute = cli("file", "upload", *STORAGE, "--source", str(script), "--path", "/etc/passwd")
    assert absolute.code == EXIT_USAGE
    assert "--path: '/etc/passwd' is absolute; paths in a share are relative to its root" in absolute.err
    assert cli("directory", "create", *STORAGE, "--path", "/etc").code == EXIT_USAGE
    assert cli("file", "list", *STORAGE, "--path", "/", "-o", "json").json() == []  # the root itself
    bad_account = cli("share", "create", "-g", RG, "--account-name", "Not_Valid", "--share-name", SHARE)
    assert bad_account.code == EXIT_USAGE and "storage account" in bad_account.err
    assert cli("file", "list", *STORAGE, "-r", "-o", "json").json() == []
