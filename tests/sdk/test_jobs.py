"""Jobs against the local service: the tutorial's job.json unchanged, waiting, failures, termination,
output files, streaming and submit-time checks. The jobs run real horovodrun with tiny scripts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from horovod_batchai import (AzureFileShareMount, ExecutionState, Experiment, FileShare, GpuCluster, HorovodJob,
                             InvalidSpecError, JobFailedError, NotFoundError, Workspace)

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TUTORIAL_JOB = REPO / "examples" / "job.json"

# Stands in for cifar_cnn_distributed.py at the path the tutorial's job.json names: same
# argument, same saved-model location, a few seconds instead of an hour.
TUTORIAL_STAND_IN = """\
import argparse, os
import horovod.tensorflow as hvd
hvd.init()
parser = argparse.ArgumentParser()
parser.add_argument("-d", "--dir")
args = parser.parse_args()
print("rank", hvd.rank(), "of", hvd.size(), flush=True)
if hvd.rank() == 0:
    save_dir = os.path.join(args.dir, "saved_models")
    os.makedirs(save_dir, exist_ok=True)
    with open(os.path.join(save_dir, "keras_cifar10_trained_model.h5"), "wb") as fh:
        fh.write(bytes(range(256)) * 40)
    print("Saved trained model at", save_dir, flush=True)
"""

STREAMER = """\
import sys, time
for i in range(12):
    # multi-byte characters so that some reads end in the middle of one
    print(f"{i:03d} {time.time():.6f} héllo wörld ✓ 日本語", flush=True)
    time.sleep(0.25)
"""

FAILER = """\
import sys
print("about to fail", flush=True)
print("Traceback (most recent call last):\\nValueError: the data set is missing", file=sys.stderr, flush=True)
sys.exit(3)
"""

SLEEPER = """\
import time
print("sleeping", flush=True)
time.sleep(300)
"""


@pytest.fixture
def experiment(workspace: Workspace) -> Experiment:
    return workspace.create_experiment("cifar")


def _script(share: FileShare, tmp_path: Path, name: str, text: str) -> str:
    local = tmp_path / name
    local.write_text(text)
    share.upload_file(local, f"scripts/{name}", progress=False)
    return f"$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/{name}"


def test_tutorial_job_json_runs_unchanged(experiment: Experiment, cluster: GpuCluster, share: FileShare,
                                          tmp_path: Path) -> None:
    share.create_directory("cifar")
    script = tmp_path / "cifar_cnn_distributed.py"
    script.write_text(TUTORIAL_STAND_IN)
    share.upload_file(script, "cifar/cifar_cnn_distributed.py", progress=False)
    spec = HorovodJob.from_file(TUTORIAL_JOB, storage=share).replace(node_count=2)
    job = experiment.submit("cifar_distributed", spec, cluster=cluster)
    assert job.execution_state in (ExecutionState.QUEUED, ExecutionState.RUNNING)
    # submitting the same name again returns the same job instead of a second one
    assert experiment.submit("cifar_distributed", spec, cluster=cluster) == job
    states: list[ExecutionState] = []
    streamed = "".join(job.stream("stdout.txt"))
    status = job.wait(timeout=300, on_state=states.append)
    assert status.execution_state is ExecutionState.SUCCEEDED and status.exit_code == 0
    assert states[-1] is ExecutionState.SUCCEEDED
    assert "rank 0 of 2" in streamed and "rank 1 of 2" in streamed
    names = {f.name for f in job.list_output_files()}
    assert {"stdout.txt", "stderr.txt"} <= names
    downloaded = job.download("stdout.txt", tmp_path)
    assert downloaded.read_text() == streamed
    model = share.download_file("cifar/saved_models/keras_cifar10_trained_model.h5", tmp_path / "model.h5")
    assert model.read_bytes() == bytes(range(256)) * 40
    # the job as the service holds it: same spec, key not returned
    held = job.spec
    assert held.script == spec.script and held.node_count == 2 and held.mounts[0].account_key is None
    assert experiment.list_jobs() == [job]
    job.delete()
    job.delete()
    assert experiment.list_jobs() == []
    with pytest.raises(NotFoundError):
        experiment.get_job("cifar_distributed")


def test_stream_is_exact_across_link_renewals(experiment: Experiment, cluster: GpuCluster, share: FileShare,
                                              tmp_path: Path) -> None:
    spec = HorovodJob(script=_script(share, tmp_path, "streamer.py", STREAMER), mounts=[share.mount()],
                      std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs")
    job = experiment.submit("streamer", spec, cluster=cluster)
    # links live 5 minutes; renewing 299.8 s early makes every round fetch a new one
    stream = job.stream("stdout.txt", poll_interval=0.1, link_expiry_minutes=5, renew_before_s=299.8)
    pieces = list(stream)
    text = "".join(pieces)
    assert job.refresh().execution_state is ExecutionState.SUCCEEDED
    assert len(pieces) > 1 and stream.links_fetched > 2
    assert "\ufffd" not in text, "no character was split by a read boundary"
    # the process's own lines, without horovodrun's "[0]<stdout>:" tags
    lines = text.splitlines()
    assert [line.split()[0] for line in lines] == [f"{i:03d}" for i in range(12)]
    assert all(line.endswith("héllo wörld ✓ 日本語") for line in lines)
    # the stream's bytes are the file's bytes: nothing lost, nothing repeated
    assert job.download("stdout.txt", tmp_path / "stdout.txt").read_bytes() == text.encode("utf-8")
    assert stream.offset == len(text.encode("utf-8"))


def test_failed_job_raises_with_exit_code_and_stderr(experiment: Experiment, cluster: GpuCluster,
                                                     share: FileShare, tmp_path: Path) -> None:
    spec = HorovodJob(script=_script(share, tmp_path, "failer.py", FAILER), mounts=[share.mount()])
    job = experiment.submit("failer", spec, cluster=cluster)
    with pytest.raises(JobFailedError) as info:
        job.wait(timeout=300)
    # horovodrun exits 1 when a worker fails, and names the worker's own code on stderr
    assert info.value.exit_code not in (None, 0)
    assert info.value.errors and "Exit code: 3" in info.value.stderr_tail
    assert "the data set is missing" in info.value.stderr_tail
    assert f"exit code {info.value.exit_code}" in str(info.value) and "the data set is missing" in str(info.value)
    # the first line says what happened: the script's own error, not horovodrun's traceback
    first = str(info.value).splitlines()[0]
    assert first.endswith("(a process exited with 3): ValueError: the data set is missing"), first
    assert "Horovod detected" not in str(info.value) and "Horovod detected" in info.value.stderr_tail
    assert job.execution_state is ExecutionState.FAILED
    # options are keyword-only; for one release the positional form works and warns naming the keyword
    tail = job.stderr_tail(max_bytes=8192)
    assert "the data set is missing" in tail
    with pytest.warns(DeprecationWarning, match=r"passing max_bytes to Job.stderr_tail\(\) by position is deprecated "
                                                r"and will be removed in the next release; use max_bytes=\.\.\.") as warned:
        assert job.stderr_tail(8192) == tail
    assert [w.filename for w in warned] == [__file__]  # it points at the caller's line
    with pytest.warns(DeprecationWarning, match=r"Job.stdout_tail\(\) by position .* use max_bytes="):
        assert job.stdout_tail(8192) == job.stdout_tail(max_bytes=8192)
    names = [f.name for f in job.list_output_files(output_directory_id="stdouterr", directory=".")]
    with pytest.warns(DeprecationWarning, match=r"passing output_directory_id, directory to Job.list_output_files\(\) "
                                                r"by position .* use output_directory_id=\.\.\., directory=\.\.\."):
        assert [f.name for f in job.list_output_files("stdouterr", ".")] == names
    with pytest.raises(TypeError, match="got multiple values for argument 'max_bytes'"):
        job.stdout_tail(10, max_bytes=10)
    with pytest.raises(TypeError, match=r"at most 1 deprecated positional option\(s\) \(max_bytes\)"):
        job.stdout_tail(10, 20)
    with pytest.warns(DeprecationWarning, match=r"FileShare.mount\(\) by position .* use relative_mount_path="):
        assert share.mount("data") == share.mount(relative_mount_path="data")


def test_terminate(experiment: Experiment, cluster: GpuCluster, share: FileShare, tmp_path: Path) -> None:
    spec = HorovodJob(script=_script(share, tmp_path, "sleeper.py", SLEEPER), mounts=[share.mount()])
    job = experiment.submit("sleeper", spec, cluster=cluster)
    for text in job.stream("stdout.txt", poll_interval=0.1):
        if "sleeping" in text:
            break
    status = job.terminate()
    assert status.execution_state in (ExecutionState.TERMINATING, ExecutionState.FAILED)
    with pytest.raises(JobFailedError) as info:
        job.wait(timeout=120)
    assert info.value.errors, "the service says why the job ended"
    job.terminate()  # already ended: harmless
    job.delete()


def test_submit_mistakes_raise_before_any_request(experiment: Experiment, cluster: GpuCluster,
                                                  share: FileShare) -> None:
    mount = share.mount()
    ok = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py", mounts=[mount])
    with pytest.raises(InvalidSpecError, match="node_count") as info:
        experiment.submit("j1", ok.replace(node_count=3), cluster=cluster)
    assert "(2)" in str(info.value)
    with pytest.raises(InvalidSpecError, match="outside every mount"):
        experiment.submit("j1", ok.replace(script="$AZ_BATCHAI_MOUNT_ROOT/nothing/train.py"), cluster=cluster)
    with pytest.raises(InvalidSpecError, match="storage"):
        experiment.submit("j1", HorovodJob.from_file(TUTORIAL_JOB).replace(node_count=1), cluster=cluster)
    missing = AzureFileShareMount.for_share(share.account_name, "noshare", account_key=mount.account_key)
    with pytest.raises(InvalidSpecError, match="does not exist"):
        experiment.submit("j1", ok.replace(mounts=(missing,), script="$AZ_BATCHAI_JOB_MOUNT_ROOT/noshare/t.py",
                                           std_out_err_path_prefix=None), cluster=cluster)
    wrong_key = AzureFileShareMount.for_share(share.account_name, "myshare", account_key="d3Jvbmcta2V5")
    with pytest.raises(InvalidSpecError, match="refused the key"):
        experiment.submit("j1", ok.replace(mounts=(wrong_key,)), cluster=cluster)
    with pytest.raises(InvalidSpecError, match="job"):
        experiment.submit("bad name", ok, cluster=cluster)
    assert experiment.list_jobs() == []


def test_to_dict_is_a_job_json_the_cli_engineer_can_save(share: FileShare) -> None:
    spec = HorovodJob.from_file(TUTORIAL_JOB, storage=share)
    text = json.dumps(spec.to_dict())
    assert share.get_account_key() not in text and "<AZURE_BATCHAI_STORAGE_KEY>" in text


def test_submitting_another_job_under_a_taken_name_is_a_conflict(experiment: Experiment, cluster: GpuCluster,
                                                                  share: FileShare, tmp_path: Path) -> None:
    from horovod_batchai import ConflictError
    spec = HorovodJob(script=_script(share, tmp_path, "sleeper.py", SLEEPER), mounts=[share.mount()])
    job = experiment.submit("sleeper", spec, cluster=cluster)
    assert experiment.submit("sleeper", spec, cluster=cluster) == job  # a repeat is harmless
    with pytest.raises(ConflictError, match=r"other settings \(arguments\)"):
        experiment.submit("sleeper", spec.replace(arguments="--more"), cluster=cluster)
    job.terminate()
    assert [j.name for j in experiment.list_jobs()] == ["sleeper"]

