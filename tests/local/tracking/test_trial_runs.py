"""A sweep's trials as MLflow runs: each trial's run carries its sweep, its number and its values
as tags (and its job gets them as variables), so MLflow's search and UI compare trials by them; a
trial that declares one of those variables itself is refused."""
from __future__ import annotations


import pytest

from horovod_batchai.local import LocalService

from jobs_support import EXP
from sweeps_support import sweep_body
from tracking_support import mlflow_api, sweep_lab

pytest.importorskip("mlflow")
pytestmark = pytest.mark.slow

TRIAL = """\
import argparse, json, os
p = argparse.ArgumentParser()
p.add_argument("--x", type=float, required=True)
a = p.parse_args()
assert json.loads(os.environ["AZ_BATCHAI_TRIAL_PARAMETERS"]) == {"x": a.x}, os.environ["AZ_BATCHAI_TRIAL_PARAMETERS"]
with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
    fh.write(f"epoch,score\\n0,{a.x}\\n")
"""


def test_each_trials_run_is_tagged_with_its_sweep_number_and_values(tracked: LocalService) -> None:
    with sweep_lab(tracked, TRIAL) as (lab, sweeps):
        body = sweep_body(lab, space={"x": ["choice", [[0.25, 0.5]]]})
        body["properties"]["trial"]["environmentVariables"] = []
        assert sweeps.put("tagged", body).status_code == 201
        done = sweeps.wait_status("tagged", timeout=300)["properties"]
        taken = sweep_body(lab, space={"x": ["choice", [[0.5]]]})
        taken["properties"]["trial"]["environmentVariables"] = [{"name": "AZ_BATCHAI_TRIAL_INDEX", "value": "7"}]
        refused = sweeps.put("taken", taken)
    assert done["status"] == "completed", [t.get("reason") for t in done["trials"]]
    assert refused.status_code == 400 and "AZ_BATCHAI_TRIAL_INDEX" in refused.text

    experiment = mlflow_api(tracked, "GET", "experiments/get-by-name", params={"experiment_name": EXP})
    runs = mlflow_api(tracked, "POST", "runs/search", json={
        "experiment_ids": [experiment["experiment"]["experiment_id"]],
        "filter": "tags.`horovod_batchai.sweep` = 'tagged'"})["runs"]
    tags = {r["info"]["run_name"]: {t["key"]: t["value"] for t in r["data"]["tags"]} for r in runs}
    assert sorted(tags) == ["tagged-0", "tagged-1"]
    for trial in done["trials"]:
        mine = tags[trial["name"]]
        assert mine["horovod_batchai.trial"] == str(trial["index"])
        assert float(mine["horovod_batchai.parameter.x"]) == trial["parameters"]["x"]
