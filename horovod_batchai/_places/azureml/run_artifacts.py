"""An Azure ML run's MLflow artifacts, read from the workspace's artifact service (run history)
through the same pipeline as its MLflow endpoint (``tracking.py``), written once as steps.

Azure ML gives a run an ``azureml:`` artifact root that MLflow's REST API does not serve; the
``azureml-mlflow`` plugin (1.62, ``azureml/mlflow/_store/artifact/artifact_repo.py`` and
``_client/artifact/run_artifact_client.py``) reads it from the run-history service on the tracking
URI's host, and so does this module, with the same requests:

- the experiment and run are the ``<experiment>/runs/<run>`` of the root
  (``azureml://experiments/<experiment>/runs/<run>/artifacts[/<prefix>]``, or the long form with
  the workspace's path before ``experiments``); a ``<prefix>`` is where the run's artifacts start;
- ``GET https://<host>/history/v1.0<workspace>/experiments/<experiment>/runs/<run>/artifacts``
  lists every artifact file of the run, flat (``{"value": [{"path", ...}], "continuationToken",
  "nextLink"}``; no sizes), a page at a time: the next is asked for with ``continuationToken=``
  (the generated client's parameter), or at ``nextLink`` where only that is given; directories
  are the paths' parents;
- ``GET .../runs/<run>/artifacts/contentinfo?path=<path>`` answers ``{"contentUri", ...}``: a SAS
  link to the file's blob, read with azure-storage-blob (never with the caller's token); the link
  is a secret and is neither logged nor put in an error.

Errors come in Azure ML's shape ``{"error": {"code", "message"}}`` and are raised as azure-core's
exceptions with that code and message.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List
from urllib.parse import quote, urlparse

from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ResourceNotFoundError
from azure.core.rest import HttpRequest

from ..._models.errors import TargetError
from ..._models.mlflow_run import Artifact
from ..._shared.steps import Steps

__all__ = ["ArtifactRoot", "RunArtifacts", "artifact_root", "history_base"]

HISTORY_PATH = "/history/v1.0"
_WORKSPACE = re.compile(r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.MachineLearningServices"
                        r"/workspaces/[^/]+", re.IGNORECASE)
_ROOT = re.compile(r"(?:^|/)(?P<experiment>[^/]+)/runs/(?P<run>[^/]+)(?:/artifacts(?:/(?P<prefix>.*))?)?$")
#: pages of the listing followed at most: a service that keeps answering a token is not trusted forever
_MAX_PAGES = 10000


@dataclass(frozen=True)
class ArtifactRoot:
    """Where a run's artifacts are in the artifact service: its experiment and run, and the
    prefix its artifacts' paths start with there ('' for none)."""

    experiment: str
    run_id: str
    prefix: str = ""

    def service_path(self, path: str) -> str:
        """``path`` (relative to the run's artifact root) as the service names it."""
        return "/".join(part for part in (self.prefix, path) if part)


def artifact_root(artifact_uri: str) -> ArtifactRoot:
    """The :class:`ArtifactRoot` of an ``azureml:`` artifact URI; other roots are refused."""
    parsed = urlparse(artifact_uri)
    match = _ROOT.search(f"{parsed.netloc}{parsed.path}".rstrip("/")) if parsed.scheme == "azureml" else None
    if match is None:
        raise TargetError(f"the run's artifact root {artifact_uri!r} is not an Azure ML run's "
                          "(azureml://.../<experiment>/runs/<run>/artifacts)")
    return ArtifactRoot(match["experiment"], match["run"], (match["prefix"] or "").strip("/"))


def history_base(tracking_uri: str) -> str:
    """The run-history service of the workspace whose MLflow tracking URI is ``tracking_uri``:
    ``https://<its host>/history/v1.0/subscriptions/.../workspaces/<ws>``."""
    parsed = urlparse(tracking_uri)
    workspace = _WORKSPACE.search(parsed.path)
    if parsed.scheme not in ("azureml", "https") or not parsed.netloc or workspace is None:
        raise TargetError(f"the MLflow tracking URI {tracking_uri!r} names no Azure ML workspace")
    return f"https://{parsed.netloc}{HISTORY_PATH}{workspace.group(0)}"


def _error(response: Any, what: str) -> HttpResponseError:
    try:
        body = response.json()
    except Exception:  # noqa: BLE001 -- not the service's JSON: the status says enough
        body = {}
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    code, message = str(error.get("code") or ""), str(error.get("message") or "")
    text = f"{what}: {code or response.status_code}" + (f": {message}" if message else "")
    if response.status_code == 404:
        return ResourceNotFoundError(text, response=response)
    if response.status_code in (401, 403):
        return ClientAuthenticationError(text, response=response)
    return HttpResponseError(text, response=response)


class RunArtifacts:
    """The artifact service under ``base`` (:func:`history_base`): each request sent with
    ``send`` (an ``azure.core.rest.HttpRequest`` and per-call pipeline options such as
    ``logging_enable`` in, its response or an awaitable of it out), each
    file's blob read with ``download`` (its SAS link in, its bytes or an awaitable of them out)."""

    def __init__(self, base: str, send: Callable[[HttpRequest], Any], download: Callable[[str], Any]) -> None:
        self.base = base.rstrip("/")
        self._send = send
        self._download = download

    def _url(self, root: ArtifactRoot, tail: str = "") -> str:
        return (f"{self.base}/experiments/{quote(root.experiment, safe='')}/runs/{quote(root.run_id, safe='')}"
                f"/artifacts{tail}")

    def _get(self, url: str, params: Dict[str, str], what: str, **options: Any) -> "Steps[Dict[str, Any]]":
        response = yield self._send(HttpRequest("GET", url, params=params), **options)
        if response.status_code >= 400:
            raise _error(response, what)
        answer = response.json() if response.content else {}
        return answer if isinstance(answer, dict) else {}

    def paths(self, root: ArtifactRoot) -> "Steps[List[str]]":
        """Every artifact file of the run, relative to its artifact root (every page)."""
        found: List[str] = []
        url: str = self._url(root)
        params: Dict[str, str] = {}
        for _ in range(_MAX_PAGES):
            page = yield from self._get(url, params, f"listing the artifacts of Azure ML run {root.run_id}")
            for item in page.get("value") or []:
                path = str((item or {}).get("path") or "").strip("/")
                if not root.prefix:
                    found.append(path)
                elif path.startswith(root.prefix + "/"):
                    found.append(path[len(root.prefix) + 1:])
            token, link = page.get("continuationToken"), page.get("nextLink")
            if token:
                url, params = self._url(root), {"continuationToken": str(token)}
            elif link:  # a next link only: followed on this host alone, where the caller's token may go
                url, params = self._same_host(str(link)), {}
            else:
                return [p for p in found if p]
        raise TargetError(f"the artifact listing of Azure ML run {root.run_id} did not end after {_MAX_PAGES} pages")

    def _same_host(self, link: str) -> str:
        if urlparse(link).scheme != "https" or urlparse(link).netloc.lower() != urlparse(self.base).netloc.lower():
            raise TargetError(f"the artifact service's next page is on another host ({urlparse(link).netloc!r})")
        return link

    def list(self, root: ArtifactRoot, path: str) -> "Steps[List[Artifact]]":
        """The run's artifacts directly in directory ``path`` ('' for the root): its files (no
        size: the service gives none) and its subdirectories, as MLflow's ``artifacts/list`` has them."""
        under = f"{path}/" if path else ""
        entries: Dict[str, Artifact] = {}
        for file in (yield from self.paths(root)):
            if not file.startswith(under):
                continue
            name, _, rest = file[len(under):].partition("/")
            entry = Artifact(under + name, bool(rest))
            if entries.setdefault(entry.path, entry) != entry:  # a name that is a file and a directory
                entries[entry.path] = Artifact(entry.path, True)
        return sorted(entries.values(), key=lambda a: a.path)

    def read(self, root: ArtifactRoot, path: str, check_url: Callable[[str], str]) -> "Steps[bytes]":
        """The bytes of artifact file ``path``: its SAS link from ``contentinfo`` (checked with
        ``check_url``), then the blob."""
        # its answer holds the link: no network trace of it, even where the caller turned them on
        info = yield from self._get(self._url(root, "/contentinfo"), {"path": root.service_path(path)},
                                    f"locating artifact {path!r} of Azure ML run {root.run_id}", logging_enable=False)
        link = str(info.get("contentUri") or "")
        if not link:
            raise ResourceNotFoundError(f"locating artifact {path!r} of Azure ML run {root.run_id}: "
                                        "the artifact service gave no content link")
        data = yield self._download(check_url(link))
        return bytes(data)
