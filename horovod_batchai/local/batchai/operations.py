"""Long-running operations of Microsoft.BatchAI, answered the way the 2018 service answered them.

A PUT or DELETE that starts one answers ``202`` with an empty body and two headers::

    Azure-AsyncOperation: {base}/subscriptions/{sub}/providers/Microsoft.BatchAI/locations/{loc}/operationresults/{id}?api-version=2018-05-01
    Location:             {base}/subscriptions/{sub}/providers/Microsoft.BatchAI/locations/{loc}/operationstatuses/{id}?api-version=2018-05-01

and the client polls ``operationresults/{id}`` until ``status`` is ``Succeeded`` or ``Failed``. The poll
body is ``{"id", "name", "status", "startTime"[, "endTime", "properties": {"resourceId":
"<sub>$<rg>$<ws>$<name>"}, "error": {...}]}`` as recorded. azure-core's poller then GETs the
resource (PUT) or the ``Location`` URL (POST), so ``operationstatuses/{id}`` answers the same body.

Operations live in their own SQLite table, so a client polling across a restart of the service
still gets its answer. Most operations finish inside the request that starts them; one whose end
depends on something else (a job being terminated) registers a completion check that each poll
runs until it reports an outcome. An operation that a killed service left ``InProgress`` is
settled when the service starts again (``BatchAIProvider.finish_interrupted_operations``), so no
poll waits forever.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from werkzeug.wrappers import Response

from ..core.arm_errors import OperationNotFound
from ..core.routing import Call, Route, json_response
from ..runner.states import utc_now

if TYPE_CHECKING:
    from ..core.context import ServiceContext

__all__ = ["LongRunningOperation", "start_operation", "finish_operation", "get_operation", "accepted_response",
           "operation_body", "register_completion_check", "has_completion_check", "refresh_operation",
           "unfinished_operations", "dollar_resource_id", "ROUTES", "API_VERSION", "PROVIDER",
           "POLL_AFTER_S"]

API_VERSION = "2018-05-01"
PROVIDER = "Microsoft.BatchAI"
#: what ``Retry-After`` tells pollers; local work is quick, so they need not wait azure-core's default 30 s.
POLL_AFTER_S = 1


#: kind -> check run on each poll of an unfinished operation; returns None while it is still
#: running, else (status, error).
CompletionCheck = Callable[["ServiceContext", "LongRunningOperation"], Optional[tuple[str, Optional[dict[str, Any]]]]]
_checks: dict[str, CompletionCheck] = {}


@dataclass(frozen=True)
class LongRunningOperation:
    id: str
    subscription: str
    provider: str
    location: str
    resource_id: str
    kind: str
    status: str
    start_time: str
    end_time: Optional[str] = None
    error: Optional[dict[str, Any]] = None

    @property
    def done(self) -> bool:
        return self.status in ("Succeeded", "Failed")


def _row_to_op(row: Any) -> LongRunningOperation:
    return LongRunningOperation(id=row["id"], subscription=row["subscription"], provider=row["provider"],
                     location=row["location"], resource_id=row["resource_id"], kind=row["kind"],
                     status=row["status"], start_time=row["start_time"], end_time=row["end_time"],
                     error=json.loads(row["error"]) if row["error"] else None)


def _subscription_of(resource_id: str) -> str:
    parts = resource_id.strip("/").split("/")
    if len(parts) < 2 or parts[0].lower() != "subscriptions":
        raise ValueError(f"not a subscription-scoped resource id: {resource_id!r}")
    return parts[1]


def start_operation(context: "ServiceContext", *, provider: str = PROVIDER, location: str, resource_id: str,
                    kind: str) -> LongRunningOperation:
    """Record a new operation, InProgress."""
    op = LongRunningOperation(id=str(uuid.uuid4()), subscription=_subscription_of(resource_id), provider=provider,
                   location=location, resource_id=resource_id, kind=kind, status="InProgress",
                   start_time=utc_now())
    with context.store.transaction() as db:
        db.execute("INSERT INTO batchai_operations (id, subscription, provider, location, resource_id, kind,"
                   " status, start_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (op.id, op.subscription, op.provider, op.location, op.resource_id, op.kind, op.status,
                    op.start_time))
    return op


def finish_operation(context: "ServiceContext", op_id: str, *, error: Optional[dict[str, Any]] = None) -> LongRunningOperation:
    """Mark an operation Succeeded, or Failed with ``error`` ({"code", "message"}). Finishing a
    finished operation changes nothing."""
    status = "Failed" if error else "Succeeded"
    with context.store.transaction() as db:
        db.execute("UPDATE batchai_operations SET status = ?, end_time = ?, error = ?"
                   " WHERE id = ? AND status = 'InProgress'",
                   (status, utc_now(), json.dumps(error) if error else None, op_id))
    found = get_operation(context, op_id)
    if found is None:
        raise KeyError(op_id)
    return found


def get_operation(context: "ServiceContext", op_id: str) -> Optional[LongRunningOperation]:
    rows = context.store.query("SELECT * FROM batchai_operations WHERE id = ?", (op_id.lower(),))
    return _row_to_op(rows[0]) if rows else None


def unfinished_operations(context: "ServiceContext") -> list[LongRunningOperation]:
    """Operations still ``InProgress``, oldest first."""
    rows = context.store.query("SELECT * FROM batchai_operations WHERE status = 'InProgress' ORDER BY start_time")
    return [_row_to_op(row) for row in rows]


def register_completion_check(kind: str, check: CompletionCheck) -> None:
    """Have polls of unfinished ``kind`` operations ask ``check`` whether they are done."""
    _checks[kind] = check


def has_completion_check(kind: str) -> bool:
    return kind in _checks


def refresh_operation(context: "ServiceContext", op: LongRunningOperation) -> LongRunningOperation:
    """The operation, finished if its completion check says it is done."""
    return _refresh(context, op)


def _refresh(context: "ServiceContext", op: LongRunningOperation) -> LongRunningOperation:
    check = _checks.get(op.kind)
    if op.done or check is None:
        return op
    outcome = check(context, op)
    if outcome is None:
        return op
    status, error = outcome
    return finish_operation(context, op.id, error=error if status == "Failed" else None)


def dollar_resource_id(resource_id: str) -> str:
    """``<sub>$<rg>$<ws>$<name>``: the names along a Batch AI resource id, as poll bodies carry them."""
    parts = resource_id.strip("/").split("/")
    names = [parts[1]]
    for i in range(2, len(parts) - 1):
        if parts[i].lower() in ("resourcegroups", "workspaces", "experiments", "jobs", "clusters", "fileservers"):
            names.append(parts[i + 1])
    return "$".join(names)


def _op_path(op: LongRunningOperation, leaf: str) -> str:
    return (f"/subscriptions/{op.subscription}/providers/{op.provider}/locations/{op.location}"
            f"/{leaf}/{op.id}")


def operation_body(base_url: str, op: LongRunningOperation) -> dict[str, Any]:
    body: dict[str, Any] = {"id": base_url + _op_path(op, "operationresults"), "name": op.id,
                            "status": op.status, "startTime": op.start_time}
    if op.end_time:
        body["endTime"] = op.end_time
    if op.status == "Succeeded":
        body["properties"] = {"resourceId": dollar_resource_id(op.resource_id)}
    if op.error:
        body["error"] = op.error
    return body


def accepted_response(call: Call, op: LongRunningOperation) -> Response:
    """The ``202 Accepted`` that starts a long-running operation (empty body, as recorded)."""
    query = f"?api-version={API_VERSION}"
    headers = {
        "Azure-AsyncOperation": call.base_url + _op_path(op, "operationresults") + query,
        "Location": call.base_url + _op_path(op, "operationstatuses") + query,
        "Retry-After": str(POLL_AFTER_S),
    }
    return Response(b"", status=202, headers=headers)


def _poll(call: Call, subscriptionId: str, location: str, operationId: str) -> Response:
    op = get_operation(call.context, operationId)
    if op is None or op.subscription.lower() != subscriptionId.lower():
        raise OperationNotFound(f"The operation {operationId} is not found.")
    op = _refresh(call.context, op)
    headers = {} if op.done else {"Retry-After": str(POLL_AFTER_S)}
    return json_response(operation_body(call.base_url, op), headers=headers)


_OPS = "/subscriptions/{subscriptionId}/providers/Microsoft.BatchAI/locations/{location}"
ROUTES: list[Route] = [
    Route("GET", _OPS + "/operationresults/{operationId}", _poll, frozenset({API_VERSION})),
    Route("GET", _OPS + "/operationstatuses/{operationId}", _poll, frozenset({API_VERSION})),
]
