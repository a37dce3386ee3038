"""How long a pipeline step's CLI command takes beyond its request: ``horovod-batchai job show`` on
a running local service, against one GET of the same job through the SDK in a warm process, in the
same run. The difference is what a new process pays before and after its request (starting Python,
importing the SDK and Microsoft's client, finding the service); the target is 0.3 s.

    python benchmarks/bench_cli.py [--runs 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from horovod_batchai import FileShare, HorovodJob, Target, Workspace
from horovod_batchai.local import ensure_running, stop_daemon

TARGET_S = 0.3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        info = ensure_running(state)
        try:
            with Target.local(info) as target:
                ws = Workspace.create(target, "bench.cli", "ws", location="eastus")
                cluster = ws.create_cluster("c1", vm_size="Standard_D1", target_node_count=1, admin_user_name="bench",
                                            admin_password="Bench-Pa55word!")
                share = FileShare.create(target, "bench.cli", "benchcli", "share", location="eastus")
                script = Path(tmp) / "hello.py"
                script.write_text("print('hello')\n")
                share.upload_file(script, "cli/hello.py", progress=False)
                cluster.wait_until_ready(timeout=300)
                experiment = ws.create_experiment("exp")
                spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/cli/cli/hello.py",
                                  mounts=[share.mount(relative_mount_path="cli")])
                experiment.submit("job1", spec, cluster=cluster).wait(timeout=300)
                command = [sys.executable, "-m", "horovod_batchai.cli", "job", "show", "-g", "bench.cli", "-w", "ws",
                           "-e", "exp", "-n", "job1"]
                env = {**os.environ, "HOROVOD_BATCHAI_STATE_DIR": str(state)}
                commands = []
                for _ in range(args.runs):
                    started = time.perf_counter()
                    subprocess.run(command, env=env, capture_output=True, check=True)
                    commands.append(time.perf_counter() - started)
                gets = []
                for _ in range(args.runs * 4):
                    started = time.perf_counter()
                    experiment.get_job("job1")
                    gets.append(time.perf_counter() - started)
        finally:
            stop_daemon(state)
    command_s, get_s = statistics.median(commands), statistics.median(gets)
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.runs} commands and {args.runs * 4} GETs")
    print(f"horovod-batchai job show {command_s * 1000:.0f} ms, one GET in a warm process {get_s * 1000:.1f} ms: "
          f"{(command_s - get_s) * 1000:.0f} ms more ({command_s / get_s:.0f} x), target < {TARGET_S * 1000:.0f} ms more: "
          f"{'met' if command_s - get_s < TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main()
