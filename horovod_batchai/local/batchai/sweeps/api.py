"""The sweep resource: routes and handlers (an extension of Batch AI 2018-05-01, in Azure ML's
sweep-job shape; see ``docs/local_service.rst``, "Sweeps").

``PUT`` creates (201; 200 when the same sweep exists), ``GET`` reads its state, best trial and
trials, the collection lists them, ``POST .../cancel`` cancels, ``DELETE`` deletes (200; 204 when
there was none). Each handler looks the sweep up once through :class:`~.provider.SweepProvider`
and serialises what it answers.
"""
from __future__ import annotations

from werkzeug.wrappers import Response

from ...core.routing import Call, Route, json_response
from ..operations import API_VERSION
from ..provider import etag
from .provider import SweepProvider
from .records import Sweep

__all__ = ["ROUTES"]


def _provider(call: Call) -> SweepProvider:
    return call.context.provider(SweepProvider)


def _answer(sweep: Sweep, status: int = 200) -> Response:
    return json_response(sweep.doc, status=status, headers={"ETag": etag(sweep.doc)})


def list_sweeps(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                experimentName: str) -> Response:
    provider = _provider(call)
    experiment = provider.batchai.experiment(subscriptionId, resourceGroupName, workspaceName, experimentName)
    return json_response({"value": [sweep.doc for sweep in provider.sweeps(experiment)]})


def get_sweep(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
              sweepName: str) -> Response:
    return _answer(_provider(call).sweep(subscriptionId, resourceGroupName, workspaceName, experimentName, sweepName))


def put_sweep(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
              sweepName: str) -> Response:
    provider = _provider(call)
    slot = provider.sweep_slot(subscriptionId, resourceGroupName, workspaceName, experimentName, sweepName,
                               for_write=True)
    sweep, created = provider.put_sweep(slot, call.json())
    return _answer(sweep, 201 if created else 200)


def cancel_sweep(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
                 sweepName: str) -> Response:
    provider = _provider(call)
    return _answer(provider.cancel(provider.sweep(subscriptionId, resourceGroupName, workspaceName, experimentName,
                                                  sweepName)))


def delete_sweep(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
                 sweepName: str) -> Response:
    provider = _provider(call)
    slot = provider.sweep_slot(subscriptionId, resourceGroupName, workspaceName, experimentName, sweepName)
    return Response(b"", status=200 if provider.delete(slot) else 204)


_V = frozenset({API_VERSION})
_EXP = ("/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.BatchAI/workspaces/"
        "{workspaceName}/experiments/{experimentName}")
_SWEEP = _EXP + "/sweeps/{sweepName}"

ROUTES: list[Route] = [
    Route("GET", _EXP + "/sweeps", list_sweeps, _V),
    Route("GET", _SWEEP, get_sweep, _V),
    Route("PUT", _SWEEP, put_sweep, _V),
    Route("DELETE", _SWEEP, delete_sweep, _V),
    Route("POST", _SWEEP + "/cancel", cancel_sweep, _V),
]
