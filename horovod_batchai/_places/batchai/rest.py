"""Batch AI requests sent and read as JSON, through the connection's ARM pipeline
(:meth:`~horovod_batchai._places.connection.Connection.batchai_rest`: the caller's credential,
transport, retries and logging policy): reads that need none of azure-mgmt-batchai's models, and
what it has no operations for. Errors are raised as azure-mgmt's generated clients raise them.
No I/O of its own: :func:`listed_json` is an operation's steps (each page a yielded request)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from azure.core.exceptions import (ClientAuthenticationError, HttpResponseError, ResourceExistsError,
                                   ResourceNotFoundError, map_error)
from azure.core.rest import HttpRequest
from azure.mgmt.core.exceptions import ARMErrorFormat

from ..._shared.steps import Steps

__all__ = ["json_request", "listed_json", "checked_json", "API_VERSION"]

API_VERSION = "2018-05-01"
_ERRORS = {401: ClientAuthenticationError, 404: ResourceNotFoundError, 409: ResourceExistsError}


def json_request(rest: Any, method: str, resource_id: str, *, action: str = "",
                 body: Optional[Dict[str, Any]] = None, params: Optional[Dict[str, Any]] = None) -> HttpRequest:
    """A request to ``rest`` (the connection's ARM pipeline client) for the resource
    ``resource_id`` (or a list: an id ending in its collection's name), or its ``action``."""
    url = rest.format_url(resource_id + (f"/{action}" if action else ""))
    return HttpRequest(method, url, params={**(params or {}), "api-version": API_VERSION}, json=body)


def listed_json(rest: Any, first: HttpRequest, **options: Any) -> "Steps[List[Dict[str, Any]]]":
    """Every item of a list answer (``{"value": [...], "nextLink": ...}``): ``first``, then a
    GET of each page's ``nextLink``, as the generated clients' pagers ask (``options``: per-call
    pipeline options)."""
    items: List[Dict[str, Any]] = []
    request = first
    while True:
        response = yield rest.send_request(request, **options)
        page = checked_json(response, (200,)) or {}
        items.extend(page.get("value") or [])
        link = page.get("nextLink")
        if not link:
            return items
        request = HttpRequest("GET", rest.format_url(link))


def checked_json(response: Any, ok: tuple = (200, 201)) -> Any:
    """The answer's JSON body; the error azure-mgmt clients raise for any other status."""
    if response.status_code not in ok:
        map_error(status_code=response.status_code, response=response, error_map=_ERRORS)
        raise HttpResponseError(response=response, error_format=ARMErrorFormat)
    return response.json() if response.content else None
