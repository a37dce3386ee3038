"""Helpers for the sweep tests: a sweep's body around a tiny trial script, and the sweep resource
driven with raw HTTPS requests (Microsoft's Batch AI client has no sweeps; the SDK does not speak
them yet)."""
from __future__ import annotations

from typing import Any, Optional

from jobs_support import EXP, RG, SUBSCRIPTION, WS, Lab, wait_for
from raw_arm import RawArm

__all__ = ["TRIAL_SCRIPT", "score", "sweep_path", "sweep_body", "Sweeps"]


def score(x: float, y: float = -0.2, z: float = 0.5) -> float:
    """What TRIAL_SCRIPT records (before the --slope it adds per epoch): 1 at (0.3, -0.2, 0.5)."""
    return 1 - (x - 0.3) ** 2 - (y + 0.2) ** 2 - (z - 0.5) ** 2

#: the trial every test runs (uploaded to the share as sweep/trial.py): it reads its parameters from
#: argv (--x, --y, --z, --epochs) and from $X_VALUE, computes a known function of them (score()),
#: and writes it epoch by epoch as the metric 'score' (and 'loss') to
#: $AZ_BATCHAI_STDOUTERR_DIR/metrics.csv. Options: --slope (added per epoch), --metric-name (the
#: metric under another name), --no-metrics, --wait-for FILE (after the last row, wait until FILE
#: exists: the test decides when it ends), --wait-dir DIR (the same for DIR/go-<x>), --trace FILE
#: (append x once per run), --running-dir DIR (count the trials running at once into FILE.concurrency),
#: --dir (the tutorial's fixed --dir, unused). It writes model.txt into its own
#: $AZ_BATCHAI_OUTPUT_TRIAL and fails if a model is already there (two trials sharing one directory).
TRIAL_SCRIPT = r'''
import argparse, os, sys, time
p = argparse.ArgumentParser()
p.add_argument("--x", type=float, required=True)
p.add_argument("--y", type=float, default=-0.2)
p.add_argument("--z", type=float, default=0.5)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--slope", type=float, default=0.0)
p.add_argument("--metric-name", default="score")
p.add_argument("--no-metrics", action="store_true")
p.add_argument("--wait-for", default="")
p.add_argument("--wait-dir", default="")
p.add_argument("--trace", default="")
p.add_argument("--dir", default="")  # the tutorial's fixed --dir: a trial writes to its own directory instead
p.add_argument("--running-dir", default="")
a = p.parse_args()
assert float(os.environ["X_VALUE"]) == a.x, (os.environ["X_VALUE"], a.x)
if a.trace:
    with open(a.trace, "a") as fh:
        fh.write(f"{a.x:g}\n")
if a.running_dir:  # how many trials run at once: each leaves a file while it runs
    mine = os.path.join(a.running_dir, f"{a.x:g}")
    open(mine, "w").close()
    with open(a.trace + ".concurrency", "a") as fh:
        fh.write(f"{len(os.listdir(a.running_dir))}\n")
    time.sleep(0.5)
    os.unlink(mine)
model = os.path.join(os.environ["AZ_BATCHAI_OUTPUT_TRIAL"], "model.txt")
if os.path.exists(model):
    sys.exit("another trial's model is in my output directory")
with open(model, "w") as fh:
    fh.write(f"x={a.x:g}\n")
score = 1 - (a.x - 0.3) ** 2 - (a.y + 0.2) ** 2 - (a.z - 0.5) ** 2
if not a.no_metrics:
    with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
        fh.write(f"epoch,loss,{a.metric_name}\n")
        for epoch in range(a.epochs):
            fh.write(f"{epoch},{-score:.6f},{score + a.slope * epoch:.6f}\n")
            fh.flush()
if a.wait_dir:
    a.wait_for = os.path.join(a.wait_dir, f"go-{a.x:g}")
if a.wait_for:
    deadline = time.time() + 120
    while not os.path.exists(a.wait_for) and time.time() < deadline:
        time.sleep(0.05)
'''


def sweep_path(name: str, action: str = "") -> str:
    return (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}/providers/Microsoft.BatchAI/workspaces/{WS}"
            f"/experiments/{EXP}/sweeps/{name}" + (f"/{action}" if action else ""))


def sweep_body(lab: Lab, *, space: dict[str, Any], args: str = "", algorithm: str = "Grid",
               seed: Optional[int] = None, metric: str = "score", goal: str = "maximize",
               limits: Optional[dict[str, Any]] = None, policy: Optional[dict[str, Any]] = None,
               cluster: str = "cluster") -> dict[str, Any]:
    """A sweep whose trial runs TRIAL_SCRIPT with ``--x ${{search_space.x}}`` (and --y when the space
    has y) and ``args``."""
    placeholders = " ".join(f"--{name} ${{{{search_space.{name}}}}}" for name in space)
    sampling: dict[str, Any] = {"samplingAlgorithmType": algorithm}
    if seed is not None:
        sampling["seed"] = seed
    props: dict[str, Any] = {
        "samplingAlgorithm": sampling, "searchSpace": space,
        "objective": {"primaryMetric": metric, "goal": goal},
        "limits": {"jobLimitsType": "Sweep", **(limits or {})},
        "trial": {"cluster": {"id": lab.cluster_id(cluster)}, "nodeCount": 1,
                  "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/out",
                  "mountVolumes": lab.share_mount("afs"),
                  "environmentVariables": [{"name": "X_VALUE", "value": "${{search_space.x}}"}],
                  "customToolkitSettings": {
                      "commandLine": f"python $AZ_BATCHAI_JOB_MOUNT_ROOT/afs/sweep/trial.py {placeholders} {args}"}}}
    if policy is not None:
        props["earlyTermination"] = policy
    return {"properties": props}


class Sweeps:
    """The sweep resource over raw HTTPS."""

    def __init__(self, service: Any) -> None:
        self.arm = RawArm(service)

    def put(self, name: str, body: dict[str, Any]):
        return self.arm.request("PUT", sweep_path(name), json=body)

    def get(self, name: str) -> dict[str, Any]:
        answer = self.arm.request("GET", sweep_path(name))
        assert answer.status_code == 200, answer.text
        return answer.json()

    def trial(self, name: str, index: int) -> Optional[dict[str, Any]]:
        found = [t for t in self.get(name)["properties"]["trials"] if t["index"] == index]
        return found[0] if found else None

    def wait_status(self, name: str, *statuses: str, timeout: float = 120.0) -> dict[str, Any]:
        wanted = statuses or ("completed", "failed", "cancelled")
        return wait_for(lambda: (lambda s: s if s["properties"]["status"] in wanted else None)(self.get(name)),
                        timeout, interval=0.2, what=f"sweep {name} to be {'/'.join(wanted)}")

    def wait_trial(self, name: str, index: int, predicate, timeout: float = 60.0, what: str = "") -> dict[str, Any]:
        return wait_for(lambda: (lambda t: t if t is not None and predicate(t) else None)(self.trial(name, index)),
                        timeout, interval=0.1, what=what or f"trial {index} of sweep {name}")

    def close(self) -> None:
        self.arm.close()
