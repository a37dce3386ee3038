"""Job.watch(): state, last output lines and curves updated in place (one display each), returning
when the job ends or on an interrupt; Job.tensorboard(): the job's event files synced while it runs
and after, and the TensorBoard that `make install` provides started on them."""
from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path
from typing import Any, List

import pytest

from horovod_batchai import ExecutionState, Experiment, FileShare, GpuCluster, HorovodBatchAIError, HorovodJob, Workspace
from horovod_batchai import _tensorboard
from horovod_batchai._watch import NotebookView, TextView, watch

pytestmark = pytest.mark.slow

# Three epochs of metrics a little apart, with a line of output each.
EPOCHS = """\
import os, time
out = os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv")
with open(out, "w") as fh:
    fh.write("epoch,loss,accuracy,val_loss,val_accuracy\\n")
    for epoch in range(3):
        time.sleep(1.5)
        fh.write(f"{epoch},{1 / (epoch + 1)},{epoch / 4},{1.1 / (epoch + 1)},{epoch / 5}\\n")
        fh.flush()
        print(f"epoch {epoch + 1} done", flush=True)
"""

# Real event files, written with TensorFlow's summary writer as the training package does; the
# second epoch waits for the test's go-ahead so that a sync sees the job running.
EVENTS = """\
import os, time
import tensorflow as tf
root = os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "tensorboard")
writer = tf.summary.create_file_writer(os.path.join(root, "train"))
go = os.path.join(os.environ["AZ_BATCHAI_JOB_MOUNT_ROOT"], "myshare", "go")
for epoch in range(2):
    if epoch:
        while not os.path.exists(go):
            time.sleep(0.1)
    with writer.as_default():
        tf.summary.scalar("epoch_loss", 1.0 / (epoch + 1), step=epoch)
    writer.flush()
    print("epoch", epoch, flush=True)
"""


@pytest.fixture
def experiment(workspace: Workspace) -> Experiment:
    return workspace.create_experiment("watching")


def _submit(experiment: Experiment, cluster: GpuCluster, share: FileShare, tmp_path: Path, name: str,
            text: str) -> Any:
    local = tmp_path / f"{name}.py"
    local.write_text(text)
    share.upload_file(local, f"scripts/{name}.py", progress=False)
    spec = HorovodJob(script=f"$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/{name}.py", mounts=[share.mount()])
    return experiment.submit(name, spec, cluster=cluster)


class Handle:
    def __init__(self, log: List[tuple], kind: str) -> None:
        self.log, self.kind = log, kind

    def update(self, obj: Any) -> None:
        self.log.append(("update", self.kind, obj))


def test_watch_updates_one_display_of_state_lines_and_curves_until_the_job_ends(
        experiment: Experiment, cluster: GpuCluster, share: FileShare, tmp_path: Path) -> None:
    log: List[tuple] = []

    def display(obj: Any, display_id: bool = False) -> Handle:
        assert display_id is True
        kind = "html" if hasattr(obj, "_repr_html_") and not hasattr(obj, "_repr_png_") else "png"
        log.append(("display", kind, obj))
        return Handle(log, kind)

    job = _submit(experiment, cluster, share, tmp_path, "epochs", EPOCHS)
    status = watch(job, lines=5, curves=True, poll_interval=0.5, timeout=300, view=NotebookView(display))
    assert status.execution_state is ExecutionState.SUCCEEDED
    displays = [entry for entry in log if entry[0] == "display"]
    assert [kind for _, kind, _ in displays] == ["html", "png"]  # one of each, then only updates
    texts = [obj.data for _, kind, obj in log if kind == "html"]
    assert "succeeded" in texts[-1] and "epoch 3 done" in texts[-1]
    assert any("running" in text for text in texts[:-1])
    pngs = [obj.data for _, kind, obj in log if kind == "png"]
    assert all(png.startswith(b"\x89PNG") for png in pngs)
    assert len(set(pngs)) >= 2  # redrawn as epochs were added


def test_watch_returns_on_an_interrupt_and_prints_plain_lines_outside_a_notebook(
        experiment: Experiment, cluster: GpuCluster, share: FileShare, tmp_path: Path) -> None:
    job = _submit(experiment, cluster, share, tmp_path, "epochs", EPOCHS)
    written: List[str] = []
    pauses = []

    def interrupted_sleep(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:
            raise KeyboardInterrupt

    status = watch(job, lines=5, curves=False, poll_interval=0.5, timeout=None, view=TextView(written.append),
                   sleep=interrupted_sleep)
    # it returned (instead of raising) at the interrupt, with the job still going
    assert len(pauses) == 3 and status.execution_state in (ExecutionState.QUEUED, ExecutionState.RUNNING)
    job.wait(timeout=300)
    # the whole run shown as text: each state once, each line once
    written.clear()
    watch(job, lines=5, curves=False, poll_interval=0.5, timeout=None, view=TextView(written.append))
    assert written == ["[epochs: succeeded]\n", "epoch 1 done\n", "epoch 2 done\n", "epoch 3 done\n"]


class CountingJob:
    """Stands for a Job: each refresh() is one GET of the job, and moves it to its next state."""

    def __init__(self, states: List[ExecutionState]) -> None:
        from types import SimpleNamespace
        self.states, self.refreshes = states, 0
        self._backend = SimpleNamespace(default_poll_interval=0.0)

    def refresh(self) -> "CountingJob":
        self.refreshes += 1
        return self

    @property
    def status(self) -> Any:
        from horovod_batchai import JobStatus
        return JobStatus("job", self.states[min(self.refreshes, len(self.states)) - 1])

    def stdout_tail(self) -> str:
        return ""


def test_watch_fetches_the_job_once_per_poll_and_shows_what_it_fetched() -> None:
    job = CountingJob([ExecutionState.QUEUED, ExecutionState.RUNNING, ExecutionState.SUCCEEDED])
    shown: List[str] = []
    status = watch(job, lines=0, curves=False, poll_interval=0.0, timeout=None,  # type: ignore[arg-type]
                   view=TextView(shown.append), sleep=lambda _: None)
    assert status.execution_state is ExecutionState.SUCCEEDED
    assert job.refreshes == 3 and shown == ["[job: queued]\n", "[job: running]\n", "[job: succeeded]\n"]


def test_tensorboard_syncs_a_running_jobs_event_files_and_starts(
        experiment: Experiment, cluster: GpuCluster, share: FileShare, tmp_path: Path) -> None:
    job = _submit(experiment, cluster, share, tmp_path, "events", EVENTS)
    for text in job.stream("stdout.txt", poll_interval=0.2):
        if "epoch 0" in text:
            break
    logdir = tmp_path / "logdir"
    with job.tensorboard(logdir=logdir) as board:
        assert board.url is not None and board.logdir == logdir
        files = list((logdir / "train").glob("events.out.tfevents.*"))
        assert len(files) == 1
        size = files[0].stat().st_size
        runs = json.load(urllib.request.urlopen(board.url + "data/runs", timeout=60))
        assert runs == ["train"]
        tags = json.load(urllib.request.urlopen(board.url + "data/plugin/scalars/tags", timeout=60))
        assert "epoch_loss" in tags["train"]

        (tmp_path / "go").write_text("")
        share.upload_file(tmp_path / "go", "go", progress=False)
        job.wait(timeout=300)
        assert board.sync() == 1 and files[0].stat().st_size > size
        assert board.sync() == 0  # nothing new
    assert board.url is None and board.process is None


def test_tensorboard_gives_the_command_when_it_is_not_started(
        experiment: Experiment, cluster: GpuCluster, share: FileShare, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    job = _submit(experiment, cluster, share, tmp_path, "epochs", EPOCHS)
    job.wait(timeout=300)
    monkeypatch.setattr("horovod_batchai._shared.tensorboard.tensorboard_installed", lambda: False)
    board = job.tensorboard(logdir=tmp_path / "none", port=6123)
    assert board.url is None and board.process is None
    assert board.command_line == f"tensorboard --logdir {tmp_path / 'none'} --host 127.0.0.1 --port 6123"
    assert "start TensorBoard with" in board._repr_html_()
    assert job.sync_tensorboard(tmp_path / "none") == 0  # this job wrote no event files


def _listener() -> socket.socket:
    """A socket listening on a port of the system's choice: another process's server."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def test_tensorboard_listens_on_a_port_it_bound_itself_and_reports(
        experiment: Experiment, cluster: GpuCluster, share: FileShare, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    job = _submit(experiment, cluster, share, tmp_path, "epochs", EPOCHS)
    job.wait(timeout=300)
    others: List[socket.socket] = []

    def picked_then_taken() -> int:
        # what a concurrent process does to a port picked before TensorBoard binds it: it takes it
        others.append(_listener())
        return int(others[-1].getsockname()[1])

    monkeypatch.setattr(_tensorboard, "_free_port", picked_then_taken, raising=False)
    try:
        with job.tensorboard(logdir=tmp_path / "tb") as board:
            assert board.port is not None and board.url == f"http://127.0.0.1:{board.port}/"
            assert board.port not in [s.getsockname()[1] for s in others]
            assert json.load(urllib.request.urlopen(board.url + "data/runs", timeout=60)) == []  # TensorBoard answers
            assert board.command_line.endswith("--port 0")
        assert board.url is None and board.port is None
        # a port the caller names that another process holds: TensorBoard's own error, not that process's URL
        taken = _listener()
        others.append(taken)
        with pytest.raises(HorovodBatchAIError, match=r"(?s)TensorBoard exited at start: .*could not bind to port "
                                                      rf"{taken.getsockname()[1]}, it was already in use"):
            job.tensorboard(logdir=tmp_path / "tb", port=taken.getsockname()[1])
    finally:
        for sock in others:
            sock.close()
