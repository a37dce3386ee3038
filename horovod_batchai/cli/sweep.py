"""``horovod-batchai sweep``: create (and run), show, results, cancel, list.

``sweep create`` runs the sweep to its end by default: it is the process that submits trials as
others end. Running the same ``sweep create`` again continues a sweep whose process stopped (the
trials already submitted are found, not submitted twice). The exit status says how it ended:
0 every trial ended and none failed, 1 a trial failed or the sweep was cancelled or stopped, 4 a
wait timed out (the trials keep running).
"""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Union

from .. import LogUniform, MedianStopping, SweepResults, SweepState, Uniform
from .._models.constants import DEFAULT_LRO_TIMEOUT
from .._shared.metrics import format_number, json_records
from .context import EXIT_FAILED, Context, UsageError
from .parser import _Commands, _exp, _job_file, _name, _positive, _timeout, job_spec_from_args
from .views import Result, Table

if TYPE_CHECKING:
    from .. import Sweep

_OK_STATES = (SweepState.SUCCEEDED, SweepState.RUNNING)


def _value(text: str) -> Union[int, float, str]:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parameter(text: str) -> tuple:
    """``NAME=V1,V2,...``, ``NAME=uniform:LOW:HIGH`` or ``NAME=loguniform:LOW:HIGH``."""
    name, sep, values = text.partition("=")
    if not sep or not name or not values:
        raise argparse.ArgumentTypeError(f"expected NAME=V1,V2 (or NAME=uniform:LOW:HIGH, NAME=loguniform:LOW:HIGH), "
                                         f"got {text!r}")
    kind, _, bounds = values.partition(":")
    if kind in ("uniform", "loguniform"):
        try:
            low, high = (float(b) for b in bounds.split(":"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {name}={kind}:LOW:HIGH with two numbers, got {text!r}") from None
        return name, (Uniform if kind == "uniform" else LogUniform)(low, high)
    return name, [_value(v) for v in values.split(",")]


def sweep_data(sweep: Sweep) -> Dict[str, Any]:
    return {"name": sweep.name, "experiment": sweep.experiment.name, "state": sweep.state.value,
            "metric": sweep.metric, "mode": sweep.mode,
            "trials": [{"name": t.name, "parameters": dict(t.parameters), "status": t.status} for t in sweep.trials]}


def sweep_table(sweep: Sweep) -> Table:
    names = list(sweep.definition.space)
    rows = [[t.name, *(str(t.parameters.get(n, "")) for n in names), t.status] for t in sweep.trials]
    return Table(["Trial", *names, "Status"], rows)


def results_data(results: SweepResults) -> Dict[str, Any]:
    best = results.best()
    return {"sweep": results.sweep, "state": results.state.value, "metric": results.metric, "mode": results.mode,
            "bestTrial": best.trial.name if best else None, "trials": json_records(results.to_records())}


def results_table(results: SweepResults) -> Table:
    headers = list(results.columns)
    rows: List[List[str]] = [["" if v is None else format_number(v) if isinstance(v, float) else str(v)
                              for v in record.values()] for record in results.to_records()]
    numeric = frozenset(i for i, h in enumerate(headers) if h.startswith(("final_", "best_")) or h == "epochs")
    return Table(headers, rows, numeric)


def _outcome(state: SweepState, name: str) -> tuple:
    if state in _OK_STATES:
        return 0, None
    return EXIT_FAILED, f"sweep {name!r} is {state.value}"


def _results(results: SweepResults, ctx: Context) -> Result:
    code, error = _outcome(results.state, results.sweep)
    if getattr(ctx.args, "csv", False):
        sys.stdout.write(results.to_csv())
        return Result(quiet=True, exit_code=code, error=error)
    return Result(results_data(results), results_table(results), code, error)


def sweep_create(ctx: Context) -> Result:
    args = ctx.args
    parameters: Dict[str, Any] = {}
    for name, values in args.parameter:
        if name in parameters:
            raise UsageError(f"--parameter: {name!r} is given twice")
        parameters[name] = values
    sweep = ctx.experiment().sweep(
        job_spec_from_args(ctx), name=args.name, cluster=args.cluster, parameters=parameters, sampling=args.sampling,
        num_trials=args.num_trials, seed=args.seed, max_concurrent_trials=args.max_concurrent_trials,
        metric=args.metric, mode=args.mode,
        early_stopping=MedianStopping() if args.median_stopping else None)
    if args.no_wait:
        return Result(sweep_data(sweep), sweep_table(sweep))
    return _results(sweep.wait(timeout=args.timeout), ctx)


def sweep_show(ctx: Context) -> Result:
    sweep = ctx.experiment().get_sweep(ctx.args.name)
    code, error = _outcome(sweep.state, sweep.name)
    return Result(sweep_data(sweep), sweep_table(sweep), code, error)


def sweep_results(ctx: Context) -> Result:
    return _results(ctx.experiment().get_sweep(ctx.args.name).results(), ctx)


def sweep_cancel(ctx: Context) -> Result:
    sweep = ctx.experiment().get_sweep(ctx.args.name)
    sweep.cancel(timeout=ctx.args.timeout)
    return Result(sweep_data(sweep), sweep_table(sweep))


def sweep_list(ctx: Context) -> Result:
    sweeps = ctx.experiment().list_sweeps()
    return Result([{"name": s.name, "state": s.state.value, "trials": len(s.definition.trials)} for s in sweeps],
                  Table(["Name", "State", "Trials"], [[s.name, s.state.value, str(len(s.definition.trials))]
                                                      for s in sweeps], frozenset({2})))


def register(c: _Commands, sub: Any) -> None:
    p = c.command(sub, "create", sweep_create, "run one trial job of a job.json per configuration of the "
                  "parameters, to the end (exit 0 if no trial failed, 1 otherwise); the same command again "
                  "continues a sweep that was stopped")
    _exp(p)
    _name(p, "sweep")
    p.add_argument("-c", "--cluster", required=True, help="cluster to run the trials on")
    _job_file(p)
    p.add_argument("-p", "--parameter", type=parameter, action="append", required=True, metavar="NAME=VALUES",
                   help="an option of the script and its values: lr=0.001,0.01 (each trial gets --lr VALUE), or "
                        "lr=loguniform:1e-4:1e-2 / uniform:LOW:HIGH with --sampling random; repeat for more")
    p.add_argument("--sampling", choices=("grid", "random"), default="grid",
                   help="grid: every combination (default); random: --num-trials draws with --seed")
    p.add_argument("--num-trials", type=_positive, default=None, help="how many trials random sampling draws")
    p.add_argument("--seed", type=int, default=None, help="random sampling's seed (default 0)")
    p.add_argument("--max-concurrent-trials", type=_positive, default=2, help="trials running at once (default 2)")
    p.add_argument("--metric", default="val_accuracy", help="the metric trials are judged by (default val_accuracy)")
    p.add_argument("--mode", choices=("max", "min"), default="max", help="whether larger or smaller is better")
    p.add_argument("--median-stopping", action="store_true",
                   help="stop trials whose metric falls below the median of the others at the same epoch")
    p.add_argument("--no-wait", action="store_true",
                   help="return once the first trials are submitted (the rest wait for a `sweep create` to continue)")
    p.add_argument("--csv", action="store_true", help="print the results as CSV")
    _timeout(p, None, "the sweep")
    p = c.command(sub, "show", sweep_show, "a sweep's trials and their states (exit 1 if it failed, was "
                  "cancelled or stopped)")
    _exp(p)
    _name(p, "sweep")
    p = c.command(sub, "cancel", sweep_cancel, "terminate a sweep's running trials; no more are submitted")
    _exp(p)
    _name(p, "sweep")
    _timeout(p, DEFAULT_LRO_TIMEOUT, "the terminations")
    p = c.command(sub, "results", sweep_results, "one row per trial: parameters, status, final and best metric "
                  "(exit 1 if the sweep failed, was cancelled or stopped)")
    _exp(p)
    _name(p, "sweep")
    p.add_argument("--csv", action="store_true", help="print CSV instead of a table (see also --output json)")
    _exp(c.command(sub, "list", sweep_list, "the sweeps of an experiment"))
