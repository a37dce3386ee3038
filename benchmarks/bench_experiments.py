"""Sweeps and metrics against the local service (a separate daemon process, as users run it).

1. Sweep wall time: four trials of the same job (two values of ``--lr`` x two of ``--batch-size``)
   run by ``Experiment.sweep(..., max_concurrent_trials=2).wait()``, against the baseline a user
   would write by hand: the same four jobs submitted and awaited one after the other
   (``submit(...).wait()`` in a loop), on the same two-node cluster, in the same run. The baseline
   runs first, then the sweep, alternating for ``--repeats`` rounds.
2. ``Job.metrics()`` latency on a running job that has recorded ``--rows`` epochs, against one
   ``Job.refresh()`` (a single GET of the job) measured alternately in the same run.

Trials are ``--trial sleep`` (default: a script that sleeps ``--epoch-seconds`` per epoch and
records its metrics, so the machine's cores do not decide the result) or ``--trial training``
(the training package for two epochs on 320 generated images: on a two-core machine two trials
at once share the cores, so expect less gain).

    python benchmarks/bench_experiments.py [--trial sleep|training] [--repeats 1] [--samples 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from horovod_batchai import FileShare, HorovodJob, Target, Workspace
from horovod_batchai.local import ensure_running, stop_daemon

RG = "bench.experiments"
REPO = Path(__file__).resolve().parents[1]
GRID = {"lr": [0.003, 0.0003], "batch-size": [16, 32]}
SLEEPER = """\
import argparse, os, time
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float)
parser.add_argument("--batch-size", type=int)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--epoch-seconds", type=float, default=3.0)
args = parser.parse_args()
with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
    fh.write("epoch,loss,accuracy,val_loss,val_accuracy,lr,images_per_second,epoch_seconds\\n")
    for epoch in range(args.epochs):
        time.sleep(args.epoch_seconds)
        fh.write(f"{epoch},{1 / (epoch + 1)},{epoch / 10},{1 / (epoch + 2)},{args.lr * 10},{args.lr},100,"
                 f"{args.epoch_seconds}\\n")
        fh.flush()
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def trial_spec(kind: str, share: FileShare, work: Path, epoch_seconds: float) -> HorovodJob:
    root = "$AZ_BATCHAI_JOB_MOUNT_ROOT/bench/bench"
    share.create_directory("bench")
    if kind == "sleep":
        (work / "sleeper.py").write_text(SLEEPER)
        share.upload_file(work / "sleeper.py", "bench/sleeper.py", progress=False)
        return HorovodJob(script=f"{root}/sleeper.py", arguments=f"--epoch-seconds {epoch_seconds}",
                          mounts=[share.mount(relative_mount_path="bench")], std_out_err_path_prefix=f"{root}/logs")
    from training.synthetic import write_synthetic_cifar10
    data = write_synthetic_cifar10(work / "cifar-10-batches-py", num_train=320, num_test=96, seed=0)
    share.upload_file(REPO / "training" / "cifar_cnn_distributed.py", "bench/cifar_cnn_distributed.py", progress=False)
    share.upload_directory(data, "bench/cifar-10-batches-py", progress=False)
    return HorovodJob(script=f"{root}/cifar_cnn_distributed.py",
                      arguments=f"--dir=$AZ_BATCHAI_JOB_TEMP/run --data-dir={root}/cifar-10-batches-py --epochs=2 "
                                "--warmup-epochs=0 --no-augmentation --seed=0",
                      mounts=[share.mount(relative_mount_path="bench")], std_out_err_path_prefix=f"{root}/logs")


def by_hand(experiment, cluster, spec: HorovodJob, tag: str) -> float:
    """The four configurations as a user writes them without sweeps: submit, wait, next."""
    started = time.perf_counter()
    index = 0
    for lr in GRID["lr"]:
        for batch in GRID["batch-size"]:
            job = experiment.submit(f"hand{tag}-{index}", spec.replace(arguments=f"{spec.arguments} --lr {lr!r} "
                                                                                 f"--batch-size {batch}"),
                                    cluster=cluster)
            job.wait(timeout=3600)
            index += 1
    return time.perf_counter() - started


def swept(experiment, cluster, spec: HorovodJob, tag: str) -> float:
    started = time.perf_counter()
    results = experiment.sweep(spec, name=f"sweep{tag}", parameters=GRID, cluster=cluster,
                               max_concurrent_trials=2).wait(timeout=3600)
    elapsed = time.perf_counter() - started
    assert [r.trial.status for r in results] == ["succeeded"] * 4, [r.trial.status for r in results]
    return elapsed


def metrics_latency(experiment, cluster, share: FileShare, work: Path, rows: int, samples: int) -> None:
    spec = trial_spec("sleep", share, work, 0.0).replace(arguments=f"--lr 0.001 --batch-size 32 --epochs {rows} "
                                                                         "--epoch-seconds 0.01")
    # the job records its epochs, then keeps running while it is measured
    waiter = (SLEEPER + "time.sleep(600)\n")
    (work / "waiter.py").write_text(waiter)
    share.upload_file(work / "waiter.py", "bench/waiter.py", progress=False)
    job = experiment.submit("metrics-running", spec.replace(script=spec.script.replace("sleeper.py", "waiter.py")),
                            cluster=cluster)
    while len(job.metrics()) < rows:
        if job.execution_state.is_terminal():
            raise SystemExit(f"the measured job ended {job.execution_state.value}: {job.stderr_tail()}")
        time.sleep(0.2)
    metric_times, refresh_times = [], []
    try:
        for _ in range(samples):
            t0 = time.perf_counter()
            job.refresh()
            refresh_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            table = job.metrics()
            metric_times.append(time.perf_counter() - t0)
            assert len(table) == rows and table.execution_state == "running"
    finally:
        job.terminate()
    print(f"Job.metrics() on a running job with {rows} epochs, {samples} samples:")
    for label, values in (("Job.metrics()", metric_times), ("Job.refresh() (one GET)", refresh_times)):
        print(f"  {label:26} p50 {statistics.median(values) * 1000:7.1f} ms   p95 {percentile(values, 0.95) * 1000:7.1f} ms")
    print(f"metrics latency: {statistics.median(metric_times) / statistics.median(refresh_times):.2f}x one GET "
          "(median; it is a GET, a listing and a download)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trial", choices=("sleep", "training"), default="sleep")
    parser.add_argument("--epoch-seconds", type=float, default=3.0, help="--trial sleep: seconds per epoch")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of (by hand, sweep)")
    parser.add_argument("--samples", type=int, default=20, help="Job.metrics() samples")
    parser.add_argument("--rows", type=int, default=20, help="epochs the measured job has recorded")
    args = parser.parse_args()
    print(f"load average: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")

    with tempfile.TemporaryDirectory(prefix="bench-experiments-") as tmp:
        work = Path(tmp)
        state = work / "state"
        info = ensure_running(state)
        try:
            with Target.local(info) as target:
                ws = Workspace.create(target, RG, "bench", location="eastus")
                experiment = ws.create_experiment("bench")
                cluster = ws.create_cluster("c2", vm_size="Standard_D1", target_node_count=2,
                                            admin_user_name="bench", admin_password="Bench-Pa55word!")
                share = FileShare.create(target, RG, "benchexperiments", "bench", location="eastus")
                spec = trial_spec(args.trial, share, work, args.epoch_seconds)
                cluster.wait_until_ready(timeout=300)
                hand_times, sweep_times = [], []
                for round_ in range(args.repeats):
                    hand_times.append(by_hand(experiment, cluster, spec, str(round_)))
                    sweep_times.append(swept(experiment, cluster, spec, str(round_)))
                    print(f"round {round_ + 1}: by hand {hand_times[-1]:.1f} s, sweep {sweep_times[-1]:.1f} s",
                          flush=True)
                hand, sweep = statistics.median(hand_times), statistics.median(sweep_times)
                print(f"4 trials ({args.trial}) on a 2-node cluster: by hand, one after the other {hand:.1f} s; "
                      f"Experiment.sweep(max_concurrent_trials=2) {sweep:.1f} s")
                print(f"sweep wall time: {sweep / hand:.2f}x by hand (median of {args.repeats}; lower is better)")
                metrics_latency(experiment, cluster, share, work, args.rows, args.samples)
        finally:
            stop_daemon(state)
    print(f"load average: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
