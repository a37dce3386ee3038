"""Reading the ARM resource ids the public classes hand out (``job.id``, ``cluster.id``, ...)
back into names, for ``from_id(target, id)``.

The forms depend on where the target runs: Batch AI (local and Azure) nests experiments and jobs
under ``Microsoft.BatchAI/workspaces``; Azure ML names jobs and computes under
``Microsoft.MachineLearningServices/workspaces``; file shares are Microsoft.Storage resources
everywhere. A malformed id, one of another kind of resource or one of another subscription is an
:class:`InvalidSpecError` naming the id as given and the form expected.

``from_id`` of a cluster, experiment or job reaches its parents through the target
(:func:`parent_workspace`: each side's ``Target`` builds its own side's ``Workspace``). The sync
classes and those of :mod:`horovod_batchai.aio` read ids the same way (:func:`names_from_id`);
each side takes only its own kind of target (a target says which it is by its ``_asynchronous``
class attribute).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .._models.errors import InvalidSpecError
from .._models.names import check_batchai_name, check_resource_group, check_share_name, check_storage_account

if TYPE_CHECKING:
    from .._target import Target

__all__ = ["parse_id", "names_from_id", "check_target", "id_form", "parent_workspace"]

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


def parent_workspace(target: Any, names: dict[str, str]) -> Any:
    """The workspace an id's ``names`` (from :func:`parse_id`) lie in, not fetched: the target's
    own side's class."""
    return target._workspace(names["resource group"], names["workspace"])


def check_target(target: object, *, aio: bool = False, field: str = "target") -> None:
    """Refuse a target that is not the sync API's (``aio``: not :mod:`horovod_batchai.aio`'s):
    the classes of each side make their requests only through their own kind of target."""
    side = getattr(type(target), "_asynchronous", None)
    if side is aio:
        return
    wanted = "horovod_batchai.aio.Target" if aio else "horovod_batchai.Target"
    if side is False:
        given = "a horovod_batchai.Target"
    elif side is True:
        given = "a horovod_batchai.aio.Target"
    else:
        given = f"{type(target).__name__} {repr(target)[:100]}"
    classes = "horovod_batchai.aio's classes" if aio else "horovod_batchai's classes"
    raise InvalidSpecError(field, f"{given} is not a {wanted}",
                           f"a {wanted} ({wanted}.local(), .azure(...), .azureml(...) or .from_env()) for {classes}")


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


def names_from_id(target: Any, resource_id: object, kind: str, *, aio: bool = False) -> dict[str, str]:
    """What ``from_id(target, resource_id)`` of a ``kind`` reads, on either side: the target
    checked to be of that side (``aio``), then the names in the id (see :func:`parse_id`)."""
    check_target(target, aio=aio)
    return parse_id(target, resource_id, kind)
