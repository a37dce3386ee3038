"""Bayesian sampling (Optuna's TPE, seeded) against random sampling on the same budget, on a known
function: the trial script computes it and records it as its metric, and the service drives both
kinds of sweep. Bayesian finds the better best on average over several seeds. Sampling is
reproducible: the same seed and history give the same trials."""
from __future__ import annotations

import statistics

import pytest

from horovod_batchai.local.batchai.sweeps.sampling import next_point
from horovod_batchai.local.batchai.sweeps.search_space import parse_search_space
from jobs_support import make_lab
from sweeps_support import TRIAL_SCRIPT, Sweeps, score, sweep_body

SPACE = {"x": ["uniform", [-1, 1]], "y": ["uniform", [-1, 1]], "z": ["uniform", [-1, 1]]}
BUDGET = 16


def _in_process_best(algorithm: str, seed: int) -> float:
    """The best score of a sweep sampled as the driver samples, one trial at a time."""
    space = parse_search_space(SPACE)
    history: list[tuple[dict, float]] = []
    for index in range(BUDGET):
        values = next_point(algorithm, space, seed=seed, index=index, maximize=True, max_total=BUDGET,
                            history=history)
        assert values is not None
        history.append((values, score(**values)))
    return max(value for _, value in history)


def test_bayesian_sweeps_the_service_drives_beat_random_ones_on_the_same_budget(service, batchai):
    seeds = (0, 1, 2)
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=2 * len(seeds))
    lab.upload("sweep/trial.py", TRIAL_SCRIPT)
    sweeps = Sweeps(service)
    try:
        for algorithm in ("Random", "Bayesian"):
            for seed in seeds:
                body = sweep_body(lab, space=SPACE, algorithm=algorithm, seed=seed,
                                  limits={"maxTotalTrials": BUDGET, "maxConcurrentTrials": 1})
                assert sweeps.put(f"{algorithm.lower()}{seed}", body).status_code == 201
        best: dict[str, list[float]] = {}
        for algorithm in ("Random", "Bayesian"):
            for seed in seeds:
                props = sweeps.wait_status(f"{algorithm.lower()}{seed}", timeout=300)["properties"]
                assert props["status"] == "completed", props.get("statusReason")
                assert len(props["trials"]) == BUDGET
                assert all(t["status"] == "completed" for t in props["trials"])
                top = props["bestTrial"]
                assert top["objectiveValue"] == pytest.approx(score(**top["parameters"]), abs=1e-5)
                best.setdefault(algorithm, []).append(top["objectiveValue"])
    finally:
        sweeps.close()
    print(f"\nbest score (max 1) over {BUDGET} trials, seeds {seeds}: " +
          "; ".join(f"{a}: {', '.join(f'{v:.4f}' for v in vs)} (mean {statistics.mean(vs):.4f})"
                    for a, vs in best.items()))
    assert statistics.mean(best["Bayesian"]) > statistics.mean(best["Random"])


def test_bayesian_beats_random_on_average_over_ten_seeds_sampled_as_the_driver_samples():
    random_best = [_in_process_best("Random", seed) for seed in range(10)]
    bayesian_best = [_in_process_best("Bayesian", seed) for seed in range(10)]
    print(f"\nmean best over 10 seeds, {BUDGET} trials: Random {statistics.mean(random_best):.4f}, "
          f"Bayesian {statistics.mean(bayesian_best):.4f}")
    assert statistics.mean(bayesian_best) > statistics.mean(random_best)


def test_sampling_is_reproducible_for_a_seed():
    space = parse_search_space(SPACE)
    history = [({"x": 0.1, "y": 0.2, "z": 0.3}, 0.5), ({"x": -0.5, "y": 0.0, "z": 0.9}, 0.1)]
    for algorithm in ("Random", "Bayesian"):
        first = next_point(algorithm, space, seed=7, index=2, maximize=True, max_total=BUDGET, history=history)
        again = next_point(algorithm, space, seed=7, index=2, maximize=True, max_total=BUDGET, history=history)
        other = next_point(algorithm, space, seed=8, index=2, maximize=True, max_total=BUDGET, history=history)
        assert first == again and first != other
        assert all(-1 <= v <= 1 for v in first.values())  # type: ignore[union-attr]
