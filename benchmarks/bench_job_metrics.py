"""Job.metrics() on a running job against one job GET (Job.refresh()), on the same job, same run.

A local service with MLflow tracking on runs one job whose script logs with MLflow only -- a few
epoch metrics and a per-step metric every 10 steps (``--steps`` values), as a training run does --
and then waits. While it runs, the two calls alternate:

  get      Job.refresh(): one GET of the job through the Batch AI client
  metrics  Job.metrics(): that GET, then through the same client's pipeline MLflow's runs/get
           and one metrics/get-history per metric (the run's id found once, on the first call)

and the medians of each and their ratio are printed (what reading a run's histories costs, in job
GETs). Usage: ``python benchmarks/bench_job_metrics.py [--rounds 30] [--steps 300]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

SCRIPT = """\
import os, sys, time
import mlflow
steps = int(sys.argv[1])
for epoch in range(5):
    mlflow.log_metrics({"loss": 1.0 / (epoch + 1), "accuracy": 0.1 * epoch, "val_loss": 1.1 / (epoch + 1),
                        "val_accuracy": 0.09 * epoch}, step=epoch)
client = mlflow.MlflowClient()
run_id = mlflow.active_run().info.run_id
from mlflow.entities import Metric
now = int(time.time() * 1000)
for start in range(0, steps, 500):
    client.log_batch(run_id, metrics=[Metric("step_loss", 1.0 / (s + 1), now, s * 10)
                                      for s in range(start, min(steps, start + 500))])
print("logged", flush=True)
go = os.path.join(os.environ["AZ_BATCHAI_JOB_MOUNT_ROOT"], "bench", "go")
while not os.path.exists(go):
    time.sleep(0.2)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="calls of each kind (alternating)")
    parser.add_argument("--steps", type=int, default=300, help="values of the per-step metric")
    args = parser.parse_args()

    from horovod_batchai import FileShare, HorovodJob, Target, Workspace
    from horovod_batchai.local import LocalService, ServiceSettings

    with tempfile.TemporaryDirectory(prefix="bench-job-metrics-") as tmp:
        scratch = Path(tmp)
        settings = ServiceSettings(provision_delay_s=0.1, deallocation_delay_s=0.1, mlflow_tracking=True)
        service = LocalService(scratch / "state", settings=settings).start()
        try:
            with Target.local(service=service) as target:
                workspace = Workspace.create(target, "bench-rg", "ws", location="eastus")
                share = FileShare.create(target, "bench-rg", "benchmetrics", "bench", location="eastus")
                (scratch / "logger.py").write_text(SCRIPT)
                share.upload_file(scratch / "logger.py", "logger.py", progress=False)
                cluster = workspace.create_cluster("cluster", vm_size="STANDARD_D1", target_node_count=1,
                                                   admin_user_name="bench", ssh_public_key="ssh-rsa AAAAB3Nza b@x")
                cluster.wait_until_ready(timeout=120)
                job = workspace.create_experiment("exp").submit(
                    "logger", HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/bench/logger.py",
                                         arguments=str(args.steps), mounts=[share.mount()]), cluster=cluster)
                for text in job.stream("stdout.txt", poll_interval=0.1, timeout=600):
                    if "logged" in text:
                        break
                table = job.metrics()  # the first call also finds the run's id
                assert table.source == "mlflow" and len(table.history("step_loss")) == args.steps, table
                gets, reads = [], []
                for _ in range(args.rounds):
                    t0 = time.perf_counter()
                    job.refresh()
                    gets.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    table = job.metrics()
                    reads.append(time.perf_counter() - t0)
                    assert table.execution_state == "running"
                (scratch / "go").write_text("")
                share.upload_file(scratch / "go", "go", progress=False)
                job.wait(timeout=300)
        finally:
            service.stop()
    get_ms, read_ms = statistics.median(gets) * 1000, statistics.median(reads) * 1000
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} rounds; the run has {len(table.columns)} epoch "
          f"metrics x {len(table)} epochs and {args.steps} step values")
    print(f"job GET (Job.refresh)      median {get_ms:8.1f} ms")
    print(f"Job.metrics() (MLflow)     median {read_ms:8.1f} ms")
    print(f"Job.metrics() / job GET    {read_ms / get_ms:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
