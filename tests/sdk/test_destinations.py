"""Where downloads land, and deleting what is already gone: a destination that cannot be written is
an InvalidSpecError naming it (not a bare FileNotFoundError / FileExistsError halfway through), and
delete_directory of a missing directory succeeds as documented."""
from __future__ import annotations

from pathlib import Path

import pytest

from horovod_batchai import ExecutionState, Experiment, FileShare, GpuCluster, HorovodJob, InvalidSpecError, Workspace

PAYLOAD = b"weights \x00\x01\x02" * 100


@pytest.fixture
def uploaded(share: FileShare, tmp_path: Path) -> FileShare:
    local = tmp_path / "model.h5"
    local.write_bytes(PAYLOAD)
    share.upload_file(local, "cifar/saved/model.h5", progress=False)
    return share


def _unwritable(tmp_path: Path) -> list[tuple[str, str]]:
    """(destination, what the error says) for places no download can go, whoever runs the test."""
    a_file = tmp_path / "a-file.txt"
    a_file.write_text("not a directory")
    return [(str(a_file / "model.h5"), f"{str(a_file)!r} is a file"),            # a parent is a file
            (str(a_file / "deeper" / "model.h5"), f"{str(a_file)!r} is a file"),
            ("/proc/version/model.h5", "'/proc/version' is a file"),
            ("/proc/no-such-process/model.h5", "No such file or directory"),
            ("/proc/", "'/proc' takes no new files")]                                     # /proc takes no new files, even for root


def test_an_unwritable_destination_names_it_before_anything_is_downloaded(uploaded: FileShare,
                                                                           tmp_path: Path) -> None:
    for dest, reason in _unwritable(tmp_path):
        with pytest.raises(InvalidSpecError) as info:
            uploaded.download_file("cifar/saved/model.h5", dest, progress=False)
        err = info.value
        assert err.field == "dest" and repr(dest) in err.problem and reason in err.problem, str(err)
        assert "directory" in err.valid_form
    assert not list(tmp_path.rglob("*.partial")) and not list(tmp_path.rglob("model.h5.*"))


def test_a_destination_that_is_a_directory_where_the_file_would_go(uploaded: FileShare, tmp_path: Path) -> None:
    (tmp_path / "out" / "model.h5").mkdir(parents=True)
    with pytest.raises(InvalidSpecError, match="is a directory"):
        uploaded.download_file("cifar/saved/model.h5", tmp_path / "out", progress=False)


def test_a_trailing_slash_means_a_directory_even_a_missing_one(uploaded: FileShare, tmp_path: Path) -> None:
    landed = uploaded.download_file("cifar/saved/model.h5", f"{tmp_path}/new/dir/", progress=False)
    assert landed == tmp_path / "new" / "dir" / "model.h5" and landed.read_bytes() == PAYLOAD
    # without one, the path is the file's own (its directory created)
    landed = uploaded.download_file("cifar/saved/model.h5", tmp_path / "other" / "weights.bin", progress=False)
    assert landed.read_bytes() == PAYLOAD


def test_download_directory_into_a_file_names_the_destination(uploaded: FileShare, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file.txt"
    a_file.write_text("x")
    for dest in (a_file, a_file / "below", Path("/proc")):
        with pytest.raises(InvalidSpecError) as info:
            uploaded.download_directory("cifar", dest, progress=False)
        assert info.value.field == "dest" and str(dest) in str(info.value)


def test_delete_directory_of_a_missing_directory_succeeds(share: FileShare) -> None:
    share.create_directory("present/inner")
    for path in ("absent", "absent/deeper/still", "present/inner/absent"):
        share.delete_directory(path)
        share.delete_directory(path, recursive=True)
    share.delete_directory("present", recursive=True)
    share.delete_directory("present", recursive=True)  # and again, now that it is gone
    assert share.list() == []


@pytest.mark.slow
def test_job_download_into_an_unwritable_destination_names_it(workspace: Workspace, cluster: GpuCluster,
                                                              share: FileShare, tmp_path: Path) -> None:
    script = tmp_path / "hello.py"
    script.write_text("print('hello', flush=True)\n")
    share.upload_file(script, "scripts/hello.py", progress=False)
    experiment: Experiment = workspace.create_experiment("downloads")
    job = experiment.submit("hello", HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/hello.py",
                                                mounts=(share.mount(),)), cluster=cluster)
    assert job.wait(timeout=300).execution_state is ExecutionState.SUCCEEDED
    for dest, reason in _unwritable(tmp_path):
        with pytest.raises(InvalidSpecError) as info:
            job.download("stdout.txt", dest)
        assert info.value.field == "dest" and repr(dest) in info.value.problem and reason in info.value.problem
    assert job.download("stdout.txt", f"{tmp_path}/logs/").read_text().endswith("hello\n")
