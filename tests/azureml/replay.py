"""A replaying azure-core transport: answers each request from a recorded (or spec-derived)
response, after checking that the request is the one expected -- method, host, path,
api-version and the shape of its JSON body -- in order.

A request that does not match is refused: the transport raises :class:`ReplayMismatch` (an
``AssertionError``) and also keeps it in ``mismatches``, so that a caller that swallows
exceptions cannot hide it; :meth:`ReplayTransport.verify` fails the test on any mismatch and on
any expected exchange that never came.

Where each exchange comes from is part of it (``source``): ``recording:<file>#<entry>`` for real
traffic from ``shared/reference/azureml-recordings``, ``spec:<example>`` for the REST spec's
examples in ``shared/reference/azureml-2025-12-01``, ``built:<why>`` for what neither has.
"""
from __future__ import annotations

import copy
import io
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional
from urllib.parse import parse_qs, urlparse

import requests
import requests.adapters
from azure.core.credentials import AccessToken, AccessTokenInfo
from azure.core.pipeline.transport import RequestsTransport
from requests.structures import CaseInsensitiveDict
from urllib3 import HTTPResponse

REFERENCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference"
RECORDINGS = REFERENCE / "azureml-recordings"
SPEC_EXAMPLES = REFERENCE / "azureml-2025-12-01" / "examples"
MANAGEMENT_HOST = "management.azure.com"

#: JSON paths of a job body whose keys are the caller's own names (maps), compared as "*"
JOB_MAPS = ("properties.tags", "properties.properties", "properties.environmentVariables",
            "properties.outputs", "properties.inputs", "properties.services")


#: the storage response headers a recorded blob exchange keeps (with every x-ms-*: metadata, error code)
STORAGE_HEADERS = ("etag", "last-modified", "content-md5", "content-length", "content-type", "accept-ranges")


class FakeCredential:
    """A token credential that never talks to Azure AD (the replay carries no token traffic)."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("replay-token", int(time.time()) + 3600)

    def get_token_info(self, *scopes: str, options: Any = None) -> AccessTokenInfo:
        return AccessTokenInfo("replay-token", int(time.time()) + 3600)


class ReplayMismatch(AssertionError):
    """The SDK sent a request the replay did not expect."""


# -- where responses come from ---------------------------------------------------------------------
def recording(name: str) -> list[dict[str, Any]]:
    """The entries of a recording in azureml-recordings (``name`` is a prefix of its file name)."""
    (path,) = [p for p in RECORDINGS.glob("*.json") if p.name.startswith(name)]
    return json.loads(path.read_text(encoding="utf-8"))["Entries"]


def spec_example(relative: str) -> dict[str, Any]:
    return json.loads((SPEC_EXAMPLES / relative).read_text(encoding="utf-8"))


def renamed(value: Any, names: Mapping[str, str]) -> Any:
    """``value`` (JSON) with each recorded name replaced by the test's, in every string."""
    text = json.dumps(value)
    for old, new in names.items():
        text = re.sub(re.escape(old) + r"(?![0-9A-Za-z])", new.replace("\\", "\\\\"), text)
    return json.loads(text)


def patched(value: Any, changes: Mapping[str, Any]) -> Any:
    """A copy of ``value`` with dotted ``changes`` applied (``None`` values are set, not removed)."""
    result = copy.deepcopy(value)
    for dotted, new in changes.items():
        node = result
        parts = dotted.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {}) if node.get(part) is None else node[part]
        node[parts[-1]] = new
    return result


# -- shapes ----------------------------------------------------------------------------------------
def shape(value: Any, path: str = "", free_form: Iterable[str] = ()) -> dict[str, str]:
    """{json path: kind} for every node; list items share ``[]``; keys under a free-form map are ``*``."""
    kinds: dict[str, str] = {}
    free = tuple(free_form)

    def walk(node: Any, where: str, is_map: bool) -> None:
        if isinstance(node, dict):
            kinds[where or "$"] = "object"
            for key, child in node.items():
                name = "*" if is_map else key
                child_path = f"{where}.{name}" if where else name
                walk(child, child_path, child_path in free)
        elif isinstance(node, list):
            kinds[where or "$"] = "array"
            for item in node:
                walk(item, f"{where}[]", False)
        else:
            kinds[where or "$"] = ("null" if node is None else "boolean" if isinstance(node, bool)
                                   else "number" if isinstance(node, (int, float)) else "string")

    walk(value, path, path in free)
    return kinds


def shape_differences(sent: Any, expected: Any, *, extra_ok: Iterable[str] = (),
                      missing_ok: Iterable[str] = (), free_form: Iterable[str] = ()) -> list[str]:
    """Where ``sent`` differs in shape from ``expected``: fields only one has, or of another kind
    (null matches any kind). A path in ``extra_ok``/``missing_ok`` covers everything under it;
    the keys of a ``free_form`` map are compared as ``*``."""
    mine, theirs = shape(sent, free_form=free_form), shape(expected, free_form=free_form)

    def covered(path: str, prefixes: Iterable[str]) -> bool:
        return any(path == p or path.startswith(p + ".") or path.startswith(p + "[]") for p in prefixes)

    problems = []
    for path, kind in sorted(mine.items()):
        if path not in theirs:
            if not covered(path, extra_ok):
                problems.append(f"sent {path} ({kind}), which the expected request does not have")
        elif "null" not in (kind, theirs[path]) and kind != theirs[path]:
            problems.append(f"sent {path} as {kind}, expected {theirs[path]}")
    for path, kind in sorted(theirs.items()):
        if path not in mine and not covered(path, missing_ok):
            problems.append(f"did not send {path} ({kind})")
    return problems


# -- exchanges -------------------------------------------------------------------------------------
@dataclass
class Exchange:
    """One expected request and the response it gets."""

    method: str
    path: str
    source: str
    #: the api-version azure-ai-ml 1.35.2 sends (None: the request carries none)
    api_version: Optional[str] = None
    host: str = MANAGEMENT_HOST
    #: other query parameters the request must carry, exactly
    query: Mapping[str, str] = field(default_factory=dict)
    #: the request body it must have the shape of (None: no body is expected)
    body: Any = None
    extra_ok: tuple[str, ...] = ()
    missing_ok: tuple[str, ...] = ()
    free_form: tuple[str, ...] = ()
    #: a further check of the request; returns a problem or None
    check: Optional[Callable[[Any, Any], Optional[str]]] = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    response: Any = None
    #: raw response bytes (a blob, a file), instead of JSON ``response``
    content: Optional[bytes] = None
    #: makes the response from (``response``, the JSON body sent) -- for a service that echoes
    #: the definition it was given (the source says which fields)
    adapt: Optional[Callable[[Any, Any], Any]] = None
    #: answer with the Content-MD5 the request carried, as Blob storage does for what it stored
    echo_md5: bool = False

    def describe(self) -> str:
        version = f"?api-version={self.api_version}" if self.api_version else ""
        return f"{self.method} https://{self.host}{self.path}{version}  [{self.source}]"


def recorded(entries: list[dict[str, Any]], index: int, file: str, *, names: Mapping[str, str],
             api_version: Optional[str], response_changes: Mapping[str, Any] = (),  # type: ignore[assignment]
             **options: Any) -> Exchange:
    """The exchange of a recorded entry, for the test's names, expecting ``api_version`` (what
    azure-ai-ml 1.35.2 sends, which may be newer than the recording's)."""
    entry = entries[index]
    url = urlparse(renamed(entry["RequestUri"], names))
    body = entry.get("RequestBody")
    if isinstance(body, str) and body:
        try:
            body = json.loads(body)
        except ValueError:
            body = None  # a blob's bytes (base64 in the recording): checked by the exchange's own check
    storage = not (urlparse(entry["RequestUri"]).hostname or "").endswith("azure.com")
    headers = {k: v for k, v in entry.get("ResponseHeaders", {}).items()
               if k.lower() in ("azure-asyncoperation", "location", "content-type", "x-ms-async-operation-timeout")
               or (storage and (k.lower().startswith("x-ms-") or k.lower() in STORAGE_HEADERS))}
    response = entry.get("ResponseBody")
    if response is not None and not isinstance(response, (dict, list)):
        response = None if response == "" else response
    response = renamed(response, names) if response is not None else None
    if response is not None and response_changes:
        response = patched(response, dict(response_changes))
    host = url.hostname or MANAGEMENT_HOST
    host = MANAGEMENT_HOST if host.endswith("azure.com") else host
    options.setdefault("body", renamed(body, names) if body else None)
    options.setdefault("echo_md5", storage and entry["RequestMethod"] == "PUT" and any(
        k.lower() == "content-md5" for k in entry.get("ResponseHeaders", {})))
    return Exchange(method=entry["RequestMethod"], path=url.path, host=host, api_version=api_version,
                    source=f"recording:{file}#{index}", status=int(entry["StatusCode"]),
                    headers={k: _management(renamed(v, names)) for k, v in headers.items()},
                    response=response, **options)


def _management(value: str) -> str:
    return re.sub(r"https://[A-Za-z.]*azure\.com", "https://" + MANAGEMENT_HOST, value)


# -- the transport ---------------------------------------------------------------------------------
class _ReplayAdapter(requests.adapters.BaseAdapter):
    """Where azure-core's RequestsTransport would open a connection, the replay answers."""

    def __init__(self, transport: "ReplayTransport") -> None:
        super().__init__()
        self._transport = transport

    def send(self, request: requests.PreparedRequest, stream: bool = False, timeout: Any = None,
             verify: Any = True, cert: Any = None, proxies: Any = None) -> requests.Response:
        # what requests would have connected through: the caller's proxy settings reach this far
        self._transport.proxies.append(dict(proxies or {}))
        return self._transport._serve(request)

    def close(self) -> None:
        pass


class ReplayTransport(RequestsTransport):
    """azure-core's own RequestsTransport, whose connections are the replay: every client that
    takes ``transport=`` sends through it unchanged. See the module docstring."""

    def __init__(self, exchanges: Iterable[Exchange] = ()) -> None:
        session = requests.Session()
        session.mount("https://", _ReplayAdapter(self))
        session.mount("http://", _ReplayAdapter(self))
        super().__init__(session=session, session_owner=False)
        self.expected: list[Exchange] = list(exchanges)
        self.served: list[Exchange] = []
        self.requests: list[str] = []
        self.mismatches: list[str] = []
        self.sleeps: list[float] = []
        #: the proxies each request was sent with (what requests would have connected through)
        self.proxies: list[dict[str, str]] = []

    def add(self, *exchanges: Exchange) -> "ReplayTransport":
        self.expected.extend(exchanges)
        return self

    # azure-core sleeps through the transport (LRO polling, retries): no real waiting here
    def sleep(self, duration: float) -> None:
        self.sleeps.append(duration)

    def close(self) -> None:
        pass  # shared by every client of a target: the test owns it

    def __exit__(self, *args: Any) -> None:
        pass

    def _serve(self, request: requests.PreparedRequest) -> requests.Response:
        url = urlparse(request.url or "")
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        line = f"{request.method} {url.hostname}{url.path}" + (f"?api-version={query['api-version']}"
                                                             if "api-version" in query else "")
        self.requests.append(line)
        if len(self.served) >= len(self.expected):
            self._refuse(line, [f"no more requests were expected (after {len(self.served)})"])
        exchange = self.expected[len(self.served)]
        body = _json_body(request.body)
        problems = self._compare(request, url, query, body, exchange)
        if problems:
            self._refuse(line, [f"expected {exchange.describe()}"] + problems)
        self.served.append(exchange)
        if exchange.adapt is not None:
            exchange = copy.copy(exchange)
            exchange.response = exchange.adapt(copy.deepcopy(exchange.response), body)
        if exchange.echo_md5:
            exchange = copy.copy(exchange)
            headers = {k: v for k, v in exchange.headers.items() if k.lower() != "content-md5"}
            if request.headers.get("Content-MD5"):
                headers["Content-MD5"] = request.headers["Content-MD5"]
            exchange.headers = headers
        return _response(request, exchange)

    def _compare(self, request: requests.PreparedRequest, url: Any, query: Mapping[str, str], body: Any,
                 exchange: Exchange) -> list[str]:
        problems = []
        if request.method != exchange.method:
            problems.append(f"method {request.method}, expected {exchange.method}")
        if (url.hostname or "") != exchange.host:
            problems.append(f"host {url.hostname}, expected {exchange.host}")
        if not _path_matches(url.path, exchange.path):
            problems.append(f"path {url.path}, expected {exchange.path}")
        if query.get("api-version") != exchange.api_version:
            problems.append(f"api-version {query.get('api-version')}, expected {exchange.api_version}")
        for key, value in exchange.query.items():
            if query.get(key) != value:
                problems.append(f"query {key}={query.get(key)!r}, expected {value!r}")
        if exchange.body is None:
            if isinstance(body, (dict, list)) and body and exchange.method in ("PUT", "PATCH", "POST"):
                problems.append("sent a JSON body where none was expected")
        elif not isinstance(body, (dict, list)):
            problems.append("sent no JSON body")
        else:
            problems += shape_differences(body, exchange.body, extra_ok=exchange.extra_ok,
                                          missing_ok=exchange.missing_ok, free_form=exchange.free_form)
        if exchange.check is not None and not problems:
            problem = exchange.check(request, body)
            if problem:
                problems.append(problem)
        return problems

    def _refuse(self, line: str, problems: list[str]) -> None:
        message = f"replay refused request #{len(self.requests)} {line}:\n  " + "\n  ".join(problems)
        self.mismatches.append(message)
        raise ReplayMismatch(message)

    # -- checks for the test ------------------------------------------------------------------
    def verify(self) -> None:
        """Fail unless every request matched and every expected exchange was served."""
        assert not self.mismatches, "\n".join(self.mismatches)
        missing = self.expected[len(self.served):]
        assert not missing, "expected requests never sent:\n  " + "\n  ".join(e.describe() for e in missing)

    def mark(self) -> int:
        """How many requests have been sent so far (to assert that a call sent none)."""
        return len(self.requests)


def _response(request: requests.PreparedRequest, exchange: Exchange) -> requests.Response:
    if exchange.content is not None:
        data = exchange.content
        headers = {"Content-Type": "application/octet-stream", **exchange.headers}
    elif exchange.response is not None:
        data = json.dumps(exchange.response).encode("utf-8")
        headers = {"Content-Type": "application/json; charset=utf-8", **exchange.headers}
    else:
        data = b""
        headers = dict(exchange.headers)
    headers.setdefault("Content-Length", str(len(data)))  # a HEAD says how long the body it omits is
    response = requests.Response()
    response.status_code = exchange.status
    response.headers = CaseInsensitiveDict(headers)
    response.url = request.url or ""
    response.request = request
    response.raw = HTTPResponse(body=io.BytesIO(data), headers=headers, status=exchange.status,
                                preload_content=False, request_method=request.method)
    response.reason = "OK" if exchange.status < 400 else "Error"
    return response


#: in an expected path, a segment the test cannot know in advance (a content hash)
ANY_SEGMENT = "{any}"


def _path_matches(sent: str, expected: str) -> bool:
    pattern = "/".join("[^/]+" if part == ANY_SEGMENT else re.escape(part)
                       for part in expected.rstrip("/").split("/"))
    return re.fullmatch(pattern, sent.rstrip("/"), re.IGNORECASE) is not None


def _json_body(data: Any) -> Any:
    if data is None or data == b"" or data == "":
        return None
    if isinstance(data, (bytes, bytearray)):
        try:
            return json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return b"<binary>"
    if isinstance(data, str):
        try:
            return json.loads(data)
        except ValueError:
            return b"<text>"
    if isinstance(data, (dict, list)):
        return data
    return b"<stream>"
