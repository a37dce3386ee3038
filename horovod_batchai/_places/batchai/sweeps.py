"""The local service's sweep resource (docs/local_service.rst, "Sweeps"): an extension of Batch AI
2018-05-01 that azure-mgmt-batchai has no operations for, so its requests are sent through the
BatchAI client's own pipeline (``_send_request``: the caller's credential, transport, retries and
logging policy), and its answers converted here. No I/O of its own."""
from __future__ import annotations

from typing import Any, Dict, Optional

from azure.core.exceptions import (ClientAuthenticationError, HttpResponseError, ResourceExistsError,
                                   ResourceNotFoundError, map_error)
from azure.core.rest import HttpRequest
from azure.mgmt.core.exceptions import ARMErrorFormat

from ..._models.records import SweepRecord, SweepTrialRecord

__all__ = ["sweep_request", "checked_json", "sweep_record", "API_VERSION"]

API_VERSION = "2018-05-01"
_ERRORS = {401: ClientAuthenticationError, 404: ResourceNotFoundError, 409: ResourceExistsError}


def sweep_request(method: str, sweep_id: str, *, action: str = "", body: Optional[Dict[str, Any]] = None) -> HttpRequest:
    """A request for the sweep ``sweep_id`` (or, with ``sweep_id`` ending in ``/sweeps``, the list)."""
    url = sweep_id + (f"/{action}" if action else "")
    return HttpRequest(method, url, params={"api-version": API_VERSION}, json=body)


def checked_json(response: Any, ok: tuple = (200, 201)) -> Any:
    """The answer's JSON body; the error azure-mgmt clients raise for any other status."""
    if response.status_code not in ok:
        map_error(status_code=response.status_code, response=response, error_map=_ERRORS)
        raise HttpResponseError(response=response, error_format=ARMErrorFormat)
    return response.json() if response.content else None


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def sweep_record(doc: Dict[str, Any], sweep_id: str) -> SweepRecord:
    props = doc.get("properties") or {}
    objective = props.get("objective") or {}
    trial_props = props.get("trial") or {}
    toolkit = trial_props.get("horovodSettings") or trial_props.get("customToolkitSettings") or {}
    arguments = str(toolkit.get("commandLineArgs") or toolkit.get("commandLine") or "")
    trials = tuple(SweepTrialRecord(
        index=int(t.get("index", 0)), name=str(t.get("name") or ""), parameters=dict(t.get("parameters") or {}),
        status=str(t.get("status") or ""), reason=t.get("reason"), epochs=int(t.get("epochs") or 0),
        values=tuple(_number(v) for v in t.get("metricValues") or []), objective=_number(t.get("objectiveValue")))
        for t in props.get("trials") or [])
    best = props.get("bestTrial") or {}
    goal = str(objective.get("goal") or "maximize").lower()
    return SweepRecord(name=str(doc.get("name") or sweep_id.rsplit("/", 1)[-1]), id=str(doc.get("id") or sweep_id),
                       status=str(props.get("status") or ""), reason=props.get("statusReason"),
                       metric=str(objective.get("primaryMetric") or ""), mode="min" if goal == "minimize" else "max",
                       arguments=arguments, best=best.get("name"), trials=trials, raw=doc)
