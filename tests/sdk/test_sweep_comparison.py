"""Comparing a sweep's trials: SweepResults.plot() (every trial's curve on one chart) and
plot_parallel_coordinates(), and Sweep.tensorboard() (every trial a run of one TensorBoard, its
parameters and final objective as HParams), on a sweep of the local service whose trials write
metrics.csv and real TensorBoard event files."""
from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from horovod_batchai import (Experiment, FileShare, GpuCluster, HorovodJob, InvalidSpecError, MissingDependencyError,
                             SweepState, Workspace)

pytestmark = pytest.mark.slow

# A trial: val_accuracy per epoch grows with --lr, as metrics.csv and as TensorBoard scalars in
# tensorboard/validation (the folder Keras' TensorBoard callback uses), written with the tensorboard
# package's own record writer (no TensorFlow import per trial).
TRIAL = """\
import argparse, os, time
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.record_writer import RecordWriter
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--optimizer", default="sgd")
args = parser.parse_args()
out = os.environ["AZ_BATCHAI_STDOUTERR_DIR"]
events = os.path.join(out, "tensorboard", "validation")
os.makedirs(events)
with open(os.path.join(out, "metrics.csv"), "w") as csv, \\
        open(os.path.join(events, f"events.out.tfevents.{int(time.time())}.trial"), "wb") as fh:
    records = RecordWriter(fh)
    records.write(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString())
    csv.write("epoch,loss,val_accuracy\\n")
    bonus = 0.05 if args.optimizer == "adam" else 0.0
    for epoch in range(3):
        value = args.lr + bonus + epoch / 100
        csv.write(f"{epoch},{1 / (1 + epoch)},{value}\\n")
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="epoch_accuracy", simple_value=value)])
        records.write(event_pb2.Event(wall_time=time.time(), step=epoch, summary=summary).SerializeToString())
"""

PARAMETERS = {"lr": [0.1, 0.3], "optimizer": ["sgd", "adam"]}


@pytest.fixture
def finished(workspace: Workspace, cluster: GpuCluster, share: FileShare, tmp_path: Path) -> Any:
    local = tmp_path / "trial.py"
    local.write_text(TRIAL)
    share.upload_file(local, "scripts/trial.py", progress=False)
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/trial.py", mounts=[share.mount()],
                      std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs")
    experiment: Experiment = workspace.create_experiment("comparing")
    sweep = experiment.sweep(spec, name="cmp", parameters=PARAMETERS, cluster=cluster, max_concurrent_trials=2)
    results = sweep.wait(timeout=600)
    assert results.state is SweepState.COMPLETED, str(results)
    return sweep, results


def _post(url: str, body: dict) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request, timeout=60))


def test_a_sweeps_trials_compared_on_charts_and_in_one_tensorboard(finished: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib
    matplotlib.use("Agg")
    sweep, results = finished
    names = ["cmp-0", "cmp-1", "cmp-2", "cmp-3"]
    finals = {r.trial.name: r.final for r in results}
    assert finals == pytest.approx({"cmp-0": 0.12, "cmp-1": 0.17, "cmp-2": 0.32, "cmp-3": 0.37})

    # Every trial's curve of the sweep's metric on one chart, the best one thicker.
    figure = results.plot()
    (ax,) = figure.axes
    assert [line.get_label() for line in ax.lines] == ["cmp-0", "cmp-1", "cmp-2", "cmp-3 (best)"]
    assert [list(line.get_ydata()) for line in ax.lines][2] == pytest.approx([0.3, 0.31, 0.32])
    assert ax.lines[3].get_linewidth() > ax.lines[0].get_linewidth()
    assert ax.get_ylabel() == "val_accuracy" and "4 of 4 trial(s)" in ax.get_title()
    figure.savefig(tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 10_000
    loss = sweep.results(with_metrics=True).plot("loss").axes[0]  # every metric, read from the trials' jobs
    assert [list(line.get_ydata()) for line in loss.lines][0] == pytest.approx([1, 0.5, 1 / 3])
    assert not any("(best)" in str(line.get_label()) for line in loss.lines)  # best is by the sweep's metric
    assert "0 of 4 trial(s)" in results.plot("nothing").axes[0].get_title()

    # Parallel coordinates: an axis per parameter and the final metric, a line per trial.
    figure = results.plot_parallel_coordinates()
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["lr", "optimizer", "val_accuracy"]
    trials = [line for line in ax.lines if line.get_label() in names]
    assert sorted(line.get_label() for line in trials) == names
    ys = {tuple(round(y, 6) for y in line.get_ydata()) for line in trials}
    # lr 0.1 -> 0, 0.3 -> 1; sgd first seen -> 0, adam -> 1; the metric from its lowest (0) to its highest (1)
    assert ys == {(0, 0, 0), (0, 1, 0.2), (1, 0, 0.8), (1, 1, 1)}
    assert len(figure.axes) == 2 and "max is best" in figure.axes[1].get_ylabel()  # the colour bar
    figure.savefig(tmp_path / "parallel.png")

    with pytest.raises(InvalidSpecError, match=r"metric.*5 is not a metric name.*'val_accuracy'"):  # what the results hold
        results.plot(5)
    with pytest.raises(InvalidSpecError, match="is not a metric name"):
        results.plot_parallel_coordinates("")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as where the notebook extra is not installed
    with pytest.raises(MissingDependencyError, match=r"SweepResults.plot\(\) needs matplotlib.*"
                                                     r"pip install 'horovod-batchai\[notebook\]'"):
        results.plot()
    with pytest.raises(MissingDependencyError, match=r"plot_parallel_coordinates\(\) needs matplotlib"):
        results.plot_parallel_coordinates()
    monkeypatch.undo()

    # One TensorBoard: each trial a run with its event files, and its parameters and final
    # objective as HParams.
    with sweep.tensorboard(logdir=tmp_path / "tb") as board:
        assert board.url is not None and board.sweep == "cmp" and board.job is None
        assert "TensorBoard of sweep <code>cmp</code>" in board._repr_html_()
        runs = json.load(urllib.request.urlopen(board.url + "data/runs", timeout=60))
        assert set(runs) >= {*names, *(f"{n}/validation" for n in names)}
        tags = json.load(urllib.request.urlopen(board.url + "data/plugin/scalars/tags", timeout=60))
        assert "epoch_accuracy" in tags["cmp-2/validation"]
        experiment = _post(board.url + "data/plugin/hparams/experiment", {"experimentName": ""})
        assert [h["name"] for h in experiment["hparamInfos"]] == ["lr", "optimizer"]
        assert [m["name"]["tag"] for m in experiment["metricInfos"]] == ["final_val_accuracy"]
        groups = _post(board.url + "data/plugin/hparams/session_groups", {
            "experimentName": "", "allowedStatuses": ["STATUS_UNKNOWN"], "startIndex": 0, "sliceSize": 10,
            "colParams": [{"hparam": "lr"}, {"hparam": "optimizer"}, {"metric": {"tag": "final_val_accuracy"}}]})
        shown = {g["name"]: (g["hparams"], g["metricValues"][0]["value"], g["metricValues"][0]["trainingStep"])
                 for g in groups["sessionGroups"]}
        assert set(shown) == set(names)
        for result in results:
            hparams, value, step = shown[result.trial.name]
            assert hparams == dict(result.trial.parameters)
            assert value == pytest.approx(result.final) and step == result.epochs == 3
        assert board.sync() == 0  # nothing new: no file fetched, and no HParams written again
        assert len(list((tmp_path / "tb" / "cmp-0").glob("events.out.tfevents.*"))) == 1
    assert board.url is None and board.process is None
    with pytest.raises(InvalidSpecError, match="is not a TCP port"):
        sweep.tensorboard(port=0)
