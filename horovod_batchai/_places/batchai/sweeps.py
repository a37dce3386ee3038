"""The local service's sweep resource (docs/local_service.rst, "Sweeps"), an extension of Batch AI
2018-05-01 that azure-mgmt-batchai has no operations for: its answers converted here (the requests
go through :mod:`.rest`). No I/O of its own."""
from __future__ import annotations

from typing import Any, Dict, Optional

from ..._models.records import SweepRecord, SweepTrialRecord

__all__ = ["sweep_record"]


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
