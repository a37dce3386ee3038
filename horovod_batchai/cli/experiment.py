"""``horovod-batchai experiment``: create, show, list, delete."""
from __future__ import annotations

from typing import Any

from .context import Context
from .parser import _Commands, _name, _ws
from .views import Result, Table, experiment_data, experiment_table


def experiment_create(ctx: Context) -> Result:
    exp = ctx.workspace().create_experiment(ctx.args.name)
    return Result(experiment_data(exp), experiment_table([exp]))


def experiment_show(ctx: Context) -> Result:
    exp = ctx.workspace().get_experiment(ctx.args.name)
    return Result(experiment_data(exp), experiment_table([exp]))


def experiment_list(ctx: Context) -> Result:
    items = ctx.workspace().list_experiments()
    return Result([experiment_data(e) for e in items], experiment_table(items))


def experiment_delete(ctx: Context) -> Result:
    from .. import Experiment
    exp = Experiment(ctx.workspace(), ctx.args.name)
    exp.delete()
    return Result({"deleted": [exp.id]}, Table(["Deleted"], [[exp.id]]))


def register(c: _Commands, sub: Any) -> None:
    for verb, func, text in (("create", experiment_create, "create an experiment; reuses an existing one"),
                             ("show", experiment_show, "show an experiment"),
                             ("delete", experiment_delete, "delete an experiment and its jobs")):
        p = c.command(sub, verb, func, text)
        _ws(p)
        _name(p, "experiment")
    _ws(c.command(sub, "list", experiment_list, "list the experiments of a workspace"))
