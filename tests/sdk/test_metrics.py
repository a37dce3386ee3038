"""Job.metrics(): the rows a job's script writes to metrics.csv in its output directory, read while
the job runs and after it ends; an empty table that says why; a Keras script of one's own reports
with the two documented lines on a node where horovod_batchai cannot be imported."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from horovod_batchai import (ExecutionState, Experiment, FileShare, GpuCluster, HorovodJob, InvalidSpecError,
                             MetricsTable, Workspace)
from horovod_batchai._shared.metrics import parse_metrics_csv

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

# Writes two epochs, waits for the test's go-ahead on the share, writes a third and half of a
# fourth row (a row being written), then ends.
STEPPER = """\
import os, time
out = os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv")
go = os.path.join(os.environ["AZ_BATCHAI_JOB_MOUNT_ROOT"], "myshare", "go")
with open(out, "w") as fh:
    fh.write("epoch,accuracy,loss,lr,val_accuracy,val_loss,my_score\\n")
    fh.write("0,0.25,2.0,0.001,0.2,2.1,NA\\n1,0.5,1.5,0.001,0.4,1.7,7\\n")
    fh.flush()
    print("two epochs", flush=True)
    while not os.path.exists(go):
        time.sleep(0.1)
    fh.write("2,0.75,1.0,0.001,0.6,1.2,9\\n3,0.8")
"""

# The documented two lines (docs/experiments.rst) in a Keras script; horovod_batchai is made
# unimportable first, as on a node that does not have it.
KERAS_SCRIPT = """\
import sys
sys.modules["horovod_batchai"] = None
import os
import numpy as np
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(2, activation="softmax", input_shape=(4,))])
model.compile(loss="sparse_categorical_crossentropy", optimizer="sgd", metrics=["accuracy"])
callbacks = []
{lines}
x, y = np.random.rand(64, 4), np.random.randint(0, 2, 64)
model.fit(x, y, epochs=3, validation_data=(x, y), callbacks=callbacks, verbose=0)
print("trained", flush=True)
"""


def documented_lines() -> str:
    """The two lines of docs/experiments.rst's "A script of your own" block (its first literal block)."""
    text = (REPO / "docs" / "experiments.rst").read_text(encoding="utf-8")
    block = text.split(".. own-script-lines\n", 1)[1].split("::\n\n", 1)[1]
    code = []
    for line in block.splitlines():  # the indented lines up to the first that is not
        if not line.startswith("    "):
            break
        code.append(line[4:])
    assert len(code) == 2, code
    return "\n".join(code)


@pytest.fixture
def experiment(workspace: Workspace) -> Experiment:
    return workspace.create_experiment("curves")


def _script(share: FileShare, tmp_path: Path, name: str, text: str) -> str:
    local = tmp_path / name
    local.write_text(text)
    share.upload_file(local, f"scripts/{name}", progress=False)
    return f"$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/{name}"


def test_metrics_are_read_while_the_job_runs_and_after(experiment: Experiment, cluster: GpuCluster,
                                                        share: FileShare, tmp_path: Path) -> None:
    spec = HorovodJob(script=_script(share, tmp_path, "stepper.py", STEPPER), mounts=[share.mount()],
                      std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs")
    job = experiment.submit("stepper", spec, cluster=cluster)
    for text in job.stream("stdout.txt", poll_interval=0.1):
        if "two epochs" in text:
            break
    running = job.metrics()
    assert running.execution_state == "running"
    assert running.epochs == [1, 2] and running.reason == ""
    assert running.columns == ("loss", "accuracy", "val_loss", "val_accuracy", "lr", "my_score")
    assert running.column("loss") == [2.0, 1.5]
    assert running.column("my_score") == [None, 7.0]  # CSVLogger's NA is a missing value

    (tmp_path / "go").write_text("")
    share.upload_file(tmp_path / "go", "go", progress=False)
    job.wait(timeout=300)
    done = job.metrics()
    assert done.execution_state == "succeeded"
    assert done.epochs == [1, 2, 3]  # the half-written fourth row is not read
    assert done.last("accuracy") == 0.75 and done.best("val_loss", mode="min") == 1.2
    with pytest.warns(DeprecationWarning, match=r"passing mode to MetricsTable.best\(\) by position .* use mode="):
        assert done.best("val_loss", "min") == 1.2
    assert json.loads(done.to_json())["rows"][2] == {"epoch": 3, "loss": 1.0, "accuracy": 0.75, "val_loss": 1.2,
                                                      "val_accuracy": 0.6, "lr": 0.001, "my_score": 9.0}
    with pytest.raises(InvalidSpecError, match="'val_los' is not recorded"):
        done.column("val_los")


def test_a_job_that_records_none_gives_an_empty_table_that_says_why(experiment: Experiment, cluster: GpuCluster,
                                                                      share: FileShare, tmp_path: Path) -> None:
    spec = HorovodJob(script=_script(share, tmp_path, "quiet.py", "print('no metrics here')\n"),
                      mounts=[share.mount()])
    job = experiment.submit("quiet", spec, cluster=cluster)
    job.wait(timeout=300)
    table = job.metrics()
    assert isinstance(table, MetricsTable) and len(table) == 0 and list(table) == []
    assert "ended succeeded without writing metrics.csv" in table.reason
    assert "Experiments: curves and sweeps" in table.reason
    assert "No metrics for job <code>quiet</code>" in table._repr_html_()
    assert str(table).startswith("no metrics for job quiet: it ended succeeded")


def test_a_keras_script_reports_with_the_two_documented_lines(experiment: Experiment, cluster: GpuCluster,
                                                             share: FileShare, tmp_path: Path) -> None:
    lines = documented_lines()
    assert "horovod_batchai" not in lines
    script = KERAS_SCRIPT.format(lines=lines.replace("hvd.rank() == 0 and ", ""))
    spec = HorovodJob(script=_script(share, tmp_path, "own.py", script), mounts=[share.mount()])
    job = experiment.submit("own", spec, cluster=cluster)
    job.wait(timeout=600)
    table = job.metrics()
    assert table.epochs == [1, 2, 3]
    assert {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(table.columns)
    assert all(v is not None for v in table.column("val_accuracy"))


# -- the table itself, without a service --------------------------------------------------------------
CSV = "epoch,accuracy,loss,val_accuracy,val_loss\r\n0,0.5,1.0,0.4,1.1\r\n1,0.7,0.8,0.6,0.9\r\n"


@pytest.mark.parametrize("text, reason", [("", "no complete row"), ("epoch,loss", "no complete row"),
                                          ("step,loss\n1,2\n", "no 'epoch' column"),
                                          ("epoch,loss\n", "no finished epoch")])
def test_a_file_without_rows_gives_an_empty_table_with_its_reason(text: str, reason: str) -> None:
    table = parse_metrics_csv(text, job="j")
    assert len(table) == 0 and reason in table.reason


def test_the_table_converts_to_pandas_csv_and_html() -> None:
    table = parse_metrics_csv(CSV, job="j<1>")
    frame = table.to_pandas()
    assert list(frame.index) == [1, 2] and frame.loc[2, "val_accuracy"] == 0.6
    assert table.to_csv().splitlines() == ["epoch,loss,accuracy,val_loss,val_accuracy", "1,1.0,0.5,1.1,0.4",
                                           "2,0.8,0.7,0.9,0.6"]
    html = table._repr_html_()
    assert html.count("<tr>") == 3 and "<th" in html and ">0.7<" in html
    assert str(table).splitlines()[0].split() == ["epoch", "loss", "accuracy", "val_loss", "val_accuracy"]


def test_a_loss_that_overflowed_is_shown_and_written_as_json() -> None:
    """CSVLogger writes inf for a loss that overflowed: the table shows it, JSON (which has no
    infinity) gets null, CSV keeps it."""
    table = parse_metrics_csv("epoch,loss,accuracy\n0,inf,0.1\n1,-inf,0.1\n", job="diverged")
    assert [row.split() for row in str(table).splitlines()[2:]] == [["1", "inf", "0.1"], ["2", "-inf", "0.1"]]
    assert ">inf<" in table._repr_html_()
    assert [r["loss"] for r in json.loads(table.to_json())["rows"]] == [None, None]
    assert table.to_csv().splitlines()[1:] == ["1,inf,0.1", "2,-inf,0.1"]


def test_plot_draws_training_and_validation_curves() -> None:
    figure = parse_metrics_csv(CSV, job="j").plot()
    loss, accuracy = figure.axes
    assert (loss.get_title(), accuracy.get_title()) == ("loss", "accuracy")
    assert [line.get_label() for line in loss.lines] == ["training", "validation"]
    assert list(accuracy.lines[1].get_ydata()) == [0.4, 0.6]
    from horovod_batchai._shared.curves import figure_png
    assert figure_png(figure).startswith(b"\x89PNG")


def test_plot_names_a_metric_that_was_not_recorded_as_the_caller_gave_it() -> None:
    with pytest.raises(InvalidSpecError) as caught:
        parse_metrics_csv(CSV, job="j").plot(["loss", "f1"])
    assert caught.value.field == "metrics[1]" and "'loss'" in caught.value.valid_form


def test_plot_and_to_pandas_say_what_to_install_when_it_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from horovod_batchai import MissingDependencyError
    table = parse_metrics_csv(CSV, job="j")
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'horovod-batchai\[notebook\]'") as info:
        table.plot()
    assert isinstance(info.value, ImportError) and info.value.package == "matplotlib"
    with pytest.raises(MissingDependencyError, match="to_pandas"):
        table.to_pandas()


def test_execution_state_is_recorded_in_the_table() -> None:
    assert parse_metrics_csv(CSV, job="j", execution_state=ExecutionState.RUNNING.value).execution_state == "running"


def test_the_sdk_imports_no_plotting_table_or_training_library() -> None:
    import subprocess
    import sys
    program = ("import sys, horovod_batchai; print(sorted(m for m in ('matplotlib', 'pandas', 'tensorflow', "
               "'tensorboard', 'IPython') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stdout.strip()) == (0, "[]"), run.stderr
