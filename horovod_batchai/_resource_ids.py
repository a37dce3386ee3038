"""Reading the ARM resource ids the public classes hand out (``job.id``, ``cluster.id``, ...)
back into names, for ``from_id(target, id)``.

The forms depend on where the target runs: Batch AI (local and Azure) nests experiments and jobs
under ``Microsoft.BatchAI/workspaces``; Azure ML names jobs and computes under
``Microsoft.MachineLearningServices/workspaces``; file shares are Microsoft.Storage resources
everywhere. A malformed id, one of another kind of resource or one of another subscription is an
:class:`InvalidSpecError` naming the id as given and the form expected.

``from_id`` of a cluster, experiment or job builds its parents (a ``Workspace``, an
``Experiment``): those classes sit above the child's module, so they register here when defined
(:func:`register_parent`) instead of being imported from below.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ._errors import InvalidSpecError
from ._names import check_batchai_name, check_resource_group, check_share_name, check_storage_account

if TYPE_CHECKING:
    from ._target import Target

__all__ = ["parse_id", "id_form", "register_parent", "parent_class"]

_PREFIX = "/subscriptions/<subscription>/resourceGroups/<resource group>/providers/"
#: the provider and the path after ``workspaces/<workspace>`` of each kind, per target kind
_BATCHAI = {"workspace": [], "experiment": ["experiments", "<experiment>"], "cluster": ["clusters", "<cluster>"],
            "job": ["experiments", "<experiment>", "jobs", "<job>"]}
_AZUREML = {"workspace": [], "experiment": ["experiments", "<experiment>"], "cluster": ["computes", "<cluster>"],
            "job": ["jobs", "<job>"]}
_CHECKS: dict[str, Callable[[str, str], str]] = {
    "<resource group>": check_resource_group, "<workspace>": check_batchai_name, "<experiment>": check_batchai_name,
    "<cluster>": check_batchai_name, "<job>": check_batchai_name, "<account>": check_storage_account,
    "<share>": check_share_name,
}


#: "workspace" -> Workspace, "experiment" -> Experiment, registered by their modules
_PARENTS: dict[str, Any] = {}


def register_parent(kind: str, cls: Any) -> None:
    _PARENTS[kind] = cls


def parent_class(kind: str) -> Any:
    """The class that resources of ``kind`` (workspace | experiment) are, for building the parents
    of a child from its id."""
    return _PARENTS[kind]


def _segments(target: "Target", kind: str) -> list[str]:
    """The id of a ``kind`` as path segments, with ``<placeholders>`` for the names."""
    if kind == "file share":
        return ["Microsoft.Storage", "storageAccounts", "<account>", "fileServices", "default", "shares", "<share>"]
    if target.kind == "azureml":
        return ["Microsoft.MachineLearningServices", "workspaces", "<workspace>", *_AZUREML[kind]]
    return ["Microsoft.BatchAI", "workspaces", "<workspace>", *_BATCHAI[kind]]


def id_form(target: "Target", kind: str) -> str:
    """The form of a ``kind``'s id on ``target``, as an error states it."""
    return _PREFIX + "/".join(_segments(target, kind))


def parse_id(target: "Target", resource_id: object, kind: str, field: str = "id") -> dict[str, str]:
    """The names in ``resource_id`` (keys: subscription, resource group, workspace, experiment,
    cluster, job, account, share -- those the form has), checked against the form of ``kind``
    (workspace | experiment | cluster | job | file share) on ``target``."""
    form = id_form(target, kind)
    shown = repr(resource_id)[:300]
    if not isinstance(resource_id, str):
        raise InvalidSpecError(field, f"{shown} is not a resource id", form)
    expected = ["subscriptions", "<subscription>", "resourceGroups", "<resource group>", "providers",
                *_segments(target, kind)]
    parts = resource_id.strip().strip("/").split("/")
    if len(parts) != len(expected) or not resource_id.strip().startswith("/"):
        raise InvalidSpecError(field, f"{shown} is not the id of a {kind} on a {target.kind} target", form)
    names: dict[str, str] = {}
    for part, want in zip(parts, expected):
        if want.startswith("<"):
            names[want.strip("<>")] = part
        elif part.lower() != want.lower():  # ARM's fixed segments are case-insensitive
            raise InvalidSpecError(field, f"{shown} is not the id of a {kind} on a {target.kind} target "
                                   f"({part!r} where the form has {want!r})", form)
    if names["subscription"].lower() != target.subscription_id.lower():
        raise InvalidSpecError(field, f"{shown} is in subscription {names['subscription']!r}, not the target's "
                               f"({target.subscription_id})", f"{form} with the target's subscription")
    for placeholder, check in _CHECKS.items():
        key = placeholder.strip("<>")
        if key in names:
            try:
                check(names[key], field)
            except InvalidSpecError as err:
                raise InvalidSpecError(field, f"{shown} names the {key} {names[key][:100]!r}, which is not valid "
                                       f"({err.valid_form})", form) from None
    return names
