"""MLflow's REST API, read through the caller's own azure-core pipeline, written once as steps
(:mod:`horovod_batchai._shared.steps`) so that the sync and the aio backends both run it.

A place hands :class:`MlflowRest` the https form of its tracking URI and a ``send`` that takes an
``azure.core.rest.HttpRequest``: locally the connection's Batch AI pipeline (``batchai_rest``:
the service's credential, the target's transport and retries; the service's ``/_mlflow`` front
takes the same bearer token as ARM), on Azure ML a pipeline of the target's client options with
the caller's credential (``_places/azureml/tracking.py``); both are built by ``..pipeline``. The mlflow package is never imported.

The calls are those of MLflow's REST API 2.0 (``mlflow/protos/service.proto``): ``runs/get``,
``metrics/get-history`` (paged), ``runs/search`` and ``experiments/get-by-name`` (to find a
local job's run by its name and job-id tag), ``artifacts/list`` (paged), and the artifact proxy
``/api/2.0/mlflow-artifacts/artifacts/<path>`` for a run whose artifact root is
``mlflow-artifacts:`` (what ``mlflow server --serve-artifacts`` gives runs, as the local one does).
Errors come in MLflow's format ``{"error_code", "message"}``; they are raised as azure-core's
exceptions (``ResourceNotFoundError`` for ``RESOURCE_DOES_NOT_EXIST``, ``ClientAuthenticationError``
for 401/403, ``HttpResponseError`` otherwise) with MLflow's code and message.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote, urlparse

from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ResourceNotFoundError
from azure.core.rest import HttpRequest

from .._models.errors import TargetError
from .._models.mlflow_run import Artifact, MetricPoint, RunData
from .._shared.steps import Steps

__all__ = ["MlflowRest", "LOCAL_TRACKING_PATH", "AZUREML_MLFLOW_SCOPE", "FEATURE_DISABLED", "https_base",
           "azureml_tracking_uri", "run_data", "find_run", "list_artifacts", "read_artifact", "tracking_off"]

#: where the local service's front serves MLflow (its ``local/tracking/endpoint.py`` PATH_PREFIX)
LOCAL_TRACKING_PATH = "/_mlflow"
#: the scope of the caller's token for the Azure ML workspace's MLflow endpoint: the one azure-ai-ml's
#: run-history client (same host, ``<region>.api.azureml.ms``) asks for
AZUREML_MLFLOW_SCOPE = "https://ml.azure.com/.default"
#: MLflow's answer where tracking is switched off or not installed (the local front's, HTTP 501)
FEATURE_DISABLED = "FEATURE_DISABLED"
_API = "/api/2.0/mlflow"
_HISTORY_PAGE = 25000
_SEARCH_PAGE = 50


def https_base(tracking_uri: str) -> str:
    """The https URL MLflow's REST API is under for ``tracking_uri``: Azure ML's
    ``azureml://<host>/<path>`` is ``https://<host>/<path>`` (what azureml-mlflow sends to); an
    https URI is itself."""
    parsed = urlparse(tracking_uri)
    if parsed.scheme not in ("azureml", "https") or not parsed.netloc:
        raise TargetError(f"the MLflow tracking URI {tracking_uri!r} is neither azureml:// nor https://")
    return f"https://{parsed.netloc}{parsed.path}".rstrip("/")


def azureml_tracking_uri(location: str, workspace_id: str) -> str:
    """An Azure ML workspace's tracking URI, as its ``mlFlowTrackingUri`` has it, from its region
    and ARM id (used when a workspace GET does not carry the property)."""
    return f"azureml://{location}.api.azureml.ms/mlflow/v1.0{workspace_id}"


def tracking_off(err: HttpResponseError) -> bool:
    """Whether ``err`` is MLflow's answer that tracking is switched off (or not installed) there."""
    return err.status_code == 501 or FEATURE_DISABLED in str(err)


def _error(response: Any, what: str) -> HttpResponseError:
    try:
        body = response.json()
    except Exception:  # noqa: BLE001 -- not MLflow's JSON: the status says enough
        body = {}
    code = str(body.get("error_code") or "") if isinstance(body, dict) else ""
    message = str(body.get("message") or "") if isinstance(body, dict) else ""
    text = f"{what}: {code or response.status_code}" + (f": {message}" if message else "")
    if response.status_code == 404 or code == "RESOURCE_DOES_NOT_EXIST":
        return ResourceNotFoundError(text, response=response)
    if response.status_code in (401, 403):
        return ClientAuthenticationError(text, response=response)
    return HttpResponseError(text, response=response)


def _number(value: Any) -> Optional[float]:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None  # MLflow's JSON writes NaN as "NaN"; anything else unreadable is no value
    return None if math.isnan(number) else number


class MlflowRest:
    """MLflow's REST API under ``base_url`` (a tracking URI's https form), each request sent with
    ``send`` (whose answer is a response, or an awaitable of one: see the module docstring)."""

    def __init__(self, base_url: str, send: Callable[[HttpRequest], Any]) -> None:
        self.base_url = base_url.rstrip("/")
        self._send = send

    def call(self, method: str, path: str, what: str, *, params: Optional[Mapping[str, Any]] = None,
             body: Optional[Mapping[str, Any]] = None) -> "Steps[Dict[str, Any]]":
        """One call of the tracking API (``path`` under ``/api/2.0/mlflow``); its JSON answer."""
        request = HttpRequest(method, self.base_url + _API + path, params=dict(params or {}),
                              json=dict(body) if body is not None else None)
        response = yield self._send(request)
        if response.status_code >= 400:
            raise _error(response, what)
        answer = response.json() if response.content else {}
        return answer if isinstance(answer, dict) else {}

    def content(self, url: str, what: str) -> "Steps[bytes]":
        """The bytes at ``url`` (an artifact through MLflow's artifact proxy)."""
        response = yield self._send(HttpRequest("GET", url))
        if response.status_code >= 400:
            raise _error(response, what)
        return bytes(response.content)


# -- the operations -------------------------------------------------------------------------------
def metric_history(rest: MlflowRest, run_id: str, key: str) -> "Steps[Tuple[MetricPoint, ...]]":
    """Every value of metric ``key``, ordered by step then time (every page of ``get-history``)."""
    points: List[MetricPoint] = []
    token: Optional[str] = None
    while True:
        params: Dict[str, Any] = {"run_id": run_id, "metric_key": key, "max_results": _HISTORY_PAGE}
        if token:
            params["page_token"] = token
        page = yield from rest.call("GET", "/metrics/get-history", f"reading metric {key!r} of MLflow run {run_id}",
                                    params=params)
        points += [MetricPoint(int(m.get("step") or 0), _number(m.get("value")), int(m.get("timestamp") or 0))
                   for m in page.get("metrics") or []]
        token = page.get("next_page_token")
        if not token:
            break
    return tuple(sorted(points, key=lambda p: (p.step, p.timestamp)))


def run_data(rest: MlflowRest, run_id: str, *, histories: bool = True) -> "Steps[RunData]":
    """The run (``runs/get``) with its params and (``histories``) every metric's history."""
    run = (yield from rest.call("GET", "/runs/get", f"reading MLflow run {run_id}", params={"run_id": run_id})
           ).get("run") or {}
    info, data = run.get("info") or {}, run.get("data") or {}
    keys = sorted({str(m["key"]) for m in data.get("metrics") or [] if "key" in m})
    read = {}
    for key in keys if histories else ():
        read[key] = yield from metric_history(rest, run_id, key)
    return RunData(run_id=str(info.get("run_id") or info.get("run_uuid") or run_id),
                   experiment_id=str(info.get("experiment_id") or ""), status=str(info.get("status") or ""),
                   artifact_uri=str(info.get("artifact_uri") or ""),
                   params={str(p["key"]): str(p.get("value", "")) for p in data.get("params") or [] if "key" in p},
                   histories=read)


def find_run(rest: MlflowRest, experiment: str, run_name: str, tags: Mapping[str, str]) -> "Steps[Optional[str]]":
    """The id of the newest run named ``run_name`` in experiment ``experiment`` whose tags have
    ``tags``' values (compared without case: ARM ids are case-insensitive); None when none."""
    try:
        found = yield from rest.call("GET", "/experiments/get-by-name", f"reading MLflow experiment {experiment!r}",
                                     params={"experiment_name": experiment})
    except ResourceNotFoundError:
        return None
    experiment_id = str((found.get("experiment") or {}).get("experiment_id") or "")
    token: Optional[str] = None
    while True:
        body: Dict[str, Any] = {"experiment_ids": [experiment_id], "max_results": _SEARCH_PAGE,
                                "filter": f"attributes.run_name = '{run_name}'",
                                "order_by": ["attributes.start_time DESC"]}
        if token:
            body["page_token"] = token
        page = yield from rest.call("POST", "/runs/search", f"searching the MLflow runs of {experiment!r}", body=body)
        for run in page.get("runs") or []:
            have = {str(t.get("key")): str(t.get("value", "")) for t in (run.get("data") or {}).get("tags") or []}
            if all(have.get(k, "").lower() == v.lower() for k, v in tags.items()):
                return str((run.get("info") or {}).get("run_id") or "") or None
        token = page.get("next_page_token")
        if not token:
            return None


def list_artifacts(rest: MlflowRest, run_id: str, path: str) -> "Steps[List[Artifact]]":
    """The run's artifacts directly in ``path`` ('' for its root), every page of ``artifacts/list``."""
    items: List[Artifact] = []
    token: Optional[str] = None
    while True:
        params: Dict[str, Any] = {"run_id": run_id}
        if path:
            params["path"] = path
        if token:
            params["page_token"] = token
        page = yield from rest.call("GET", "/artifacts/list", f"listing the artifacts of MLflow run {run_id}",
                                    params=params)
        for item in page.get("files") or []:
            size = item.get("file_size")
            items.append(Artifact(str(item.get("path") or ""), bool(item.get("is_dir")),
                                  None if item.get("is_dir") or size is None else int(size)))
        token = page.get("next_page_token")
        if not token:
            return items


def artifact_url(rest: MlflowRest, artifact_uri: str, path: str) -> str:
    """Where MLflow's artifact proxy serves ``path`` of a run whose artifact root is
    ``artifact_uri`` (``mlflow-artifacts:/<exp>/<run>/artifacts``); other roots are refused."""
    parsed = urlparse(artifact_uri)
    if parsed.scheme != "mlflow-artifacts":
        raise TargetError(f"the run's artifacts are kept at {parsed.scheme or artifact_uri!r}: storage that MLflow's "
                          "REST API does not serve (only an mlflow-artifacts: root, a tracking server's own "
                          "artifact proxy, is read through it)")
    root = parsed.path.strip("/")
    return (f"{rest.base_url}/api/2.0/mlflow-artifacts/artifacts/"
            + quote(f"{root}/{path.strip('/')}" if root else path.strip("/")))


def read_artifact(rest: MlflowRest, run_id: str, path: str) -> "Steps[bytes]":
    """The bytes of artifact file ``path`` of run ``run_id``."""
    run = yield from run_data(rest, run_id, histories=False)
    url = artifact_url(rest, run.artifact_uri, path)
    return (yield from rest.content(url, f"reading artifact {path!r} of MLflow run {run.run_id}"))
