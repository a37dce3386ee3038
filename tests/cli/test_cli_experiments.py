"""Metrics and sweeps through the command line, for pipelines: `job metrics` as a table, JSON and
CSV; `sweep create` runs a sweep to its end with an exit status saying whether it succeeded;
`sweep show`, `results` and `cancel` from other invocations; mistakes exit 2 and submit nothing."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from horovod_batchai.cli import EXIT_FAILED, EXIT_NOT_FOUND, EXIT_USAGE

from cli_support import ACCOUNT, RG, STORAGE, WS, CliRun

pytestmark = pytest.mark.slow

Cli = Callable[..., CliRun]
REPO = Path(__file__).resolve().parents[2]
EXP = ["-g", RG, "-w", WS, "-e", "cifar"]

# A trial: the tutorial's --dir, then the sweep's --lr; lr 0.5 fails, the others record 2 epochs.
TRIAL = """\
import argparse, os, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("-d", "--dir")
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--pause", type=float, default=0.2)
args = parser.parse_args()
if args.lr == 0.5:
    sys.exit("lr 0.5 diverges")
with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
    fh.write("epoch,loss,val_accuracy\\n")
    for epoch in range(2):
        time.sleep(args.pause)
        fh.write(f"{epoch},{1 / (epoch + 1)},{args.lr * 10 + epoch / 10}\\n")
        fh.flush()
"""


@pytest.fixture
def config(cli: Cli, workspace: str, share: str, tmp_path: Path) -> Path:
    """Experiment cifar, a steady 2-node cluster, the trial script where job.json looks for its script."""
    assert cli("experiment", "create", "-g", RG, "-w", WS, "-n", "cifar").code == 0
    created = cli("cluster", "create", "-g", RG, "-w", WS, "-n", "nc6cluster", "--target", "2",
                  "--generate-ssh-keys", "--wait", "--timeout", "120")
    assert created.code == 0, created.err
    (tmp_path / "trial.py").write_text(TRIAL)
    assert cli("file", "upload", *STORAGE, "--source", str(tmp_path / "trial.py"), "--path", "cifar/").code == 0
    document = json.loads((REPO / "examples" / "job.json").read_text())
    settings = document["properties"]["horovodSettings"]
    settings["pythonScriptFilePath"] = settings["pythonScriptFilePath"].replace("cifar_cnn_distributed.py", "trial.py")
    path = tmp_path / "job.json"
    path.write_text(json.dumps(document))
    return path


def _sweep(cli: Cli, config: Path, name: str, *extra: str) -> CliRun:
    return cli("sweep", "create", *EXP, "-n", name, "--cluster", "nc6cluster", "--config-file", str(config),
               "--storage-account-name", ACCOUNT, "--node-count", "1", *extra)


def test_a_sweep_runs_to_its_end_and_its_results_and_metrics_read_back(cli: Cli, config: Path) -> None:
    run = _sweep(cli, config, "lr", "-p", "lr=0.01,0.03", "--json")
    assert run.code == 0, run.err
    data = run.json()
    assert data["state"] == "succeeded" and data["bestTrial"] == "lr-001"
    assert [(t["trial"], t["lr"], t["status"], t["epochs"]) for t in data["trials"]] == [
        ("lr-000", 0.01, "succeeded", 2), ("lr-001", 0.03, "succeeded", 2)]
    assert data["trials"][1]["best_val_accuracy"] == pytest.approx(0.4)

    table = cli("sweep", "results", *EXP, "-n", "lr")
    assert table.code == 0
    lines = table.out.splitlines()
    assert lines[0].split() == ["trial", "lr", "status", "epochs", "final_val_accuracy", "best_val_accuracy"]
    assert lines[2].split() == ["lr-000", "0.01", "succeeded", "2", "0.2", "0.2"]
    csv = cli("sweep", "results", *EXP, "-n", "lr", "--csv")
    assert csv.out.splitlines()[0] == "trial,lr,status,epochs,final_val_accuracy,best_val_accuracy"
    shown = cli("sweep", "show", *EXP, "-n", "lr", "--query", "state")
    assert (shown.code, shown.out.strip()) == (0, "succeeded")
    assert cli("sweep", "list", *EXP, "--json").json() == [{"name": "lr", "state": "succeeded", "trials": 2}]

    metrics = cli("job", "metrics", *EXP, "-n", "lr-001")
    assert metrics.code == 0
    assert [line.split() for line in metrics.out.splitlines()] == [
        ["epoch", "loss", "val_accuracy"], ["-----", "----", "------------"], ["1", "1", "0.3"], ["2", "0.5", "0.4"]]
    as_json = cli("job", "metrics", *EXP, "-n", "lr-001", "--json").json()
    assert as_json["rows"][1] == {"epoch": 2, "loss": 0.5, "val_accuracy": 0.4}
    assert as_json["executionState"] == "succeeded"
    assert cli("job", "metrics", *EXP, "-n", "lr-001", "--csv").out == "epoch,loss,val_accuracy\n1,1.0,0.3\n2,0.5,0.4\n"


def test_job_tensorboard_without_starting_it_prints_the_command(cli: Cli, config: Path, tmp_path: Path) -> None:
    assert _sweep(cli, config, "one", "-p", "lr=0.01").code == 0
    run = cli("job", "tensorboard", *EXP, "-n", "one-000", "--no-start", "--logdir", str(tmp_path / "tb"),
              "--port", "6123")
    assert run.code == 0, run.err
    assert run.out.splitlines() == [f"event files of job one-000 are in {tmp_path / 'tb'}; start TensorBoard with:",
                                    f"  tensorboard --logdir {tmp_path / 'tb'} --host 127.0.0.1 --port 6123"]


def test_a_sweep_with_a_failed_trial_exits_1_and_so_does_its_failed_jobs_metrics(cli: Cli, config: Path) -> None:
    run = _sweep(cli, config, "bad", "-p", "lr=0.01,0.5")
    assert run.code == EXIT_FAILED
    assert "sweep 'bad' is failed" in run.err
    assert "lr-" not in run.err and "bad-001" in run.out and "failed" in run.out
    failed = cli("job", "metrics", *EXP, "-n", "bad-001")
    assert failed.code == EXIT_FAILED
    assert failed.out.startswith("no metrics for job bad-001: it ended failed")
    assert cli("sweep", "show", *EXP, "-n", "bad").code == EXIT_FAILED


def test_cancel_from_another_invocation_stops_a_sweep(cli: Cli, config: Path) -> None:
    started = _sweep(cli, config, "long", "-p", "lr=0.01,0.02,0.03", "--append-args", "--pause 300",
                     "--max-concurrent-trials", "1", "--no-wait", "--json")
    assert started.code == 0, started.err
    assert [t["status"] for t in started.json()["trials"]][1:] == ["pending", "pending"]
    refused = cli("sweep", "cancel", *EXP, "-n", "long", "--timeout", "-1")
    assert refused.code == 2 and "--timeout" in refused.err
    assert [t["status"] for t in cli("sweep", "show", *EXP, "-n", "long", "--json").json()["trials"]][0] != "terminated"
    cancelled = cli("sweep", "cancel", *EXP, "-n", "long", "--timeout", "120", "--json")
    assert cancelled.code == 0, cancelled.err
    assert [t["status"] for t in cancelled.json()["trials"]] == ["terminated", "cancelled", "cancelled"]
    shown = cli("sweep", "show", *EXP, "-n", "long")
    assert shown.code == EXIT_FAILED and "sweep 'long' is stopped" in shown.err


def test_mistakes_exit_2_and_submit_nothing(cli: Cli, config: Path) -> None:
    bad = _sweep(cli, config, "x", "-p", "lr")
    assert bad.code == EXIT_USAGE and "expected NAME=V1,V2" in bad.err
    twice = _sweep(cli, config, "x", "-p", "lr=1", "-p", "lr=2")
    assert twice.code == EXIT_USAGE and "'lr' is given twice" in twice.err
    grid = _sweep(cli, config, "x", "-p", "lr=loguniform:1e-4:1e-2")
    assert grid.code == EXIT_USAGE and "LogUniform cannot be searched by a grid" in grid.err
    assert cli("job", "list", *EXP, "--json").json() == []
    assert cli("sweep", "show", *EXP, "-n", "nothing").code == EXIT_NOT_FOUND
