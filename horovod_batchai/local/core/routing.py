"""Routes as data: each API module lists ``Route(method, pattern, handler)`` entries.

Patterns are ARM-style paths with ``{name}`` placeholders, matched case-insensitively (ARM treats
``resourceGroups`` and ``resourcegroups`` alike, as the recorded CLI traffic shows), while the
captured names keep the casing the caller sent. A handler receives a :class:`Call` and the captured
names as keyword arguments and returns a werkzeug ``Response``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional

from werkzeug.wrappers import Request, Response

from .arm_errors import JSON_CONTENT_TYPE, InvalidRequestContent

if TYPE_CHECKING:
    from .context import ServiceContext

__all__ = ["Route", "Router", "Call", "json_response"]

Handler = Callable[..., Response]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: str
    handler: Handler
    #: api-versions this route answers; empty means the route takes no api-version (data plane).
    api_versions: frozenset[str] = frozenset()

    def compile(self) -> "re.Pattern[str]":
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.pattern.rstrip("/")))
        return re.compile(f"^{regex}/?$", re.IGNORECASE)


@dataclass
class Call:
    """One request as handlers see it."""

    #: kept out of repr: a request's repr shows its URL, and a SAS signature travels in the query.
    request: Request = field(repr=False)
    context: "ServiceContext"
    #: scheme://host:port the caller used, for building Location / nextLink / download URLs.
    base_url: str
    route: Optional[Route] = None
    _json: Any = field(default=None, repr=False)

    @property
    def api_version(self) -> str:
        return self.request.args.get("api-version", "")

    def json(self) -> Any:
        """The request body as JSON; a body that is not JSON is the caller's mistake (400)."""
        if self._json is None:
            raw = self.request.get_data(cache=True)
            if not raw.strip():
                self._json = {}
            else:
                try:
                    self._json = json.loads(raw)
                except (ValueError, UnicodeDecodeError) as exc:
                    raise InvalidRequestContent(
                        f"The request content was invalid and could not be deserialized: {exc}.")
                except RecursionError:
                    raise InvalidRequestContent(
                        "The request content was invalid and could not be deserialized: it nests "
                        "objects or arrays too deeply.") from None
        return self._json

    def json_object(self) -> dict[str, Any]:
        """The request body as a JSON object (an empty body is an empty one)."""
        body = self.json()
        if not isinstance(body, dict):
            raise InvalidRequestContent("The request content was invalid: the body must be a JSON object.")
        return body

    def url(self, path: str, **query: str) -> str:
        from urllib.parse import urlencode
        return self.base_url + path + (("?" + urlencode(query)) if query else "")


class Router:
    """Finds the handler for a method and path among a list of routes."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self._routes = [(route, route.compile()) for route in routes]

    def match(self, method: str, path: str) -> tuple[Optional[Route], Mapping[str, str], bool]:
        """Returns (route, captured names, path_known). ``path_known`` with no route means 405."""
        path_known = False
        for route, regex in self._routes:
            m = regex.match(path)
            if m is None:
                continue
            path_known = True
            if route.method == method:
                return route, m.groupdict(), True
        return None, {}, path_known


def json_response(body: Any, status: int = 200, headers: Optional[Mapping[str, str]] = None) -> Response:
    data = "" if body is None else json.dumps(body)
    return Response(data, status=status, headers=dict(headers or {}),
                    content_type=JSON_CONTENT_TYPE)
