"""The sweep resource's provider: sweeps as the store keeps them, and what a request may do to one.

Handlers (``api.py``) look a sweep up here once, then create, read, list, cancel or delete it; the
driver (``driver.py``) moves it afterwards. A sweep's trial template is kept in the store's
private column as it was sent (its mount keys and secret values included, which the trial jobs
need); the document answers it with those taken out, as a job answers its own properties.
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Protocol

from ...core.arm_errors import InvalidParameter
from ...core.context import ServiceContext
from ...runner.states import utc_now
from ..provider import BatchAIProvider
from ..records import Experiment, Slot
from ..validation import check_name, split_secrets
from .errors import SweepAlreadyExists
from .records import LIVE, SWEEP_TYPE, Sweep, SweepStatus, TrialStatus, move_sweep, move_trial
from .spec import MAX_NAME, parse_sweep_create, stored_properties

__all__ = ["SweepProvider", "SweepDriving", "sweep_private_trial"]

CANCELLED_BY_USER = "The sweep was cancelled by the user."


class SweepDriving(Protocol):
    """What the provider tells whatever drives sweeps (``driver.SweepDriver`` in a running service)."""

    def notify(self) -> None:
        """A sweep was created or changed: look at it soon."""


class _NoDriver:
    def notify(self) -> None:
        pass


def sweep_private_trial(context: ServiceContext, sweep_id: str) -> dict[str, Any]:
    """The trial template as it was sent (secrets included)."""
    return dict(context.store.get_private(sweep_id).get("trial") or {})


class SweepProvider:
    """Sweeps on one service's state: ``context.provider(SweepProvider)``."""

    def __init__(self, context: ServiceContext) -> None:
        self.context = context
        self.store = context.store
        self.batchai = context.provider(BatchAIProvider)
        #: whatever drives sweeps; the service sets its driver when it starts.
        self.driver: SweepDriving = _NoDriver()
        #: held by a driver's pass over a sweep and by a delete: a sweep is not deleted while a pass
        #: submits its trials' jobs.
        self.lock = threading.Lock()

    # -- lookups ----------------------------------------------------------------------------------

    def sweep_slot(self, sub: str, rg: str, ws: str, exp: str, name: str, *,
                   for_write: bool = False) -> Slot[Experiment, Sweep]:
        experiment = self.batchai.experiment_slot(sub, rg, ws, exp, for_write=for_write)
        parent = experiment.require()
        check_name(name, Sweep.what, "sweepName")
        if len(name) > MAX_NAME:
            raise InvalidParameter(f"The sweep name '{name}' is too long: at most {MAX_NAME} characters (its trials "
                                   "are jobs named <sweep>-<n>, and a job name is at most 64).", target="sweepName")
        sweep_id = f"{parent.id}/sweeps/{name}"
        doc = self.store.get(sweep_id)
        return Slot(kind=Sweep, parent=parent, id=sweep_id, name=name, existing=None if doc is None else Sweep(doc),
                    scope=experiment.scope, region=experiment.region)

    def sweep(self, sub: str, rg: str, ws: str, exp: str, name: str) -> Sweep:
        return self.sweep_slot(sub, rg, ws, exp, name).require()

    def sweeps(self, experiment: Experiment) -> list[Sweep]:
        return [Sweep(doc) for doc in self.store.list(SWEEP_TYPE, parent=experiment.id)]

    # -- changes ----------------------------------------------------------------------------------

    def put_sweep(self, slot: Slot[Experiment, Sweep], body: Any) -> tuple[Sweep, bool]:
        """(the sweep, whether it was created). Everything is checked before anything is stored: the
        settings, the trial as a job, and its cluster."""
        spec, first_trial = parse_sweep_create(body)
        self.batchai.check_job_cluster(first_trial.properties, slot.scope.subscription)
        settings = stored_properties(spec, body)
        answered_trial = copy.deepcopy(settings["trial"])
        split_secrets(answered_trial)
        settings["trial"] = answered_trial
        existing = slot.existing
        if existing is not None:
            stored = {k: existing.properties.get(k) for k in settings}
            same = stored == settings and sweep_private_trial(self.context, slot.id) == spec.trial
            if not same:
                changed = sorted(k for k in settings if stored.get(k) != settings[k]) or ["trial (secret values)"]
                raise SweepAlreadyExists(f"A sweep named '{slot.name}' already exists with other settings "
                                         f"({', '.join(changed)}); a sweep cannot change once created. Delete it "
                                         "first or create one with another name.")
            return existing, False
        now = utc_now()
        props = {**settings, "provisioningState": "succeeded", "creationTime": now,
                 "status": SweepStatus.RUNNING.value, "statusTransitionTime": now, "bestTrial": None, "trials": []}
        doc = {"id": slot.id, "name": slot.name, "type": SWEEP_TYPE, "properties": props}
        self.store.put(slot.id, SWEEP_TYPE, slot.parent.id, doc, private={"trial": spec.trial})
        self.driver.notify()
        return Sweep(doc), True

    def cancel(self, sweep: Sweep) -> Sweep:
        """Cancel a running sweep; an ended one stays as it is. Its live trials are cancelled in the
        same change, so that what the cancel answers, and every read after it, says so; the driver
        then stops their jobs (``stopping`` until each has ended)."""
        def change(body: dict[str, Any]) -> None:
            if body["properties"]["status"] == SweepStatus.RUNNING.value:
                move_sweep(body["properties"], SweepStatus.CANCELLED, CANCELLED_BY_USER)
                for trial in body["properties"]["trials"]:
                    if trial["status"] in LIVE:
                        move_trial(trial, TrialStatus.CANCELLED, CANCELLED_BY_USER)
                        trial["stopping"] = True
        updated = self.store.update(sweep.id, change)
        if updated is None:
            raise Sweep.missing.named(Sweep.what, sweep.name)
        self.driver.notify()
        return Sweep(updated)

    def delete(self, slot: Slot[Experiment, Sweep]) -> bool:
        """Delete a sweep: its running trials' jobs are terminated; the jobs stay in the experiment
        with their outputs. False when there was no such sweep."""
        with self.lock:
            doc = self.store.get(slot.id)
            if doc is None:
                return False
            sweep = Sweep(doc)
            for trial in sweep.trials:
                if trial["status"] in LIVE or trial.get("stopping"):
                    self.batchai.scheduler.terminate_job(f"{slot.parent.id}/jobs/{trial['name']}", wait=False)
            self.store.delete(sweep.id)
            return True
