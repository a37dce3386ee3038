"""``horovod-batchai sweep``: create, show, results, cancel, list.

On the local service (and wherever the service holds sweeps) ``sweep create`` creates the
service's sweep and, unless ``--no-wait``, waits for it to end; the service drives it, so stopping
the command changes nothing. On Batch AI on Azure the command is the process that submits trials
as others end, and running the same ``sweep create`` again continues a sweep whose process stopped.

Exit status: 0 the sweep found a best trial (or ``--no-wait``), 1 it failed or was cancelled, 3 it
has no best trial yet (``sweep show``/``results`` of a sweep still running without one; so
``--query bestTrial`` is never exit 0 without a best trial), 4 a wait timed out (the trials keep
running). JSON keys are camelCase, as everywhere in the CLI and in ``SweepResults.to_json()``.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List, Optional, Union

from .. import (BanditPolicy, LogNormal, LogUniform, MedianStopping, MedianStoppingPolicy, Normal, QLogNormal,
                QLogUniform, QNormal, QUniform, Randint, SweepResults, SweepState, TruncationSelectionPolicy, Uniform)
from .._models.constants import DEFAULT_LRO_TIMEOUT
from .._shared.metrics import format_number
from .context import EXIT_FAILED, EXIT_NOT_FOUND, Context, UsageError
from .parser import _Commands, _exp, _job_file, _name, _positive, _seconds, _timeout, job_spec_from_args
from .views import Result, Table

_ENDED_BADLY = (SweepState.FAILED, SweepState.CANCELLED, SweepState.STOPPED)
#: NAME=<distribution>:<numbers>: the class and how many numbers it takes
_DISTRIBUTIONS: Dict[str, Any] = {
    "uniform": (Uniform, 2), "loguniform": (LogUniform, 2), "normal": (Normal, 2), "lognormal": (LogNormal, 2),
    "quniform": (QUniform, 3), "qloguniform": (QLogUniform, 3), "qnormal": (QNormal, 3),
    "qlognormal": (QLogNormal, 3), "randint": (Randint, 1)}
_PARAMETER_FORM = ("NAME=V1,V2 (or NAME=choice:V1,V2, NAME=uniform:LOW:HIGH, loguniform:LOW:HIGH, normal:MU:SIGMA, "
                   "lognormal:MU:SIGMA, quniform:LOW:HIGH:Q, qloguniform:LOW:HIGH:Q, qnormal:MU:SIGMA:Q, "
                   "qlognormal:MU:SIGMA:Q, randint:UPPER)")


def _value(text: str) -> Union[int, float, str]:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parameter(text: str) -> tuple:
    """``NAME=V1,V2,...``, ``NAME=choice:V1,V2`` or ``NAME=<distribution>:<numbers>``."""
    name, sep, values = text.partition("=")
    if not sep or not name or not values:
        raise argparse.ArgumentTypeError(f"expected {_PARAMETER_FORM}, got {text!r}")
    kind, colon, rest = values.partition(":")
    if colon and kind == "choice":
        return name, [_value(v) for v in rest.split(",")]
    if colon and kind in _DISTRIBUTIONS:
        cls, count = _DISTRIBUTIONS[kind]
        try:
            numbers = [(int if cls is Randint else float)(b) for b in rest.split(":")]
        except ValueError:
            numbers = []
        if len(numbers) != count:
            raise argparse.ArgumentTypeError(f"expected {name}={kind}:{':'.join(['N'] * count)} with {count} "
                                             f"number(s), got {text!r}")
        return name, cls(*numbers)
    return name, [_value(v) for v in values.split(",")]


def _trials(sweep: Any) -> List[Dict[str, Any]]:
    return [{"index": t.index, "name": t.name, "parameters": dict(t.parameters), "status": t.status,
             "reason": t.reason} for t in sweep.trials]


def _best_name(sweep: Any) -> Optional[str]:
    from .. import ClientSweep
    if isinstance(sweep, ClientSweep):
        best = sweep.results().best()
        return best.trial.name if best else None
    return sweep.best_trial_name


def sweep_data(sweep: Any) -> Dict[str, Any]:
    return {"name": sweep.name, "experiment": sweep.experiment.name, "state": sweep.state.value,
            "statusReason": getattr(sweep, "status_reason", None), "metric": sweep.metric, "mode": sweep.mode,
            "bestTrial": _best_name(sweep), "trials": _trials(sweep)}


def sweep_table(sweep: Any) -> Table:
    names: List[str] = []
    for trial in sweep.trials:
        names += [n for n in trial.parameters if n not in names]
    rows = [[t.name, *(str(t.parameters.get(n, "")) for n in names), t.status, t.reason or ""] for t in sweep.trials]
    return Table(["Trial", *names, "Status", "Reason"], rows)


def results_data(results: SweepResults) -> Dict[str, Any]:
    return results.to_dict()


def results_table(results: SweepResults) -> Table:
    headers = list(results.columns)
    rows: List[List[str]] = [["" if v is None else format_number(v) if isinstance(v, float) else str(v)
                              for v in record.values()] for record in results.to_records()]
    numeric = frozenset(i for i, h in enumerate(headers) if h.startswith(("final_", "best_")) or h == "epochs")
    return Table(headers, rows, numeric)


def _outcome(state: SweepState, name: str, best: Optional[str]) -> tuple:
    if state in _ENDED_BADLY:
        return EXIT_FAILED, f"sweep {name!r} is {state.value}"
    if best is None:
        return EXIT_NOT_FOUND, f"sweep {name!r} has no best trial" + (" yet" if state is SweepState.RUNNING else "")
    return 0, None


def _results(results: SweepResults, ctx: Context) -> Result:
    best = results.best()
    code, error = _outcome(results.state, results.sweep, best.trial.name if best else None)
    if getattr(ctx.args, "csv", False):
        sys.stdout.write(results.to_csv())
        return Result(quiet=True, exit_code=code, error=error)
    return Result(results_data(results), results_table(results), code, error)


def _policy(args: argparse.Namespace) -> Any:
    kind = args.early_termination
    spacing = dict(evaluation_interval=args.evaluation_interval, delay_evaluation=args.delay_evaluation)
    given = [f for f in ("slack_factor", "slack_amount", "truncation_percentage") if getattr(args, f) is not None]
    wanted = {"bandit": ("slack_factor", "slack_amount"), "truncation": ("truncation_percentage",)}.get(kind, ())
    stray = [f for f in given if f not in wanted]
    if stray:
        option = "--" + stray[0].replace("_", "-")
        raise UsageError(f"{option} is a setting of --early-termination "
                         f"{'bandit' if stray[0].startswith('slack') else 'truncation'}, not of {kind or 'none'}")
    if args.median_stopping:
        if kind is not None:
            raise UsageError("--median-stopping and --early-termination are both given: use --early-termination median")
        return MedianStopping()
    if kind == "bandit":
        return BanditPolicy(slack_factor=args.slack_factor, slack_amount=args.slack_amount, **spacing)
    if kind == "median":
        return MedianStoppingPolicy(**spacing)
    if kind == "truncation":
        if args.truncation_percentage is None:
            raise UsageError("--early-termination truncation needs --truncation-percentage (1 to 99)")
        return TruncationSelectionPolicy(truncation_percentage=args.truncation_percentage, **spacing)
    return None


def sweep_create(ctx: Context) -> Result:
    args = ctx.args
    parameters: Dict[str, Any] = {}
    for name, values in args.parameter:
        if name in parameters:
            raise UsageError(f"--parameter: {name!r} is given twice")
        parameters[name] = values
    policy = _policy(args)
    sweep = ctx.experiment().sweep(
        job_spec_from_args(ctx), name=args.name, cluster=args.cluster, parameters=parameters, sampling=args.sampling,
        num_trials=args.num_trials, seed=args.seed, max_concurrent_trials=args.max_concurrent_trials,
        metric=args.metric, mode=args.mode,
        early_stopping=policy if isinstance(policy, MedianStopping) else None,
        early_termination=None if isinstance(policy, MedianStopping) else policy,
        sweep_timeout=args.sweep_timeout, trial_timeout=args.trial_timeout)
    if args.no_wait:
        return Result(sweep_data(sweep), sweep_table(sweep))
    return _results(sweep.wait(timeout=args.timeout), ctx)


def sweep_show(ctx: Context) -> Result:
    sweep = ctx.experiment().get_sweep(ctx.args.name)
    data = sweep_data(sweep)
    code, error = _outcome(sweep.state, sweep.name, data["bestTrial"])
    return Result(data, sweep_table(sweep), code, error)


def sweep_results(ctx: Context) -> Result:
    return _results(ctx.experiment().get_sweep(ctx.args.name).results(), ctx)


def sweep_cancel(ctx: Context) -> Result:
    from .. import ClientSweep
    sweep = ctx.experiment().get_sweep(ctx.args.name)
    if isinstance(sweep, ClientSweep):  # driven from here: the terminations are waited for
        sweep.cancel(timeout=ctx.args.timeout)
    else:
        sweep.cancel()
    return Result(sweep_data(sweep), sweep_table(sweep))


def sweep_list(ctx: Context) -> Result:
    sweeps = ctx.experiment().list_sweeps()
    return Result([{"name": s.name, "state": s.state.value, "trials": len(s.trials)} for s in sweeps],
                  Table(["Name", "State", "Trials"], [[s.name, s.state.value, str(len(s.trials))]
                                                      for s in sweeps], frozenset({2})))


def register(c: _Commands, sub: Any) -> None:
    p = c.command(sub, "create", sweep_create, "sweep a job.json's options over parameters and wait for the end "
                  "(exit 0 with a best trial, 1 failed or cancelled); the same command again is the same sweep")
    _exp(p)
    _name(p, "sweep")
    p.add_argument("-c", "--cluster", required=True, help="cluster to run the trials on")
    _job_file(p)
    p.add_argument("-p", "--parameter", type=parameter, action="append", required=True, metavar="NAME=VALUES",
                   help="an option of the script and its values: lr=0.001,0.01 (each trial gets --lr VALUE), or a "
                        "distribution: lr=loguniform:1e-4:1e-2, uniform:LOW:HIGH, normal:MU:SIGMA, quniform:LOW:HIGH:Q, "
                        "randint:UPPER, ... (random or bayesian sampling); repeat for more")
    p.add_argument("--sampling", choices=("grid", "random", "bayesian"), default="grid",
                   help="grid: every combination (default); random: --num-trials draws with --seed; bayesian: "
                        "--num-trials, each drawn from the results so far")
    p.add_argument("--num-trials", type=_positive, default=None, help="how many trials random or bayesian sampling runs")
    p.add_argument("--seed", type=int, default=None, help="the sampling's seed")
    p.add_argument("--max-concurrent-trials", type=_positive, default=2, help="trials running at once (default 2)")
    p.add_argument("--metric", default="val_accuracy", help="the objective trials are judged by (default val_accuracy)")
    p.add_argument("--mode", choices=("max", "min"), default="max", help="whether larger or smaller is better")
    p.add_argument("--early-termination", choices=("bandit", "median", "truncation"), default=None,
                   help="the policy that stops poor trials (Azure ML's)")
    p.add_argument("--slack-factor", type=float, default=None, help="bandit: the slack, as a ratio of the best")
    p.add_argument("--slack-amount", type=float, default=None, help="bandit: the slack, as an amount")
    p.add_argument("--truncation-percentage", type=int, default=None, help="truncation: the worst percent stopped")
    p.add_argument("--evaluation-interval", type=int, default=1, help="the policy runs every N epochs (default 1)")
    p.add_argument("--delay-evaluation", type=int, default=0, help="epochs before the policy first runs (default 0)")
    p.add_argument("--median-stopping", action="store_true", help="the earlier spelling of --early-termination median")
    p.add_argument("--sweep-timeout", type=_seconds, default=None, help="seconds after which the sweep is cancelled")
    p.add_argument("--trial-timeout", type=_seconds, default=None, help="seconds each trial job may run")
    p.add_argument("--no-wait", action="store_true",
                   help="return once the sweep is created (the service drives it; on Batch AI on Azure the rest "
                        "wait for a `sweep create` to continue)")
    p.add_argument("--csv", action="store_true", help="print the results as CSV")
    _timeout(p, None, "the sweep")
    p = c.command(sub, "show", sweep_show, "a sweep's state, best trial and trials (exit 1 if it failed or was "
                  "cancelled, 3 without a best trial yet)")
    _exp(p)
    _name(p, "sweep")
    p = c.command(sub, "cancel", sweep_cancel, "cancel a sweep: its live trials are stopped, no more start")
    _exp(p)
    _name(p, "sweep")
    _timeout(p, DEFAULT_LRO_TIMEOUT, "the terminations (a sweep this command drives)")
    p = c.command(sub, "results", sweep_results, "one row per trial: parameters, status, reason, final and best "
                  "objective (exit as show)")
    _exp(p)
    _name(p, "sweep")
    p.add_argument("--csv", action="store_true", help="print CSV instead of a table (see also --output json)")
    _exp(c.command(sub, "list", sweep_list, "the sweeps of an experiment"))
