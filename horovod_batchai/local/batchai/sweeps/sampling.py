"""Which values a sweep's next trial gets: grid, random or Bayesian sampling (Azure ML's three).

- ``Grid``: every combination of the ``choice`` parameters, in order; the sweep ends when they are
  all tried (or at ``maxTotalTrials``).
- ``Random``: each trial drawn by itself from a generator seeded by the sweep's ``seed`` and the
  trial's index (``search_space.random_point``).
- ``Bayesian``: Optuna's TPE sampler, told the values of the trials that recorded the objective so
  far. The study is rebuilt from those for each new trial (the sweep document is the only state,
  so a restarted service samples as the one before would have) with a sampler seeded by the sweep's
  seed and the trial's index: the same history gives the same trial. Optuna is imported only here,
  and only for Bayesian sweeps.

Pure: the driver (``driver.py``) hands in what the trials recorded.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from .search_space import Parameter, bounds_in_optuna, grid_points, random_point

__all__ = ["GRID", "RANDOM", "BAYESIAN", "ALGORITHMS", "GRID_DISTRIBUTIONS", "BAYESIAN_DISTRIBUTIONS", "next_point",
           "planned_trials"]

GRID, RANDOM, BAYESIAN = "Grid", "Random", "Bayesian"
ALGORITHMS = (GRID, RANDOM, BAYESIAN)
#: what each algorithm can draw from (as on Azure ML: grid takes choices only; Bayesian bounded ones).
GRID_DISTRIBUTIONS = ("choice",)
BAYESIAN_DISTRIBUTIONS = ("choice", "uniform", "quniform", "loguniform", "qloguniform", "randint")


def planned_trials(algorithm: str, space: list[Parameter]) -> Optional[int]:
    """How many trials the algorithm can give at most (None: no end of its own)."""
    return len(grid_points(space)) if algorithm == GRID else None


def _startup_trials(max_total: int) -> int:
    """Random trials before TPE models the objective: a fifth of the budget, 2 to 10."""
    return max(2, min(10, max_total // 5))


def _bayesian_point(space: list[Parameter], seed: Optional[int], index: int, maximize: bool, max_total: int,
                    history: Sequence[tuple[dict[str, Any], float]]) -> dict[str, Any]:
    import optuna  # imported here: only Bayesian sweeps need it
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    distributions: dict[str, Any] = {}
    for p in space:
        if p.distribution == "choice":
            distributions[p.name] = optuna.distributions.CategoricalDistribution(list(p.args))
        elif p.distribution == "randint":
            distributions[p.name] = optuna.distributions.IntDistribution(0, p.args[0] - 1)
        else:
            distributions[p.name] = optuna.distributions.FloatDistribution(**bounds_in_optuna(p))
    sampler = optuna.samplers.TPESampler(seed=None if seed is None else seed * 100003 + index,
                                         n_startup_trials=_startup_trials(max_total))
    study = optuna.create_study(direction="maximize" if maximize else "minimize", sampler=sampler)
    for params, value in history:
        kept = {}
        for name, dist in distributions.items():
            v = params[name]
            if isinstance(dist, optuna.distributions.FloatDistribution):
                v = min(max(float(v), dist.low), dist.high)  # a quantized value may round past a bound
            kept[name] = v
        study.add_trial(optuna.trial.create_trial(params=kept, distributions=distributions, value=value))
    trial = study.ask(distributions)
    by_name = {p.name: p for p in space}
    return {name: (by_name[name].quantize(v) if isinstance(v, float) else v) for name, v in trial.params.items()}


def next_point(algorithm: str, space: list[Parameter], *, seed: Optional[int], index: int, maximize: bool,
               max_total: int, history: Sequence[tuple[dict[str, Any], float]] = ()) -> Optional[dict[str, Any]]:
    """Trial ``index``'s parameter values, or None when the algorithm has no more (a grid done).
    ``history``: (values, objective) of the trials that recorded the objective, oldest first."""
    if algorithm == GRID:
        points = grid_points(space)
        return points[index] if index < len(points) else None
    if algorithm == RANDOM:
        return random_point(space, seed, index)
    finite = [(params, value) for params, value in history if math.isfinite(value)]
    return _bayesian_point(space, seed, index, maximize, max_total, finite)
