"""The SDK's flow as a Python 3.13 user runs it, with the SDK installed alone (no TensorFlow, no
Horovod): the SDK starts the local service (on this Python) for ``--state-dir``, with the node
runtime ``--node-runtime`` (a Python 3.11 environment with the training stack), and goes through
resource group, workspace, cluster, share, upload, a Horovod job, its stream and a download.
Then, with a second state directory and no node runtime set, the same job fails at once, saying
what is missing.

It prints one JSON line at the end for the test to check; exit status 0 only when every step worked.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

from horovod_batchai import FileShare, HorovodJob, JobFailedError, Target, Workspace
from horovod_batchai.local import stop_daemon

# What the job runs under horovodrun, on the node runtime: each rank says where it runs and adds
# its rank + 1 through Horovod; rank 0 writes what it saw onto the share.
JOB_SCRIPT = """\
import json, os, sys
import horovod
import horovod.tensorflow.keras as hvd
import keras
import tensorflow as tf

hvd.init()
total = hvd.allreduce(tf.constant(float(hvd.rank() + 1)), op=hvd.Sum)
print(f"rank {hvd.rank()} of {hvd.size()} on Python {sys.version.split()[0]}", flush=True)
if hvd.rank() == 0:
    with open(os.path.join(sys.argv[1], "result.json"), "w") as fh:
        json.dump({"python": sys.version.split()[0], "tensorflow": tf.__version__, "keras": keras.__version__,
                   "horovod": horovod.__version__, "size": hvd.size(), "sum": float(total)}, fh)
"""


def _run_tutorial_steps(target: Target, work: Path, name: str) -> tuple[Workspace, FileShare, HorovodJob]:
    ws = Workspace.create(target, f"{name}.rg", "ws", location="eastus")
    share = FileShare.create(target, f"{name}.rg", f"{name}acct", "share", location="eastus")
    share.create_directory("run")
    (work / "hvd_job.py").write_text(JOB_SCRIPT)
    share.upload_file(work / "hvd_job.py", "run/hvd_job.py")
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/share/run/hvd_job.py",
                      arguments="$AZ_BATCHAI_JOB_MOUNT_ROOT/share/run", node_count=2, mounts=[share.mount()])
    return ws, share, spec


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--node-runtime", required=True)
    args = parser.parse_args()
    report: dict = {"sdk_python": sys.version.split()[0],
                    "stack_importable": [m for m in ("tensorflow", "horovod", "keras")
                                         if importlib.util.find_spec(m) is not None]}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        state = args.state_dir / "with-runtime"
        try:
            with Target.local(state_dir=state, node_runtime=args.node_runtime) as target:
                ws, share, spec = _run_tutorial_steps(target, work, "py313")
                cluster = ws.create_cluster("cluster", vm_size="Standard_NC6", target_node_count=2)
                cluster.wait_until_ready(timeout=300)
                job = ws.create_experiment("exp").submit("hvd", spec, cluster=cluster)
                report["streamed"] = "".join(job.stream("stdout.txt"))
                job.wait(timeout=600)
                share.download_file("run/result.json", work / "result.json")
                report["job"] = json.loads((work / "result.json").read_text())
                log_name = next(f.name for f in job.list_output_files() if f.name.startswith("execution"))
                report["execution_log"] = job.download(log_name, work / log_name).read_text()
                cluster.resize(0)
                ws.delete(delete_resource_group=True)
        finally:
            stop_daemon(state)

        # Nothing set: the service runs jobs on its own Python, this 3.13 one, which lacks the stack.
        state = args.state_dir / "without-runtime"
        try:
            with Target.local(state_dir=state) as target:
                ws, share, spec = _run_tutorial_steps(target, work, "bare313")
                cluster = ws.create_cluster("cluster", vm_size="Standard_NC6", target_node_count=2)
                cluster.wait_until_ready(timeout=300)
                job = ws.create_experiment("exp").submit("hvd", spec, cluster=cluster)
                started = time.monotonic()
                try:
                    job.wait(timeout=600)
                    report["bare_failure"] = None
                except JobFailedError as exc:
                    report["bare_failure"] = {"codes": [e.code for e in exc.errors], "message": str(exc),
                                              "seconds": round(time.monotonic() - started, 1)}
                report["bare_outputs"] = sorted(f.name for f in job.list_output_files())
                ws.delete(delete_resource_group=True)
        finally:
            stop_daemon(state)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
