"""Metrics and sweeps through the command line, for pipelines: `job metrics` as a table, JSON and
CSV; `sweep create` creates the service's sweep and waits for its end, with an exit status saying
whether it found a best trial; `sweep show`, `results` and `cancel` from other invocations;
mistakes exit 2 and submit nothing."""
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
    assert data["state"] == "completed" and data["bestTrial"] == "lr-1"
    assert [(t["name"], t["parameters"], t["status"], t["epochs"]) for t in data["trials"]] == [
        ("lr-0", {"lr": 0.01}, "completed", 2), ("lr-1", {"lr": 0.03}, "completed", 2)]
    assert data["trials"][1]["best"] == pytest.approx(0.4) and data["trials"][1]["reason"] is None

    table = cli("sweep", "results", *EXP, "-n", "lr")
    assert table.code == 0
    lines = table.out.splitlines()
    assert lines[0].split() == ["trial", "lr", "status", "reason", "epochs", "final_val_accuracy", "best_val_accuracy"]
    assert lines[2].split() == ["lr-0", "0.01", "completed", "2", "0.2", "0.2"]
    csv = cli("sweep", "results", *EXP, "-n", "lr", "--csv")
    assert csv.out.splitlines()[0] == "trial,lr,status,reason,epochs,final_val_accuracy,best_val_accuracy"
    shown = cli("sweep", "show", *EXP, "-n", "lr", "--query", "bestTrial")
    assert (shown.code, shown.out.strip()) == (0, "lr-1")
    assert cli("sweep", "list", *EXP, "--json").json() == [{"name": "lr", "state": "completed", "trials": 2}]

    metrics = cli("job", "metrics", *EXP, "-n", "lr-1")
    assert metrics.code == 0
    assert [line.split() for line in metrics.out.splitlines()] == [
        ["epoch", "loss", "val_accuracy"], ["-----", "----", "------------"], ["1", "1", "0.3"], ["2", "0.5", "0.4"]]
    as_json = cli("job", "metrics", *EXP, "-n", "lr-1", "--json").json()
    assert as_json["rows"][1] == {"epoch": 2, "loss": 0.5, "val_accuracy": 0.4}
    assert as_json["executionState"] == "succeeded"
    assert cli("job", "metrics", *EXP, "-n", "lr-1", "--csv").out == "epoch,loss,val_accuracy\n1,1.0,0.3\n2,0.5,0.4\n"


def test_job_tensorboard_without_starting_it_prints_the_command(cli: Cli, config: Path, tmp_path: Path) -> None:
    assert _sweep(cli, config, "one", "-p", "lr=0.01").code == 0
    run = cli("job", "tensorboard", *EXP, "-n", "one-0", "--no-start", "--logdir", str(tmp_path / "tb"),
              "--port", "6123")
    assert run.code == 0, run.err
    assert run.out.splitlines() == [f"event files of job one-0 are in {tmp_path / 'tb'}; start TensorBoard with:",
                                    f"  tensorboard --logdir {tmp_path / 'tb'} --host 127.0.0.1 --port 6123"]


def test_a_failed_trial_has_its_reason_and_a_sweep_without_a_best_trial_exits_non_zero(cli: Cli, config: Path) -> None:
    run = _sweep(cli, config, "bad", "-p", "lr=0.01,0.5", "--json")
    assert run.code == 0, run.err  # one trial failed, the other is the best
    trials = {t["name"]: t for t in run.json()["trials"]}
    assert trials["bad-1"]["status"] == "failed" and trials["bad-1"]["reason"]
    failed = cli("job", "metrics", *EXP, "-n", "bad-1")
    assert failed.code == EXIT_FAILED
    assert failed.out.startswith("no metrics for job bad-1: it ended failed")
    none = _sweep(cli, config, "none", "-p", "lr=0.5")
    assert none.code == EXIT_FAILED and "sweep 'none' is failed" in none.err
    shown = cli("sweep", "show", *EXP, "-n", "none", "--query", "bestTrial")
    assert shown.code == EXIT_FAILED and shown.out.strip() == ""


def test_cancel_from_another_invocation_stops_a_sweep(cli: Cli, config: Path) -> None:
    started = _sweep(cli, config, "long", "-p", "lr=0.01,0.02,0.03", "--append-args", "--pause 300",
                     "--max-concurrent-trials", "1", "--no-wait", "--json")
    assert started.code == 0, started.err
    assert started.json()["state"] == "running" and started.json()["bestTrial"] is None
    waiting = cli("sweep", "show", *EXP, "-n", "long", "--query", "bestTrial")
    assert waiting.code == EXIT_NOT_FOUND and "no best trial yet" in waiting.err
    cancelled = cli("sweep", "cancel", *EXP, "-n", "long", "--json")
    assert cancelled.code == 0, cancelled.err
    assert cancelled.json()["state"] == "cancelled"
    assert all(t["status"] == "cancelled" for t in cancelled.json()["trials"])
    shown = cli("sweep", "show", *EXP, "-n", "long")
    assert shown.code == EXIT_FAILED and "sweep 'long' is cancelled" in shown.err


def test_a_service_sweep_with_a_policy_and_bayesian_sampling_from_the_command_line(cli: Cli, config: Path) -> None:
    run = _sweep(cli, config, "bo", "-p", "lr=uniform:0.01:0.04", "--sampling", "bayesian", "--num-trials", "3",
                 "--seed", "3", "--max-concurrent-trials", "1", "--early-termination", "bandit", "--slack-factor",
                 "0.2", "--trial-timeout", "600", "--json")
    assert run.code == 0, run.err
    assert len(run.json()["trials"]) == 3 and all(0.01 <= t["parameters"]["lr"] <= 0.04 for t in run.json()["trials"])
    stray = _sweep(cli, config, "x", "-p", "lr=0.1", "--slack-factor", "0.2")
    assert stray.code == EXIT_USAGE and "--slack-factor is a setting of --early-termination bandit" in stray.err


def test_mistakes_exit_2_and_submit_nothing(cli: Cli, config: Path) -> None:
    bad = _sweep(cli, config, "x", "-p", "lr")
    assert bad.code == EXIT_USAGE and "expected NAME=V1,V2" in bad.err
    twice = _sweep(cli, config, "x", "-p", "lr=1", "-p", "lr=2")
    assert twice.code == EXIT_USAGE and "'lr' is given twice" in twice.err
    grid = _sweep(cli, config, "x", "-p", "lr=loguniform:1e-4:1e-2")
    assert grid.code == EXIT_USAGE and "LogUniform cannot be searched by sampling='grid'" in grid.err
    short = _sweep(cli, config, "x", "-p", "lr=quniform:1:2", "--sampling", "random", "--num-trials", "2")
    assert short.code == EXIT_USAGE and "lr=quniform:N:N:N" in short.err
    assert cli("job", "list", *EXP, "--json").json() == []
    assert cli("sweep", "show", *EXP, "-n", "nothing").code == EXIT_NOT_FOUND
