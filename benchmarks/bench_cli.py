"""How long a pipeline step's CLI command takes beyond its request: ``horovod-batchai job show`` on
a running local service, against one GET of the same job through the SDK in a warm process, in the
same run. The difference is what a new process pays before and after its request (starting Python,
importing the SDK and Microsoft's client, finding the service); the target is 0.3 s.

The command runs as an installed package does: with its bytecode cached (pip compiles it when it
installs; here a first, untimed command writes it to a temporary ``PYTHONPYCACHEPREFIX``). With
$PYTHONDONTWRITEBYTECODE set, as in this project's development environment, every command compiles
the package's modules from source again; that figure is printed too, for comparison. The commands'
CPU time (user + system) is printed beside their wall time: on a loaded machine it says what the
command itself costs.

    python benchmarks/bench_cli.py [--runs 5]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from horovod_batchai import FileShare, HorovodJob, Target, Workspace
from horovod_batchai.local import ensure_running, stop_daemon

TARGET_S = 0.3


def _time_commands(command: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Medians of ``runs`` commands: wall seconds, CPU seconds (user + system)."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


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
                installed = {**env, "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache")}
                installed.pop("PYTHONDONTWRITEBYTECODE", None)
                subprocess.run(command, env=installed, capture_output=True, check=True)  # writes the bytecode
                uncompiled = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
                uncompiled.pop("PYTHONPYCACHEPREFIX", None)
                command_s, command_cpu = _time_commands(command, installed, args.runs)
                source_s, source_cpu = _time_commands(command, uncompiled, args.runs)
                gets = []
                for _ in range(args.runs * 4):
                    started = time.perf_counter()
                    experiment.get_job("job1")
                    gets.append(time.perf_counter() - started)
        finally:
            stop_daemon(state)
    get_s = statistics.median(gets)
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.runs} commands of each kind and "
          f"{args.runs * 4} GETs; one GET in a warm process {get_s * 1000:.1f} ms")
    print(f"horovod-batchai job show {command_s * 1000:.0f} ms (CPU {command_cpu * 1000:.0f} ms): "
          f"{(command_s - get_s) * 1000:.0f} ms more than the GET, target < {TARGET_S * 1000:.0f} ms more: "
          f"{'met' if command_s - get_s < TARGET_S else 'NOT met'}")
    print(f"  without cached bytecode ($PYTHONDONTWRITEBYTECODE): {source_s * 1000:.0f} ms "
          f"(CPU {source_cpu * 1000:.0f} ms), {(source_s - get_s) * 1000:.0f} ms more than the GET")


if __name__ == "__main__":
    main()
