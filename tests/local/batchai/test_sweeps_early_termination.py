"""Early termination, decided by the service from what the trials record: each policy stops the
trials it should and no other. The trials are deterministic (a known score per x, the same at every
epoch), run one at a time in grid order, and each waits after its last row until the test lets it
end, so every trial is judged while it runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from jobs_support import make_lab
from sweeps_support import TRIAL_SCRIPT, Sweeps, score, sweep_body

EPOCHS = 3


@pytest.mark.parametrize("policy, grid, stopped", [
    # best 0.96: the bound is 0.96 / 1.1 = 0.873; x=1.0 scores 0.47.
    ({"policyType": "Bandit", "evaluationInterval": 1, "slackFactor": 0.1}, [0.3, 0.5, 1.0, 0.1], {1.0}),
    # judged at epochs 2 and 3: x=1.0 is below the median 0.94 of 0.92 and 0.96; x=0.4 (0.95) is above
    # the median 0.92 of 0.92, 0.96 and 0.47.
    ({"policyType": "MedianStopping", "evaluationInterval": 1, "delayEvaluation": 1}, [0.5, 0.3, 1.0, 0.4], {1.0}),
    # the worst half (rounded down) at each epoch: 1 of 2 (x=1.0), 1 of 3 (x=1.0 again, not x=0.5),
    # 2 of 4 (x=0.0 at 0.87, and x=1.0).
    ({"policyType": "TruncationSelection", "evaluationInterval": 1, "truncationPercentage": 50},
     [0.3, 1.0, 0.5, 0.0], {1.0, 0.0}),
], ids=["bandit", "median", "truncation"])
def test_each_policy_stops_the_trials_it_should(service, batchai, tmp_path: Path, policy, grid, stopped):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1)
    lab.upload("sweep/trial.py", TRIAL_SCRIPT)
    flags = tmp_path / "flags"
    flags.mkdir()
    sweeps = Sweeps(service)
    try:
        body = sweep_body(lab, space={"x": ["choice", [grid]]}, args=f"--epochs {EPOCHS} --wait-dir {flags}",
                          limits={"maxConcurrentTrials": 1}, policy=policy)
        assert sweeps.put("early", body).status_code == 201
        for index, x in enumerate(grid):
            judged = sweeps.wait_trial("early", index, lambda t: t["status"] == "stopped" or (
                t["status"] == "running" and t.get("evaluatedEpochs") == EPOCHS), what=f"trial x={x} to be judged")
            if x in stopped:
                assert judged["status"] == "stopped", judged
                assert judged["reason"].startswith(policy["policyType"] + " policy at epoch"), judged["reason"]
            else:
                assert judged["status"] == "running", judged
                (flags / f"go-{x:g}").touch()
                assert sweeps.wait_trial("early", index, lambda t: t["status"] == "completed")
        props = sweeps.wait_status("early")["properties"]
        assert props["status"] == "completed"
        assert {t["parameters"]["x"] for t in props["trials"] if t["status"] == "stopped"} == stopped
        assert props["bestTrial"]["parameters"] == {"x": 0.3}
        assert props["bestTrial"]["objectiveValue"] == pytest.approx(score(0.3))
        for trial in props["trials"]:
            job = lab.wait_state(trial["name"])
            assert job.execution_state == ("failed" if trial["status"] == "stopped" else "succeeded")
    finally:
        sweeps.close()
