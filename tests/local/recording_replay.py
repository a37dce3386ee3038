"""Replaying a recording of the real service against the local service, interaction by interaction.

A recording (``shared/reference/recordings/*.json``) is a list of interactions: method, uri,
request_body, status, response_headers, response_body. :class:`RecordingReplay` sends each request
to a fresh local service -- the same method, path, query and body; only the host differs -- and
judges the answer against the recorded one. It knows nothing of any particular recording, so a
recording it has never seen replays the same way.

What is adapted, and why:

- **Hosts.** ``management.azure.com`` becomes the service's endpoint. Data-plane hosts
  (``<account>.file.core.windows.net``, ``<account>.blob.core.windows.net``) become the endpoints the
  account publishes in ``primaryEndpoints``; their requests are made with Microsoft's storage clients,
  which sign them with the account's real key (the recording holds no request headers to re-sign).
- **Secrets.** Recordings replaced account keys by all-zero placeholders. A placeholder in a request
  body is replaced by the real key of the account named next to it; keys learnt from ``listKeys``.
- **Long-running operations.** A poll of a recorded operation URL goes to the URL of our own 202
  answer for the same request.
- **Time.** The recorded client waited where ours may not need to, and the other way round. A job GET
  waits until the job has reached at least the recorded ``executionState``. A cluster GET whose
  recording shows ``steady`` waits until ours is steady with the recorded ``currentNodeCount`` (ours
  may still be steady at the old size just after a resize), and its node counts are then compared by
  value; when the recording shows ``resizing`` ours may already be steady (our nodes come up in
  seconds), and when both are resizing the node counts are compared by value. An operation poll
  may be ``Succeeded`` where the recording still saw ``InProgress``, never the other way round.

An interaction *matches* when the status is the recorded one and the body has the recorded shape:
the same keys recursively (other providers' answers may carry keys the 2018 recording predates), the
same values for enum-like properties and error codes, the same JSON types for the rest. A few keys
the local service leaves out on purpose are listed in :data:`KNOWN_DIFFERENCES` with the reason; an
interaction that differs only by them is reported as such, apart from the matches.
"""
from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, urlsplit

import requests

__all__ = ["RecordingReplay", "Outcome", "shape_problems", "ZERO_KEY", "KNOWN_DIFFERENCES"]

ZERO_KEY = "A" * 86 + "=="

#: properties whose values are an enum, a type string or an error code: compared by value.
ENUM_KEYS = {"type", "provisioningState", "executionState", "toolType", "vmPriority", "fileType", "status",
             "schedulingPriority", "nodeDeallocationOption", "cachingType", "storageAccountType", "unit",
             "allocationState", "code", "keyName", "permissions", "kind", "tier"}
#: node counts of a cluster: compared by value when the allocation states agree (see the docstring).
COUNT_KEYS = {"currentNodeCount", "idleNodeCount", "runningNodeCount", "preparingNodeCount",
              "unusableNodeCount", "leavingNodeCount"}
#: keys a recorded answer has that the local service leaves out on purpose, and why.
KNOWN_DIFFERENCES = {
    "trustedDirectories": "an undocumented storage account property of 2018 (no api-version's specification "
                          "defines it)",
    "queue": "the local service has no queue service, so accounts publish no queue endpoint",
    "table": "the local service has no table service, so accounts publish no table endpoint",
}
_STATE_RANK = {"queued": 0, "running": 1, "terminating": 2, "succeeded": 3, "failed": 3}
_DATA_HOST = re.compile(r"^(?P<account>[a-z0-9]+)\.(?P<service>file|blob)\.core\.windows\.net$")
_JOB = re.compile(r"/jobs/[^/]+$", re.I)
_CLUSTER = re.compile(r"/clusters/[^/]+$", re.I)
WAIT_S = 120.0


def shape_problems(recorded: Any, ours: Any, path: str = "$", *, allow_extra: bool = False,
                   compare_counts: bool = False, timing_ok: bool = False) -> list[str]:
    """Where ``ours`` differs in shape from ``recorded`` (empty when they match)."""
    if isinstance(recorded, dict):
        if not isinstance(ours, dict):
            return [f"{path}: expected an object, got {type(ours).__name__}"]
        out = []
        missing = set(recorded) - set(ours)
        known = sorted(missing & set(KNOWN_DIFFERENCES))
        if known:
            out.append(f"{KNOWN}{path}: leaves out {known}")
            missing -= set(known)
        extra = set(ours) - set(recorded)
        if missing or (extra and not allow_extra):
            out.append(f"{path}: keys differ: missing {sorted(missing)}, extra {sorted(extra)}")
        for key in sorted(set(recorded) & set(ours)):
            by_value = key in ENUM_KEYS or (compare_counts and key in COUNT_KEYS)
            if by_value and not (timing_ok and key in ("allocationState", "executionState")):
                if recorded[key] != ours[key] and not (isinstance(recorded[key], (dict, list))):
                    out.append(f"{path}.{key}: {ours[key]!r} where the recording has {recorded[key]!r}")
                    continue
            out += shape_problems(recorded[key], ours[key], f"{path}.{key}", allow_extra=allow_extra,
                                  compare_counts=compare_counts, timing_ok=timing_ok)
        return out
    if isinstance(recorded, list):
        if not isinstance(ours, list):
            return [f"{path}: expected an array, got {type(ours).__name__}"]
        if bool(recorded) != bool(ours):
            return [f"{path}: {len(ours)} items where the recording has {len(recorded)}"]
        out = []
        for i, item in enumerate(ours):
            out += shape_problems(_counterpart(recorded, item), item, f"{path}[{i}]", allow_extra=allow_extra,
                                  compare_counts=compare_counts, timing_ok=timing_ok)
        return out
    if isinstance(recorded, bool) or isinstance(ours, bool):
        same = type(recorded) is type(ours)
    else:
        same = type(recorded) is type(ours) or (isinstance(recorded, (int, float)) and isinstance(ours, (int, float)))
    return [] if same or recorded is None else [
        f"{path}: {type(ours).__name__} where the recording has {type(recorded).__name__}"]


#: marks a problem that is one of the KNOWN_DIFFERENCES.
KNOWN = "(known) "


def _counterpart(recorded: list[Any], item: Any) -> Any:
    """The recorded list item to hold ``item`` to: the one with the same name (or keyName), else the first."""
    if isinstance(item, dict):
        for name_key in ("name", "keyName"):
            if name_key in item:
                for candidate in recorded:
                    if isinstance(candidate, dict) and candidate.get(name_key) == item[name_key]:
                        return candidate
    return recorded[0]


@dataclass
class Outcome:
    """How one recorded interaction was answered."""
    index: int
    method: str
    path: str
    problems: list[str] = field(default_factory=list)

    @property
    def matched(self) -> bool:
        return not self.problems

    @property
    def known_only(self) -> bool:
        """Differs only in keys the local service leaves out on purpose (KNOWN_DIFFERENCES)."""
        return bool(self.problems) and all(p.startswith(KNOWN) for p in self.problems)

    def __str__(self) -> str:
        return f"#{self.index} {self.method} {self.path}: " + ("ok" if self.matched else "; ".join(self.problems))


class RecordingReplay:
    """Replays ``interactions`` against ``service`` (a started LocalService) over ``arm`` (a RawArm)."""

    def __init__(self, service: Any, arm: Any, interactions: list[dict[str, Any]]) -> None:
        self.service = service
        self.arm = arm
        self.interactions = interactions
        self.op_urls: dict[str, str] = {}          # recorded operation URL path (lower) -> ours
        self.keys: dict[str, str] = {}             # account name -> our key1
        self.recorded_jobs: dict[tuple[str, str], dict[str, Any]] = {}
        for x in interactions:
            body = x.get("response_body")
            if x["method"] == "GET" and _JOB.search(urlsplit(x["uri"]).path) and isinstance(body, dict) \
                    and "properties" in body:
                self.recorded_jobs.setdefault((body["name"], body["properties"]["executionState"]), body)

    def run(self) -> list[Outcome]:
        return [self._one(i, x) for i, x in enumerate(self.interactions)]

    # -- one interaction --------------------------------------------------------------------------
    def _one(self, index: int, x: dict[str, Any]) -> Outcome:
        parts = urlsplit(x["uri"])
        outcome = Outcome(index, x["method"], parts.path)
        try:
            host = _DATA_HOST.match(parts.hostname or "")
            if host:
                outcome.problems += self._data_plane(x, host["account"], host["service"])
            elif parts.hostname == "management.azure.com":
                outcome.problems += self._arm(x)
            else:
                outcome.problems.append(f"host {parts.hostname} is not one the local service stands in for")
        except Exception as exc:  # a failure is a mismatch to report, not the end of the replay
            outcome.problems.append(f"{type(exc).__name__}: {exc}"[:400])
        return outcome

    def _arm(self, x: dict[str, Any]) -> list[str]:
        parts = urlsplit(x["uri"])
        recorded_body = x.get("response_body")
        if parts.path.lower() in self.op_urls:
            return self._poll(x)
        url = self.service.endpoint + parts.path + (f"?{parts.query}" if parts.query else "")
        body = self._with_keys(x.get("request_body"))

        def send() -> requests.Response:
            return self.arm.request(x["method"], url, api_version=None, json=body)

        answer = send()
        is_job = x["method"] == "GET" and x["status"] == 200 and _JOB.search(parts.path) is not None
        is_cluster = x["method"] == "GET" and x["status"] == 200 and _CLUSTER.search(parts.path) is not None
        if is_job and isinstance(recorded_body, dict):
            wanted = _STATE_RANK[recorded_body["properties"]["executionState"]]
            answer = _wait(send, lambda r: r.status_code != 200
                           or _STATE_RANK[r.json()["properties"]["executionState"]] >= wanted)
        elif is_cluster and isinstance(recorded_body, dict) \
                and recorded_body["properties"].get("allocationState") == "steady":
            # Right after a resize ours may still be steady at the old size (the scheduler has not
            # taken the new size up yet): wait for the recorded size too, or the wait's end.
            recorded_count = recorded_body["properties"].get("currentNodeCount")
            answer = _wait(send, lambda r: r.status_code != 200
                           or (r.json()["properties"].get("allocationState") == "steady"
                               and r.json()["properties"].get("currentNodeCount") == recorded_count))
        problems = []
        if answer.status_code != x["status"]:
            problems.append(f"status {answer.status_code} where the recording has {x['status']}: {answer.text[:300]}")
        for header in ("azure-asyncoperation", "location"):
            if header in x["response_headers"] and answer.status_code in (201, 202) and header in answer.headers:
                self.op_urls[urlsplit(x["response_headers"][header]).path.lower()] = answer.headers[header]
        if parts.path.lower().endswith("/listkeys") and answer.status_code == 200:
            account = parts.path.split("/")[-2]
            self.keys[account.lower()] = next(k["value"] for k in answer.json()["keys"] if k["keyName"] == "key1")
        if problems or not isinstance(recorded_body, (dict, list)):
            return problems
        ours = answer.json()
        expected = recorded_body
        compare_counts = False
        timing_ok = False
        if is_job:
            timing_ok = True
            expected = self.recorded_jobs.get((ours.get("name"), ours["properties"]["executionState"]), recorded_body)
        if is_cluster or (x["method"] == "PATCH" and _CLUSTER.search(parts.path)):
            recorded_state = recorded_body["properties"].get("allocationState")
            our_state = ours.get("properties", {}).get("allocationState")
            compare_counts = recorded_state == our_state
            timing_ok = recorded_state == "resizing"
        problems += shape_problems(expected, ours, allow_extra="/microsoft.batchai/" not in parts.path.lower(),
                                   compare_counts=compare_counts, timing_ok=timing_ok)
        if parts.path.lower().endswith("/listoutputfiles"):
            problems += _output_file_problems(recorded_body, ours)
        return problems

    def _poll(self, x: dict[str, Any]) -> list[str]:
        url = self.op_urls[urlsplit(x["uri"]).path.lower()]
        recorded = x.get("response_body")
        recorded_status = recorded.get("status") if isinstance(recorded, dict) else None

        def send() -> requests.Response:
            return self.arm.request("GET", url, api_version=None)
        answer = _wait(send, lambda r: recorded_status in (None, "InProgress") or r.status_code != 200
                       or r.json().get("status") != "InProgress")
        if recorded_status is None:  # a Location poll of Resources or Storage: the status says it all
            if answer.status_code == x["status"]:
                return []
            answer = _wait(send, lambda r: r.status_code == x["status"])
            return [] if answer.status_code == x["status"] else [
                f"status {answer.status_code} where the recording has {x['status']}"]
        if answer.status_code != x["status"]:
            return [f"status {answer.status_code} where the recording has {x['status']}"]
        ours = answer.json()
        expected = recorded
        if ours.get("status") != recorded_status:
            if not (recorded_status == "InProgress" and ours.get("status") == "Succeeded"):
                return [f"operation {ours.get('status')!r} where the recording has {recorded_status!r}"]
            expected = next((i["response_body"] for i in self.interactions
                             if urlsplit(i["uri"]).path == urlsplit(x["uri"]).path
                             and isinstance(i.get("response_body"), dict)
                             and i["response_body"].get("status") == "Succeeded"), None)
            if expected is None:  # the recording never saw it finish: hold the common keys to it
                expected = {k: v for k, v in recorded.items() if k in ours}
                expected["status"] = "Succeeded"
                return [p for p in shape_problems(expected, ours, allow_extra=True)]
        return shape_problems(expected, ours)

    def _data_plane(self, x: dict[str, Any], account: str, service: str) -> list[str]:
        from azure.core.exceptions import HttpResponseError
        parts = urlsplit(x["uri"])
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        segments = [s for s in parts.path.split("/") if s]
        key = self.keys.get(account.lower())
        if key is None:
            return [f"no key is known for the account {account} (no listKeys was recorded before this request)"]
        action = self._data_plane_action(x["method"], service, query, segments, account, key)
        if action is None:
            return [f"this replay does not know the {service} operation {x['method']} {parts.path}?{parts.query}"]
        try:
            action()
            status = {"PUT": 201, "DELETE": 202, "GET": 200, "HEAD": 200}[x["method"]]
        except HttpResponseError as exc:
            status = exc.status_code or 0
        return [] if status == x["status"] else [f"status {status} where the recording has {x['status']}"]

    def _data_plane_action(self, method: str, service: str, query: dict[str, str], segments: list[str],
                           account: str, key: str) -> Optional[Callable[[], Any]]:
        endpoint = self._endpoint(account, service)
        if endpoint is None:
            return lambda: _raise_missing_endpoint(account, service)
        verify = str(self.service.info.ca_cert)
        if service == "file":
            from azure.storage.fileshare import ShareServiceClient
            client = ShareServiceClient(endpoint, credential=key, connection_verify=verify)
            if query.get("restype") == "share" and len(segments) == 1:
                share = client.get_share_client(segments[0])
                return {"PUT": share.create_share, "DELETE": share.delete_share}.get(method)
            if query.get("restype") == "directory" and len(segments) >= 2:
                directory = client.get_share_client(segments[0]).get_directory_client("/".join(segments[1:]))
                return {"PUT": directory.create_directory, "DELETE": directory.delete_directory}.get(method)
            return None
        from azure.storage.blob import BlobServiceClient
        blobs = BlobServiceClient(endpoint, credential={"account_name": account, "account_key": key},
                                  connection_verify=verify)
        if query.get("restype") == "container" and len(segments) == 1:
            container = blobs.get_container_client(segments[0])
            return {"PUT": container.create_container, "DELETE": container.delete_container}.get(method)
        return None

    def _endpoint(self, account: str, service: str) -> Optional[str]:
        answer = self.arm.request("GET", f"{self.service.endpoint}/subscriptions/{_subscription(self.interactions)}"
                                  f"/providers/Microsoft.Storage/storageAccounts", api_version="2018-07-01")
        for found in answer.json().get("value", []) if answer.status_code == 200 else []:
            if found["name"].lower() == account.lower():
                return found.get("properties", {}).get("primaryEndpoints", {}).get(service)
        return None

    def _with_keys(self, body: Any) -> Any:
        """``body`` with each key placeholder replaced by the real key of the account named beside it."""
        if body is None:
            return None
        body = copy.deepcopy(body)

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                account = node.get("accountName")
                credentials = node.get("credentials")
                if isinstance(account, str) and isinstance(credentials, dict) \
                        and credentials.get("accountKey") == ZERO_KEY and account.lower() in self.keys:
                    credentials["accountKey"] = self.keys[account.lower()]
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)
        walk(body)
        return body


def _raise_missing_endpoint(account: str, service: str) -> None:
    raise RuntimeError(f"the account {account} publishes no {service} endpoint")


def _subscription(interactions: list[dict[str, Any]]) -> str:
    for x in interactions:
        match = re.search(r"/subscriptions/([0-9a-f-]{36})", x["uri"])
        if match:
            return match.group(1)
    raise LookupError("no subscription in the recording")


def _output_file_problems(recorded: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Recorded files must be listed too, and those whose content the job decides (not the logs) at
    the recorded size."""
    problems = []
    sizes = {f["name"]: f.get("properties", {}).get("contentLength") for f in ours.get("value", [])}
    for item in recorded.get("value", []):
        name = item["name"]
        if name not in sizes:
            problems.append(f"{name} is not listed")
        elif item.get("fileType") == "file" and name not in ("execution.log", "stderr.txt") \
                and sizes[name] != item.get("properties", {}).get("contentLength"):
            problems.append(f"{name} has {sizes[name]} bytes where the recording has "
                            f"{item['properties']['contentLength']}")
    return problems


def _wait(send: Callable[[], requests.Response], done: Callable[[requests.Response], bool],
          timeout: float = WAIT_S) -> requests.Response:
    deadline = time.monotonic() + timeout
    while True:
        answer = send()
        if done(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def load(path: Any) -> list[dict[str, Any]]:
    return json.loads(open(path, encoding="utf-8").read())
