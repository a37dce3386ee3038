"""MLflow's UI on a sweep's trials, as a person sees it: a sweep of the local service (REST, as
tests/local/sweeps_support.py drives it) whose trials log their parameter and metric with MLflow,
then `horovod-batchai local mlflow-ui`'s proxy opened in a real headless Chromium (Debian's
package) on MLflow's page that compares the trials. The rendered page must name every trial, the
parameter and the metric; its screenshot is kept in test-artifacts/ (git-ignored) at the
repository's root.

`make test` installs Chromium (`make browser-tools`, with apt-get, as root); where it is missing the
test is skipped, except in CI (CI=true), where it fails."""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import List
from urllib.parse import urlencode

import pytest

from horovod_batchai.local import LocalService
from horovod_batchai.local.tracking.ui import MlflowUiProxy

from jobs_support import EXP
from sweeps_support import sweep_body
from tracking_support import mlflow_api, sweep_lab

pytest.importorskip("mlflow")
pytestmark = pytest.mark.slow

#: where the screenshot is kept for a person to look at (git-ignored)
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"

#: the flags Chromium needs on these machines: no sandbox as root, no GPU, and none of its own
#: connections to Google (refused here, many at a time), in a fresh profile each run
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1600,1000"]

# The trial: its score from --x and --y, as metrics.csv (the sweep's objective) and, with MLflow,
# as the run's parameters and a metric per epoch.
TRIAL = """\
import argparse, os
import mlflow
p = argparse.ArgumentParser()
p.add_argument("--x", type=float, required=True)
p.add_argument("--y", type=float, required=True)
a = p.parse_args()
mlflow.log_params({"x": a.x, "y": a.y})
with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
    fh.write("epoch,score\\n")
    for epoch in range(2):
        score = 1 - (a.x - 0.3) ** 2 - (a.y + 0.2) ** 2 + epoch / 10
        fh.write(f"{epoch},{score}\\n")
        mlflow.log_metric("score", score, step=epoch)
"""


def _chromium() -> str:
    found = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if found is None:
        message = ("Chromium is not installed: `make browser-tools` installs Debian's chromium package "
                   "(apt-get install chromium, as root)")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + "; in CI it must be there")
        pytest.skip(message)
    return found


def _browse(chromium: str, url: str, *, extra: List[str], budget_ms: int) -> subprocess.CompletedProcess:
    """Chromium on ``url`` in a fresh profile; ``--virtual-time-budget`` lets MLflow's React app
    fetch and render before the page is dumped or shot (virtual time waits while requests run)."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                               f"--virtual-time-budget={budget_ms}", *extra, url],
                              capture_output=True, text=True, timeout=300)


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_mlflow_ui_in_a_real_browser_compares_a_sweeps_trials(tracked: LocalService) -> None:
    chromium = _chromium()
    with sweep_lab(tracked, TRIAL) as (lab, sweeps):
        body = sweep_body(lab, space={"x": ["choice", [[0.1, 0.3, 0.6]]], "y": ["choice", [[-0.2]]]},
                          limits={"maxConcurrentTrials": 2})
        assert sweeps.put("ui", body).status_code == 201
        done = sweeps.wait_status("ui", timeout=600)["properties"]
    assert done["status"] == "completed", [t.get("reason") for t in done["trials"]]
    trials = sorted(t["name"] for t in done["trials"])
    assert trials == ["ui-0", "ui-1", "ui-2"]

    # The trials are MLflow runs of the experiment, named after their jobs, with what they logged.
    experiment = mlflow_api(tracked, "GET", "experiments/get-by-name", params={"experiment_name": EXP})
    experiment_id = experiment["experiment"]["experiment_id"]
    runs = mlflow_api(tracked, "POST", "runs/search", json={"experiment_ids": [experiment_id]})["runs"]
    by_name = {r["info"]["run_name"]: r for r in runs}
    assert set(trials) <= set(by_name)
    for name in trials:
        assert {p["key"] for p in by_name[name]["data"]["params"]} == {"x", "y"}
        assert by_name[name]["info"]["status"] == "FINISHED"
    run_ids = [by_name[name]["info"]["run_id"] for name in trials]

    credential = tracked.credential()
    proxy = MlflowUiProxy(tracked.endpoint, tracked.info.ca_cert,
                          lambda: credential.get_token("https://management.azure.com/.default").token).start()
    try:
        assert proxy.health()[0] == 200
        # The URL `local mlflow-ui` prints, on MLflow's page that compares these runs.
        compare = "#/compare-runs?" + urlencode({"runs": json.dumps(run_ids), "experiments": json.dumps([experiment_id])})
        url = proxy.login_url + compare
        # every trial by name and run id, and the metric the parallel coordinates draw
        wanted = [*trials, *run_ids, f"Comparing {len(trials)} Runs", "score"]
        dom = ""
        for budget in (30_000, 60_000, 120_000):  # a loaded machine renders in more virtual time
            shown = _browse(chromium, url, extra=["--dump-dom"], budget_ms=budget)
            dom = shown.stdout
            if all(w in dom for w in wanted):
                break
        missing = [w for w in wanted if w not in dom]
        assert not missing, f"the rendered page lacks {missing}: {dom[-3000:]}\n{shown.stderr[-2000:]}"
        assert "403" not in dom[:2000]  # the key opened it: not the proxy's refusal

        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "mlflow_ui_sweep_compare.png"
        shot.unlink(missing_ok=True)
        taken = _browse(chromium, url, extra=[f"--screenshot={shot}"], budget_ms=60_000)
        assert shot.exists(), taken.stderr[-2000:]
        assert _png_size(shot) == (1600, 1000)
        assert shot.stat().st_size > 50_000  # a rendered page, not a blank one (a blank page is ~5 KB)
    finally:
        proxy.stop()
