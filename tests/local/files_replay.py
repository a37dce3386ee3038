"""Replaying Azure Files traffic recorded by Microsoft's own tests against the local Files plane.

A recording (``tests/local/files/recordings/*.json``, the test proxy's format: ``Entries`` of
RequestUri, RequestMethod, RequestHeaders, RequestBody, StatusCode, ResponseHeaders, ResponseBody)
is replayed request by request: the same method, path (percent-encoding as recorded), query,
``x-ms-*`` and content headers and body, sent through Microsoft's own pipeline
(``ShareServiceClient``'s), which dates and signs it with the local account's key, as it signed the
original. Only the host differs, and the share's name, so that one service can replay a recording
more than once.

An answer *matches* the recorded one when:

- the status is the same;
- it carries the same headers, no fewer and no more, apart from those of the transport and of
  every answer (:data:`TRANSPORT`);
- headers that say something fixed (error code, attributes, content settings, sizes, ranges, MD5s,
  metadata) have the recorded values (:data:`BY_VALUE`); the others (times, ETags, ids) only exist;
- its body says the same: an error's code; Get Ranges' ranges; a listing's entries (kind, name,
  and whether the name is percent-encoded) and the encoding of its directory path and prefix; the
  bytes of a download.
"""
from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Optional

from azure.core.rest import HttpRequest
from azure.storage.fileshare import ShareServiceClient

__all__ = ["load", "replay", "RECORDINGS", "TRANSPORT", "BY_VALUE"]

RECORDINGS = Path(__file__).parent / "files" / "recordings"
_RECORDED_HOST = "https://Sanitized.file.core.windows.net/"
#: request headers the pipeline makes afresh for every request (the date, the signature, the length).
_REMADE = {"accept", "accept-encoding", "connection", "user-agent", "x-ms-date", "authorization", "content-length"}
#: answer headers of the transport, or on every answer with a per-request value: not compared.
TRANSPORT = {"date", "server", "transfer-encoding", "connection", "keep-alive", "x-ms-request-id",
             "x-ms-client-request-id", "x-ms-version", "content-length"}
#: answer headers compared by value.
BY_VALUE = {"x-ms-error-code", "x-ms-file-attributes", "content-type", "content-md5", "content-range",
            "x-ms-content-length", "content-language", "content-disposition", "content-encoding",
            "cache-control", "x-ms-type", "x-ms-server-encrypted", "x-ms-request-server-encrypted",
            "x-ms-lease-state", "x-ms-lease-status", "accept-ranges"}


def load(name: str) -> list[dict[str, Any]]:
    return json.loads((RECORDINGS / name).read_text(encoding="utf-8"))["Entries"]


def _body(entry: dict[str, Any]) -> Optional[bytes]:
    body = entry["RequestBody"]
    if body is None:
        return None
    if entry["RequestHeaders"].get("Content-Type") == "application/octet-stream":
        return base64.b64decode(body)  # the test proxy keeps binary bodies in base64
    return body.encode("utf-8")


def _response_text(entry: dict[str, Any]) -> Optional[str]:
    body = entry["ResponseBody"]
    if isinstance(body, list):
        body = "".join(body)
    return body


def _xml(text: str) -> ET.Element:
    return ET.fromstring(text.lstrip("\ufeff").encode("utf-8"))


def _body_problems(recorded: str, ours: bytes) -> list[str]:
    if not recorded.lstrip("\ufeff").startswith("<?xml"):  # a download: the bytes themselves
        expected = recorded.encode("latin-1")
        return [] if ours == expected else [f"body: {ours[:40]!r}... where Azure sent {expected[:40]!r}..."]
    try:
        mine = _xml(ours.decode("utf-8"))
    except (ET.ParseError, UnicodeDecodeError) as exc:
        return [f"body is not XML ({exc}): {ours[:200]!r}"]
    theirs = _xml(recorded)
    if theirs.tag != mine.tag:
        return [f"body: <{mine.tag}> where Azure sent <{theirs.tag}>"]
    if theirs.tag == "Error":
        return [] if theirs.findtext("Code") == mine.findtext("Code") else [
            f"error code {mine.findtext('Code')} where Azure sent {theirs.findtext('Code')}"]
    if theirs.tag == "Ranges":
        spans = [[(r.findtext("Start"), r.findtext("End")) for r in x.iter("Range")] for x in (theirs, mine)]
        return [] if spans[0] == spans[1] else [f"ranges {spans[1]} where Azure sent {spans[0]}"]
    if theirs.tag == "EnumerationResults":
        problems = []
        for attr in ("Encoded", "DirectoryPath"):
            if theirs.get(attr) != mine.get(attr):
                problems.append(f"EnumerationResults {attr}={mine.get(attr)!r} where Azure sent {theirs.get(attr)!r}")
        for tag in ("Prefix",):
            t, m = theirs.find(tag), mine.find(tag)
            if t is not None and (m is None or (t.text, t.get("Encoded")) != (m.text, m.get("Encoded"))):
                problems.append(f"{tag} {None if m is None else (m.text, m.get('Encoded'))} where Azure sent "
                                f"{(t.text, t.get('Encoded'))}")
        entries = [sorted((e.tag, e.findtext("Name"), e.find("Name").get("Encoded"))  # type: ignore[union-attr]
                          for e in x.iter() if e.tag in ("File", "Directory")) for x in (theirs, mine)]
        if entries[0] != entries[1]:
            problems.append(f"entries {entries[1]} where Azure sent {entries[0]}")
        return problems
    return [f"no comparison written for <{theirs.tag}> bodies"]


def replay(client: ShareServiceClient, account: str, entries: list[dict[str, Any]], *, share: str,
           change: Optional[dict[int, dict[str, str]]] = None) -> list[str]:
    """Replay ``entries`` through ``client`` (a ShareServiceClient of ``account``), the recorded
    share renamed ``share``; ``change`` replaces request headers of entry i. Returns what differs
    from Azure's answers, each line naming the request."""
    recorded_share = entries[0]["RequestUri"].removeprefix(_RECORDED_HOST).split("?")[0].split("/")[0]
    base = client.url.rstrip("/")
    problems: list[str] = []
    for i, entry in enumerate(entries):
        rest = entry["RequestUri"].removeprefix(_RECORDED_HOST)
        assert rest.startswith(recorded_share)
        url = f"{base}/{share}{rest[len(recorded_share):]}"
        headers = {k: v for k, v in entry["RequestHeaders"].items() if k.lower() not in _REMADE}
        headers.update((change or {}).get(i, {}))
        request = HttpRequest(entry["RequestMethod"], url, headers=headers, content=_body(entry))
        response = client._client.send_request(request, stream=True)  # the body as sent, undecoded
        response.read()
        label = f"#{i} {entry['RequestMethod']} {rest.replace(recorded_share, '<share>', 1)}"
        if response.status_code != entry["StatusCode"]:
            problems.append(f"{label}: {response.status_code} where Azure answered {entry['StatusCode']} "
                            f"({response.headers.get('x-ms-error-code')})")
            continue
        theirs = {k.lower(): v for k, v in entry["ResponseHeaders"].items() if k.lower() not in TRANSPORT}
        mine = {k.lower(): v for k, v in response.headers.items() if k.lower() not in TRANSPORT}
        missing, extra = sorted(set(theirs) - set(mine)), sorted(set(mine) - set(theirs))
        if missing or extra:
            problems.append(f"{label}: headers missing {missing}, extra {extra}")
        for name in sorted(set(theirs) & set(mine)):
            if (name in BY_VALUE or name.startswith("x-ms-meta-")) and theirs[name] != mine[name]:
                problems.append(f"{label}: {name} {mine[name]!r} where Azure sent {theirs[name]!r}")
        if entry["RequestMethod"] == "HEAD":
            length = entry["ResponseHeaders"].get("Content-Length")
            if length is not None and response.headers.get("Content-Length") != length:
                problems.append(f"{label}: Content-Length {response.headers.get('Content-Length')} "
                                f"where Azure sent {length}")
        recorded_body = _response_text(entry)
        if recorded_body:
            problems += [f"{label}: {p}" for p in _body_problems(recorded_body, response.content)]
    return problems
