"""``horovod-batchai workspace``: create, show, list, delete."""
from __future__ import annotations

from typing import Any

from .context import Context
from .parser import _Commands, _name, _rg
from .views import Result, Table, workspace_data, workspace_table


def workspace_create(ctx: Context) -> Result:
    from .. import Workspace
    ws = Workspace.create(ctx.target, ctx.args.resource_group, ctx.args.name, location=ctx.args.location)
    return Result(workspace_data(ws), workspace_table([ws]))


def workspace_show(ctx: Context) -> Result:
    from .. import Workspace
    ws = Workspace.get(ctx.target, ctx.args.resource_group, ctx.args.name)
    return Result(workspace_data(ws), workspace_table([ws]))


def workspace_list(ctx: Context) -> Result:
    from .. import Workspace
    items = Workspace.list(ctx.target, ctx.args.resource_group)
    return Result([workspace_data(w) for w in items], workspace_table(items))


def workspace_delete(ctx: Context) -> Result:
    ws = ctx.workspace(ctx.args.name)
    ws.delete(delete_resource_group=ctx.args.delete_resource_group)
    deleted = [ws.id] + ([f"/subscriptions/{ctx.target.subscription_id}/resourceGroups/{ws.resource_group}"]
                         if ctx.args.delete_resource_group else [])
    return Result({"deleted": deleted}, Table(["Deleted"], [[d] for d in deleted]))


def register(c: _Commands, sub: Any) -> None:
    p = c.command(sub, "create", workspace_create,
                  "create a workspace (and its resource group); reuses an existing one")
    _rg(p)
    _name(p, "workspace")
    p.add_argument("-l", "--location", default="eastus", help="Azure region (default: eastus)")
    p = c.command(sub, "show", workspace_show, "show a workspace")
    _rg(p)
    _name(p, "workspace")
    p = c.command(sub, "list", workspace_list, "list workspaces (of a resource group, or all)")
    _rg(p, required=False)
    p = c.command(sub, "delete", workspace_delete, "delete a workspace with its clusters, experiments and jobs")
    _rg(p)
    _name(p, "workspace")
    p.add_argument("--delete-resource-group", action="store_true",
                   help="also delete the resource group with everything in it (storage accounts too)")
