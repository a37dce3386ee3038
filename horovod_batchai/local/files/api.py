"""The Azure Files data plane of the local service: path-style URLs, operations as data, thin handlers.

URLs are ``{endpoint}/{account}[/{share}[/{directory or file path}]]``, the form the Azure SDK uses
for a loopback host. The path is taken as the client sent it (percent-encoding intact), because
Shared Key signs it that way, and is decoded before it is split, as Azure does: ``%2F`` separates
segments and ``%2e%2e`` is checked as the ``..`` it spells. Names are validated before anything is
touched. ``restype`` and ``comp`` in the query, with the method, select the operation from
:data:`OPERATIONS`. Every request is authenticated (see ``files_auth``), then authorized for what
the operation needs, then handed to ``files_store``; errors are :class:`StorageError`, which the
application turns into the storage XML error.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Optional
from urllib.parse import quote, unquote, urlsplit, urlunsplit
from xml.sax.saxutils import escape, quoteattr

from werkzeug.exceptions import ClientDisconnected
from werkzeug.wrappers import Response

from ..storage.accounts import (ROOT_SQUASH, SHARE_ACCESS_TIERS, SHARE_PROTOCOLS, account_keys, find_account,
                                nfs_shares_allowed, share_tiers_for)
from .copy import CopySource, FileCopies
from .errors import StorageError
from .auth import SAS_PARAMS, Grant, SignedRequest, authenticate, authorize
from .store import (MAX_FILE_SIZE, MAX_QUOTA_GIB, MAX_RANGE_BYTES, STALE_UPLOAD_RE, ContentSettings,
                          EntryInfo, FileBody, FileShares, ShareInfo, content_md5, note_upload_activity, shares_for,
                          validate_account_name, validate_metadata, validate_parts, validate_share_name)
from ..core.http_server import RAW_HEADERS_KEY, SOCKET_KEY
from ..core.routing import Call

__all__ = ["handle", "OPERATIONS", "FilesOperation", "RAW_HEADERS_KEY", "BODY_TIMEOUT_S"]

#: the x-ms-version answered when a request names none.
DEFAULT_VERSION = "2025-11-05"
#: seconds a request body may stall before the request is refused (a client that declares more
#: than it sends must not hold a server thread forever).
BODY_TIMEOUT_S = 60.0
_MAX_LIST_RESULTS = 5000
#: headers of an answer after which the connection must not carry another request (its body broke off).
_CLOSE = {"Connection": "close"}
_RANGE_RE = re.compile(r"^bytes=(\d+)-(\d*)$")
_VIRTUAL_HOST_RE = re.compile(r"^[a-z0-9]{3,24}\.file\.core\.windows\.net(:\d+)?$", re.IGNORECASE)


@dataclass(frozen=True)
class RequestTarget:
    """What the URL path names."""

    account: str
    share: Optional[str] = None
    parts: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return "/".join(self.parts)


@dataclass
class Ctx:
    """One data-plane request as handlers see it."""

    call: Call
    target: RequestTarget
    query: dict[str, str]
    signed: SignedRequest
    grant: Grant
    shares: FileShares

    @property
    def account(self) -> str:
        return self.target.account

    @property
    def share(self) -> str:
        return self.target.share or ""

    @property
    def parts(self) -> tuple[str, ...]:
        return self.target.parts

    def header(self, name: str) -> Optional[str]:
        return self.signed.header(name.lower())

    def metadata(self) -> dict[str, str]:
        """x-ms-meta-<name> headers, names cased as the caller sent them."""
        found: dict[str, str] = {}
        for name, value in self.signed.headers:
            if name.lower().startswith("x-ms-meta-"):
                found[name[len("x-ms-meta-"):]] = value
        return found


@dataclass(frozen=True)
class FilesOperation:
    level: str            # service | share | directory | file
    method: str           # GET | PUT | DELETE | HEAD
    comp: str             # the comp query value ('' for none)
    handler: Callable[[Ctx], Response]
    #: SAS permission letters, any one of which allows the operation (share/service levels take none).
    needs: str = ""


# -- parsing ------------------------------------------------------------------------------------

def _raw_uri(call: Call) -> tuple[str, str]:
    environ = call.request.environ
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if not raw:
        from urllib.parse import quote
        raw = quote(environ.get("PATH_INFO", "/")) + ("?" + environ["QUERY_STRING"] if environ.get("QUERY_STRING") else "")
    if "://" in raw.split("?", 1)[0]:  # absolute-form request target
        split = urlsplit(raw)
        return split.path or "/", split.query
    path, _, query = raw.partition("?")
    return path, query


def parse_target(raw_path: str) -> RequestTarget:
    """Account, share and path segments of a URL path as sent.

    Azure decodes the path before splitting it, so ``%2F`` separates segments like ``/`` does (the
    SDK's directory client sends ``dir%2Fsub``); decoding first also means ``%2e%2e`` is checked as
    the ``..`` it is.
    """
    if not raw_path.startswith("/"):
        raise StorageError(400, "InvalidUri", "The request URI is not valid: expected /<account>/<share>/<path>.")
    try:
        path = unquote(raw_path, errors="strict")
    except UnicodeDecodeError:
        raise StorageError(400, "InvalidUri", "The URL path is not valid percent-encoded UTF-8.") from None
    names = path[1:].split("/")
    if len(names) > 1 and names[-1] == "":
        names.pop()  # one trailing slash is how the SDK addresses an account or a root directory
    if not names or not names[0]:
        raise StorageError(400, "InvalidUri", "The request URI names no storage account: "
                           "expected https://HOST:PORT/<account>/<share>/<path>.")
    account = validate_account_name(names[0])
    if len(names) == 1:
        return RequestTarget(account)
    share = validate_share_name(names[1])
    return RequestTarget(account, share, validate_parts(tuple(names[2:])))


def _parse_query(raw_query: str) -> list[tuple[str, str]]:
    pairs = []
    for item in raw_query.split("&"):
        if not item:
            continue
        name, _, value = item.partition("=")
        try:
            pairs.append((unquote(name, errors="strict"), unquote(value, errors="strict")))
        except UnicodeDecodeError:
            raise StorageError(400, "InvalidQueryParameterValue",
                               "The query string is not valid percent-encoded UTF-8.") from None
    return pairs


def _raw_headers(call: Call) -> list[tuple[str, str]]:
    raw = call.request.environ.get(RAW_HEADERS_KEY)
    if raw is not None:
        return [(str(k), str(v)) for k, v in raw]
    return list(call.request.headers.items())


def _int_param(query: dict[str, str], name: str, *, low: int, high: int, default: int) -> int:
    value = query.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise StorageError(400, "OutOfRangeQueryParameterValue",
                           f"The query parameter '{name}' must be an integer from {low} to {high}.",
                           QueryParameterName=name, QueryParameterValue=value[:40])
    return number


def _int_header(ctx: Ctx, name: str, *, low: int, high: int) -> Optional[int]:
    value = ctx.header(name)
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise StorageError(400, "InvalidHeaderValue",
                           f"The header '{name}' must be an integer from {low} to {high}.",
                           HeaderName=name, HeaderValue=value[:40])
    return number


def _parse_range(value: str, name: str) -> tuple[int, Optional[int]]:
    m = _RANGE_RE.match(value.strip())
    if not m:
        raise StorageError(400, "InvalidHeaderValue",
                           f"The header '{name}' must be 'bytes=<start>-<end>' (e.g. bytes=0-511).",
                           HeaderName=name, HeaderValue=value[:60])
    start, end = int(m.group(1)), (int(m.group(2)) if m.group(2) else None)
    if end is not None and end < start:
        raise StorageError(400, "InvalidHeaderValue", f"The range in '{name}' ends before it starts: use 'bytes=<start>-<end>' "
                           "with start <= end.",
                           HeaderName=name, HeaderValue=value[:60])
    return start, end


def _request_range(ctx: Ctx) -> tuple[Optional[tuple[int, Optional[int]]], str]:
    for name in ("x-ms-range", "range"):
        value = ctx.header(name)
        if value:
            return _parse_range(value, name), name
    return None, ""


# -- responses ----------------------------------------------------------------------------------

def _http_date(timestamp: float) -> str:
    return format_datetime(datetime.fromtimestamp(timestamp, timezone.utc), usegmt=True)


def _smb_time(ns: int) -> str:
    # Azure's form: seven fractional digits, UTC, e.g. 2018-05-01T10:00:00.1234567Z
    seconds, rest = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{rest // 100:07d}Z"


def _parse_smb_time(value: Optional[str], name: str) -> Optional[int]:
    if value is None or value.lower() in ("now", "preserve", ""):
        return None
    m = re.match(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,7}))?Z$", value.strip())
    if not m:
        raise StorageError(400, "InvalidHeaderValue",
                           f"The header '{name}' must be 'now', 'preserve' or an ISO 8601 UTC time "
                           "such as 2018-05-01T10:00:00.0000000Z.", HeaderName=name, HeaderValue=value[:60])
    base = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    fraction = int((m.group(2) or "0").ljust(7, "0"))
    return int(base.timestamp()) * 1_000_000_000 + fraction * 100


# In the order of their Windows attribute bits, the order Azure answers them in.
_FILE_ATTRIBUTES = ("ReadOnly", "Hidden", "System", "None", "Directory", "Archive", "Temporary", "Offline",
                    "NotContentIndexed", "NoScrubData")
_ATTRIBUTE_BY_LOWER = {name.lower(): name for name in _FILE_ATTRIBUTES}


def _printable(value: Optional[str]) -> Optional[str]:
    """``value`` if it can be echoed in a response header (printable ASCII), else None."""
    if value is None or any(not 0x20 <= ord(ch) <= 0x7E and ch != "\t" for ch in value):
        return None
    return value


def _smb_request(ctx: Ctx, source: Optional[EntryInfo] = None) -> dict[str, Any]:
    """The SMB properties a request sets; a copy (``source``) may name ``source`` for any of them."""
    smb: dict[str, Any] = {}
    from_source = {"attributes": source.attributes, "creation": source.creation_time_ns,
                   "last_write": source.last_write_time_ns} if source is not None else {}
    for header, key in (("x-ms-file-attributes", "attributes"), ("x-ms-file-creation-time", "creation"),
                        ("x-ms-file-last-write-time", "last_write")):
        value = ctx.header(header)
        if value is not None and value.strip().lower() == "source" and from_source:
            smb[key] = from_source[key]
        elif key == "attributes":
            if value and value.lower() not in ("preserve", "none"):
                # Azure takes attribute names in any case and answers them in its own.
                names = {_ATTRIBUTE_BY_LOWER.get(a.strip().lower(), "") for a in value.split("|")}
                if "" in names:
                    raise StorageError(400, "InvalidHeaderValue",
                                       "x-ms-file-attributes must be 'preserve', 'None' or attributes joined by '|' "
                                       "from: " + ", ".join(_FILE_ATTRIBUTES) + ".", HeaderName="x-ms-file-attributes")
                smb["attributes"] = "|".join(a for a in _FILE_ATTRIBUTES if a in names)
        else:
            ns = _parse_smb_time(value, header)
            if ns is not None:
                smb[key] = ns
    return smb


def _respond(ctx: Ctx, status: int, headers: Optional[dict[str, str]] = None, body: Any = b"",
             content_type: Optional[str] = None) -> Response:
    base = {"x-ms-request-id": str(uuid.uuid4()),
            "x-ms-version": _printable(ctx.header("x-ms-version")) or DEFAULT_VERSION}
    client_id = _printable(ctx.header("x-ms-client-request-id"))
    if client_id:
        base["x-ms-client-request-id"] = client_id[:1024]
    response = Response(body, status=status, content_type=content_type)
    if content_type is None:
        del response.headers["Content-Type"]
    # After the body: a HEAD answer states the file's length though it carries no bytes.
    for name, value in {**base, **(headers or {})}.items():
        response.headers[name] = value
    return response


def _xml(ctx: Ctx, text: str) -> Response:
    body = ('<?xml version="1.0" encoding="utf-8"?>' + text).encode("utf-8")
    return _respond(ctx, 200, body=body, content_type="application/xml")


def _meta_headers(metadata: dict[str, str]) -> dict[str, str]:
    return {f"x-ms-meta-{k}": v for k, v in metadata.items()}


def _entry_headers(entry: EntryInfo) -> dict[str, str]:
    return {
        "ETag": entry.etag,
        "Last-Modified": _http_date(entry.last_modified),
        "x-ms-file-attributes": " | ".join(entry.attributes.split("|")),  # Azure's form: "ReadOnly | Archive"
        "x-ms-file-creation-time": _smb_time(entry.creation_time_ns),
        "x-ms-file-last-write-time": _smb_time(entry.last_write_time_ns),
        "x-ms-file-change-time": _smb_time(entry.change_time_ns),
        "x-ms-file-permission-key": _permission_key(entry.share),
        "x-ms-file-id": entry.file_id,
        "x-ms-file-parent-id": entry.parent_id,
    }


def _permission_key(share: str) -> str:
    # Every file of a share carries its default security descriptor; its key is stable per share.
    digest = int.from_bytes(hashlib.sha256(share.encode()).digest()[:8], "big")
    return f"{digest % 10**19}*{digest % 10**4}"


def _share_headers(info: ShareInfo) -> dict[str, str]:
    return {"ETag": info.etag, "Last-Modified": _http_date(info.last_modified)}


def _needs_encoding(text: str) -> bool:
    """True if ``text`` holds a character XML cannot carry (U+FFFE, U+FFFF, most control characters)."""
    return any(ord(ch) < 0x20 and ch not in "\t\n\r" or 0xD800 <= ord(ch) <= 0xDFFF or ch in "\ufffe\uffff"
               for ch in text)


def _xml_text(tag: str, text: str) -> str:
    # Text XML cannot carry travels percent-encoded, flagged Encoded="true", as Azure sends it.
    if _needs_encoding(text):
        return f'<{tag} Encoded="true">{escape(quote(text, safe=""))}</{tag}>'
    return f"<{tag}>{escape(text)}</{tag}>"


def _xml_name(name: str) -> str:
    return _xml_text("Name", name)


# -- service ------------------------------------------------------------------------------------

def list_shares(ctx: Ctx) -> Response:
    prefix = ctx.query.get("prefix", "")
    marker = ctx.query.get("marker", "")
    max_results = _int_param(ctx.query, "maxresults", low=1, high=_MAX_LIST_RESULTS, default=_MAX_LIST_RESULTS)
    include = {v.strip().lower() for v in ctx.query.get("include", "").split(",") if v.strip()}
    shares = [s for s in ctx.shares.list_shares(ctx.target.account) if s.name.startswith(prefix) and s.name >= marker]
    page, rest = shares[:max_results], shares[max_results:]
    items = []
    for s in page:
        meta = ""
        if "metadata" in include:
            meta = "<Metadata>" + "".join(f"<{k}>{escape(v)}</{k}>" for k, v in s.metadata.items()) + "</Metadata>"
        changed = (f"<AccessTierChangeTime>{_http_date(s.access_tier_changed)}</AccessTierChangeTime>"
                   if s.access_tier_changed is not None else "")
        squash = f"<RootSquash>{s.root_squash}</RootSquash>" if s.root_squash else ""
        items.append(f"<Share><Name>{escape(s.name)}</Name><Properties>"
                     f"<Last-Modified>{_http_date(s.last_modified)}</Last-Modified><Etag>{escape(s.etag)}</Etag>"
                     f"<Quota>{s.quota_gib}</Quota><AccessTier>{s.access_tier}</AccessTier>{changed}"
                     f"<LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState>"
                     f"<EnabledProtocols>{s.protocols}</EnabledProtocols>{squash}</Properties>{meta}</Share>")
    endpoint = f"{ctx.call.base_url}/{ctx.target.account}/"
    text = (f"<EnumerationResults ServiceEndpoint={quoteattr(endpoint)}>"
            f"<Prefix>{escape(prefix)}</Prefix><Marker>{escape(marker)}</Marker><MaxResults>{max_results}</MaxResults>"
            f"<Shares>{''.join(items)}</Shares><NextMarker>{escape(rest[0].name) if rest else ''}</NextMarker>"
            "</EnumerationResults>")
    return _xml(ctx, text)


# -- shares -------------------------------------------------------------------------------------

def _quota(ctx: Ctx) -> Optional[int]:
    return _int_header(ctx, "x-ms-share-quota", low=1, high=MAX_QUOTA_GIB)


def _account_kind(ctx: Ctx) -> str:
    account = find_account(ctx.call.context.store, ctx.account)
    return str(account.get("kind", "StorageV2")) if account else "StorageV2"


def _choice_header(ctx: Ctx, name: str, allowed: tuple[str, ...]) -> Optional[str]:
    """The header's value as the member of ``allowed`` it names (case-insensitively), None when absent."""
    value = ctx.header(name)
    if value is None:
        return None
    for member in allowed:
        if member.lower() == value.strip().lower():
            return member
    raise StorageError(400, "InvalidHeaderValue", f"The header '{name}' must be one of: {', '.join(allowed)}.",
                       HeaderName=name, HeaderValue=value[:40])


def _share_tier(ctx: Ctx, kind: str) -> Optional[str]:
    tier = _choice_header(ctx, "x-ms-access-tier", SHARE_ACCESS_TIERS)
    if tier is not None and tier not in share_tiers_for(kind):
        raise StorageError(400, "InvalidHeaderValue",
                           f"A share of a {kind} account may have the access tier "
                           f"{' or '.join(share_tiers_for(kind))}, not {tier}.", HeaderName="x-ms-access-tier")
    return tier


def create_share(ctx: Ctx) -> Response:
    kind = _account_kind(ctx)
    tier = _share_tier(ctx, kind) or share_tiers_for(kind)[0]
    protocols = _choice_header(ctx, "x-ms-enabled-protocols", SHARE_PROTOCOLS) or "SMB"
    if protocols == "NFS" and not nfs_shares_allowed(kind):
        raise StorageError(400, "InvalidHeaderValue", f"NFS shares need a premium file account (FileStorage); "
                           f"this one is {kind}.", HeaderName="x-ms-enabled-protocols")
    squash = _choice_header(ctx, "x-ms-root-squash", ROOT_SQUASH)
    if squash is not None and protocols != "NFS":
        raise StorageError(400, "InvalidHeaderValue", "x-ms-root-squash applies to NFS shares only.",
                           HeaderName="x-ms-root-squash")
    info = ctx.shares.create_share(ctx.account, ctx.share, quota_gib=_quota(ctx), metadata=ctx.metadata(),
                                   access_tier=tier, protocols=protocols,
                                   root_squash=squash or ("NoRootSquash" if protocols == "NFS" else None))
    return _respond(ctx, 201, _share_headers(info))


def get_share_properties(ctx: Ctx) -> Response:
    info = ctx.shares.get_share(ctx.account, ctx.share)
    headers = {**_share_headers(info), **_meta_headers(info.metadata), "x-ms-share-quota": str(info.quota_gib),
               "x-ms-access-tier": info.access_tier, "x-ms-enabled-protocols": info.protocols,
               "x-ms-lease-status": "unlocked", "x-ms-lease-state": "available"}
    if info.access_tier_changed is not None:
        headers["x-ms-access-tier-change-time"] = _http_date(info.access_tier_changed)
    if info.root_squash:
        headers["x-ms-root-squash"] = info.root_squash
    return _respond(ctx, 200, headers)


def delete_share(ctx: Ctx) -> Response:
    ctx.shares.delete_share(ctx.account, ctx.share)
    return _respond(ctx, 202)


def set_share_metadata(ctx: Ctx) -> Response:
    info = ctx.shares.set_share_metadata(ctx.account, ctx.share, ctx.metadata())
    return _respond(ctx, 200, _share_headers(info))


def set_share_properties(ctx: Ctx) -> Response:
    quota = _quota(ctx)
    tier = _share_tier(ctx, _account_kind(ctx))
    squash = _choice_header(ctx, "x-ms-root-squash", ROOT_SQUASH)
    if squash is not None and ctx.shares.get_share(ctx.account, ctx.share).protocols != "NFS":
        raise StorageError(400, "InvalidHeaderValue", "x-ms-root-squash applies to NFS shares only.",
                           HeaderName="x-ms-root-squash")
    if quota is None and tier is None and squash is None:
        info = ctx.shares.get_share(ctx.account, ctx.share)
    else:
        info = ctx.shares.update_share(ctx.account, ctx.share, quota_gib=quota, access_tier=tier, root_squash=squash)
    return _respond(ctx, 200, _share_headers(info))


def get_share_stats(ctx: Ctx) -> Response:
    info = ctx.shares.get_share(ctx.account, ctx.share)
    usage = ctx.shares.share_usage_bytes(ctx.account, ctx.share)
    response = _xml(ctx, f"<ShareStats><ShareUsageBytes>{usage}</ShareUsageBytes></ShareStats>")
    response.headers.update(_share_headers(info))
    return response


# -- directories --------------------------------------------------------------------------------

def create_directory(ctx: Ctx) -> Response:
    entry = ctx.shares.create_directory(ctx.account, ctx.share, ctx.parts,
                                        metadata=ctx.metadata(), smb=_smb_request(ctx))
    return _respond(ctx, 201, {**_entry_headers(entry), "x-ms-request-server-encrypted": "true"})


def get_directory_properties(ctx: Ctx) -> Response:
    entry = ctx.shares.get_directory(ctx.account, ctx.share, ctx.parts)
    return _respond(ctx, 200, {**_entry_headers(entry), **_meta_headers(entry.metadata),
                               "x-ms-server-encrypted": "true"})


def delete_directory(ctx: Ctx) -> Response:
    ctx.shares.delete_directory(ctx.account, ctx.share, ctx.parts)
    return _respond(ctx, 202)


def set_directory_metadata(ctx: Ctx) -> Response:
    entry = ctx.shares.set_metadata(ctx.account, ctx.share, ctx.parts,
                                    ctx.metadata(), directory=True)
    return _respond(ctx, 200, {"ETag": entry.etag, "Last-Modified": _http_date(entry.last_modified),
                               "x-ms-request-server-encrypted": "true"})


def set_directory_properties(ctx: Ctx) -> Response:
    entry = ctx.shares.set_properties(ctx.account, ctx.share, ctx.parts,
                                      directory=True, smb=_smb_request(ctx))
    return _respond(ctx, 200, {**_entry_headers(entry), "x-ms-request-server-encrypted": "true"})


def _entry_xml(entry: EntryInfo, extended: bool) -> str:
    tag = "Directory" if entry.is_directory else "File"
    props = "" if entry.is_directory else f"<Content-Length>{entry.size}</Content-Length>"
    extra = ""
    if extended:
        props += (f"<CreationTime>{_smb_time(entry.creation_time_ns)}</CreationTime>"
                  f"<LastAccessTime>{_smb_time(entry.last_write_time_ns)}</LastAccessTime>"
                  f"<LastWriteTime>{_smb_time(entry.last_write_time_ns)}</LastWriteTime>"
                  f"<ChangeTime>{_smb_time(entry.change_time_ns)}</ChangeTime>"
                  f"<Last-Modified>{_http_date(entry.last_modified)}</Last-Modified><Etag>{escape(entry.etag)}</Etag>")
        extra = f"<Attributes>{escape(entry.attributes)}</Attributes>"
    return (f"<{tag}>{_xml_name(entry.name)}" + (f"<FileId>{entry.file_id}</FileId>" if extended else "")
            + f"<Properties>{props}</Properties>{extra}</{tag}>")


def list_directory(ctx: Ctx) -> Response:
    prefix = ctx.query.get("prefix", "")
    marker = ctx.query.get("marker", "")
    max_results = _int_param(ctx.query, "maxresults", low=1, high=_MAX_LIST_RESULTS, default=_MAX_LIST_RESULTS)
    extended = (ctx.header("x-ms-file-extended-info") or "").lower() == "true" or bool(ctx.query.get("include"))
    directory, entries, next_marker = ctx.shares.list_directory(
        ctx.account, ctx.share, ctx.parts, prefix=prefix, marker=marker,
        max_results=max_results)
    endpoint = f"{ctx.call.base_url}/{ctx.target.account}/"
    path = ctx.target.path
    # A directory path XML cannot carry is sent percent-encoded, with Encoded="true" on the root.
    path_attrs = (f' Encoded="true" DirectoryPath={quoteattr(quote(path, safe="/"))}' if _needs_encoding(path)
                  else f" DirectoryPath={quoteattr(path)}")
    text = (f"<EnumerationResults ServiceEndpoint={quoteattr(endpoint)} ShareName={quoteattr(ctx.share)}"
            f"{path_attrs}>"
            f"{_xml_text('Prefix', prefix)}<Marker>{escape(marker)}</Marker><MaxResults>{max_results}</MaxResults>"
            f"<Entries>{''.join(_entry_xml(e, extended) for e in entries)}</Entries>"
            f"<NextMarker>{escape(next_marker)}</NextMarker>"
            + (f"<DirectoryId>{directory.file_id}</DirectoryId>" if extended else "")
            + "</EnumerationResults>")
    return _xml(ctx, text)


# -- files --------------------------------------------------------------------------------------

_CONTENT_HEADERS = (("x-ms-content-type", "content_type"), ("x-ms-content-encoding", "content_encoding"),
                    ("x-ms-content-language", "content_language"), ("x-ms-cache-control", "cache_control"),
                    ("x-ms-content-disposition", "content_disposition"), ("x-ms-content-md5", "content_md5"))


def _content_settings(ctx: Ctx, *, default_type: str) -> Optional[ContentSettings]:
    """The content settings a request sets, or None if it names none. Those it leaves out are
    cleared, the content type to ``default_type``."""
    given = {attr: ctx.header(header) for header, attr in _CONTENT_HEADERS if ctx.header(header) is not None}
    if not given:
        return None
    for header, attr in _CONTENT_HEADERS:
        if attr in given and _printable(given[attr]) is None:
            raise StorageError(400, "InvalidHeaderValue", f"The header '{header}' must be printable ASCII.",
                               HeaderName=header)
    md5 = given.get("content_md5")
    if md5:
        try:
            if len(base64.b64decode(md5, validate=True)) != 16:
                raise ValueError
        except (binascii.Error, ValueError):
            raise StorageError(400, "InvalidHeaderValue", "x-ms-content-md5 must be a base64 MD5 digest.",
                               HeaderName="x-ms-content-md5") from None
    return ContentSettings(**{attr: given.get(attr) or (default_type if attr == "content_type" else "")
                              for _, attr in _CONTENT_HEADERS})


def create_file(ctx: Ctx) -> Response:
    if ctx.header("x-ms-copy-source") is not None:
        return copy_file(ctx)  # Copy File is a PUT on the file's URL too, told apart by this header
    if (ctx.header("x-ms-type") or "").lower() != "file":
        raise StorageError(400, "MissingRequiredHeader", "Creating a file needs the header 'x-ms-type: file'.",
                           HeaderName="x-ms-type")
    size = _int_header(ctx, "x-ms-content-length", low=0, high=MAX_FILE_SIZE)
    if size is None:
        raise StorageError(400, "MissingRequiredHeader",
                           "Creating a file needs 'x-ms-content-length' (the file's size in bytes).",
                           HeaderName="x-ms-content-length")
    _before_write(ctx, must_exist=False)
    entry = ctx.shares.create_file(ctx.account, ctx.share, ctx.parts, size,
                                   content=_content_settings(ctx, default_type=ContentSettings.content_type)
                                   or ContentSettings(), metadata=ctx.metadata(),
                                   smb=_smb_request(ctx))
    return _respond(ctx, 201, {**_entry_headers(entry), "x-ms-request-server-encrypted": "true"})


def _copies(ctx: Ctx) -> FileCopies:
    return ctx.call.context.provider(FileCopies)


def _before_write(ctx: Ctx, *, must_exist: bool = True) -> None:
    """A file a copy is filling takes no other write (409); one whose copy has ended forgets it."""
    try:
        entry = ctx.shares.get_file(ctx.account, ctx.share, ctx.parts)
    except StorageError:
        if must_exist:
            raise
        return
    _copies(ctx).check_writable(entry, ctx.account)
    _copies(ctx).forget(ctx.account, ctx.share, ctx.target.path)


def _copy_headers(ctx: Ctx, entry: EntryInfo) -> dict[str, str]:
    state = _copies(ctx).state(ctx.account, entry.share, entry.path, int(entry.file_id))
    if state is None:
        return {}
    headers = {"x-ms-copy-id": state.copy_id, "x-ms-copy-status": state.status, "x-ms-copy-source": state.source,
               "x-ms-copy-progress": state.progress}
    if state.completed is not None:
        headers["x-ms-copy-completion-time"] = _http_date(state.completed)
    if state.description:
        headers["x-ms-copy-status-description"] = state.description
    return headers


def _file_headers(ctx: Ctx, entry: EntryInfo) -> dict[str, str]:
    headers = {**_entry_headers(entry), **_meta_headers(entry.metadata), "x-ms-type": "File",
               "x-ms-server-encrypted": "true", "Accept-Ranges": "bytes",
               "x-ms-lease-status": "unlocked", "x-ms-lease-state": "available"}
    for header, attr in (("Content-Type", "content_type"), ("Content-Encoding", "content_encoding"),
                         ("Content-Language", "content_language"), ("Cache-Control", "cache_control"),
                         ("Content-Disposition", "content_disposition")):
        value = getattr(entry.content, attr)
        if value:
            headers[header] = value
    headers.update(_copy_headers(ctx, entry))
    headers.update(dict(ctx.grant.overrides))  # a SAS may override these on reads
    return headers


def get_file_properties(ctx: Ctx) -> Response:
    entry = ctx.shares.get_file(ctx.account, ctx.share, ctx.parts)
    headers = _file_headers(ctx, entry)
    del headers["Accept-Ranges"]  # Azure says it on downloads, not on Get File Properties
    headers["Content-Length"] = str(entry.size)
    if entry.content.content_md5:
        headers["Content-MD5"] = entry.content.content_md5
    return _respond(ctx, 200, headers)


def download_file(ctx: Ctx) -> Response:
    entry = ctx.shares.get_file(ctx.account, ctx.share, ctx.parts)
    requested, range_header = _request_range(ctx)
    headers = _file_headers(ctx, entry)
    size = entry.size
    if requested is None:
        start, end, status = 0, size - 1, 200
        if entry.content.content_md5:
            headers["Content-MD5"] = entry.content.content_md5
    else:
        start, end = requested[0], requested[1] if requested[1] is not None else size - 1
        if start >= size:
            raise StorageError(416, "InvalidRange", "The range specified is invalid for the current size of the resource.",
                               headers={"Content-Range": f"bytes */{size}"})
        end, status = min(end, size - 1), 206
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        if entry.content.content_md5:
            headers["x-ms-content-md5"] = entry.content.content_md5
        if (ctx.header("x-ms-range-get-content-md5") or "").lower() == "true":
            if end - start + 1 > MAX_RANGE_BYTES:
                raise StorageError(400, "OutOfRangeInput",
                                   "x-ms-range-get-content-md5 is allowed for ranges of at most 4 MiB.",
                                   HeaderName=range_header)
            headers["Content-MD5"] = content_md5(ctx.shares.read_range(entry, start, end))
    length = max(0, end - start + 1)
    headers["Content-Length"] = str(length)
    # Opened before answering, so a file that vanished is a 404, not a broken body.
    body: Any = FileBody(ctx.shares.open_fd(entry), start, end) if length else b""
    response = _respond(ctx, status, headers, body)
    response.direct_passthrough = True
    return response


def delete_file(ctx: Ctx) -> Response:
    ctx.shares.delete_file(ctx.account, ctx.share, ctx.parts)
    return _respond(ctx, 202)


def set_file_metadata(ctx: Ctx) -> Response:
    entry = ctx.shares.set_metadata(ctx.account, ctx.share, ctx.parts,
                                    ctx.metadata(), directory=False)
    return _respond(ctx, 200, {"ETag": entry.etag, "Last-Modified": _http_date(entry.last_modified),
                               "x-ms-request-server-encrypted": "true"})


def set_file_properties(ctx: Ctx) -> Response:
    size = _int_header(ctx, "x-ms-content-length", low=0, high=MAX_FILE_SIZE)
    _before_write(ctx)
    entry = ctx.shares.set_properties(ctx.account, ctx.share, ctx.parts,
                                      # Set HTTP Headers replaces them all: Azure clears a content type left out
                                      directory=False, size=size, content=_content_settings(ctx, default_type=""),
                                      smb=_smb_request(ctx))
    return _respond(ctx, 200, {**_entry_headers(entry), "x-ms-request-server-encrypted": "true"})


def _bound_reads(call: Call) -> None:
    sock = call.request.environ.get(SOCKET_KEY)
    if sock is not None:
        sock.settimeout(BODY_TIMEOUT_S)


class _RangeBuffers:
    """Buffers of MAX_RANGE_BYTES that Put Range bodies are received into, kept for the next
    range: a fresh 4 MiB for each range would cost an allocation, page faults and zeroing."""

    def __init__(self, keep: int = 8) -> None:
        self._free: list[bytearray] = []
        self._keep = keep
        self._lock = threading.Lock()

    @contextmanager
    def get(self) -> Iterator[bytearray]:
        with self._lock:
            buffer = self._free.pop() if self._free else None
        buffer = buffer if buffer is not None else bytearray(MAX_RANGE_BYTES)
        try:
            yield buffer
        finally:
            with self._lock:
                if len(self._free) < self._keep:
                    self._free.append(buffer)


_RANGE_BUFFERS = _RangeBuffers()


def _body(ctx: Ctx, expected: int, buffer: bytearray) -> memoryview:
    """The request body, which Content-Length says holds ``expected`` bytes (the caller checked),
    received into ``buffer``.

    Read straight from the server's input stream, not through werkzeug's ``request.stream``: that
    one copies a 4 MiB range three times over (its read goes through a zero-filled buffer of its
    own), and reading exactly ``expected`` bytes cannot run past the body anyway."""
    _bound_reads(ctx.call)
    stream = ctx.call.request.environ["wsgi.input"]
    view = memoryview(buffer)[:expected]
    try:
        if hasattr(stream, "readinto"):
            received = 0
            while received < expected and (n := stream.readinto(view[received:])):
                received += n
            data = view[:received]
        else:
            data = memoryview(stream.read(expected))
    except (OSError, ClientDisconnected):  # the socket timed out or the client went away mid-body
        raise StorageError(400, "InvalidInput",
                           f"The request body stalled or ended before its {expected} bytes arrived.",
                           headers=_CLOSE) from None
    if len(data) != expected:
        raise StorageError(400, "InvalidHeaderValue",
                           f"The body holds {len(data)} bytes but Content-Length and the range say {expected}.",
                           HeaderName="Content-Length", headers=_CLOSE)
    return data


def _request_md5(ctx: Ctx, write: str) -> Optional[str]:
    """The Content-MD5 a Put Range carries (base64 of 16 bytes), checked before the body is read:
    one that is not an MD5 is InvalidMd5, and a clear (which has no body) takes none."""
    sent = ctx.header("content-md5")
    if sent is None:
        return None
    if write == "clear":
        raise StorageError(400, "InvalidHeaderValue",
                           "Content-MD5 is not allowed when x-ms-write is 'clear' (a clear has no body).",
                           HeaderName="Content-MD5")
    try:
        raw = base64.b64decode(sent.strip(), validate=True)
        if len(raw) != 16:
            raise ValueError
    except (binascii.Error, ValueError):
        raise StorageError(400, "InvalidMd5", "The MD5 value specified in the request is invalid. The MD5 value "
                           "must be 128 bits and Base64-encoded.") from None
    return base64.b64encode(raw).decode("ascii")  # the canonical form content_md5 gives


def put_range(ctx: Ctx) -> Response:
    requested, range_header = _request_range(ctx)
    if requested is None or requested[1] is None:
        raise StorageError(400, "MissingRequiredHeader",
                           "Put Range needs 'x-ms-range: bytes=<start>-<end>'.", HeaderName="x-ms-range")
    start, end = requested[0], requested[1]
    write = (ctx.header("x-ms-write") or "").lower()
    if write not in ("update", "clear"):
        raise StorageError(400, "InvalidHeaderValue", "The header 'x-ms-write' must be 'update' or 'clear'.",
                           HeaderName="x-ms-write")
    length = end - start + 1
    content_length = ctx.call.request.content_length or 0
    if write == "update" and length > MAX_RANGE_BYTES:
        raise StorageError(413, "RequestBodyTooLarge",
                           f"A range may hold at most {MAX_RANGE_BYTES} bytes (4 MiB); this one holds {length}.")
    if write == "update" and content_length != length:
        raise StorageError(400, "InvalidHeaderValue",
                           f"Content-Length ({content_length}) must equal the size of the range in "
                           f"'{range_header}' ({length}).", HeaderName="Content-Length")
    if write == "clear" and content_length != 0:
        raise StorageError(400, "InvalidHeaderValue", "Clearing a range takes no body: Content-Length must be 0.",
                           HeaderName="Content-Length")
    sent_md5 = _request_md5(ctx, write)
    _before_write(ctx)
    entry = ctx.shares.get_file(ctx.account, ctx.share, ctx.parts)
    if end >= entry.size:
        raise StorageError(416, "InvalidRange",
                           f"The range {start}-{end} reaches past the end of the file ({entry.size} bytes); "
                           "resize the file first.")
    headers: dict[str, str] = {}
    if write == "update":
        with _RANGE_BUFFERS.get() as buffer:
            data = _body(ctx, length, buffer)
            digest = content_md5(data)
            # Transactional MD5: a range whose bytes changed on the way is refused, and nothing is written.
            if sent_md5 is not None and sent_md5 != digest:
                raise StorageError(400, "Md5Mismatch",
                                   "The MD5 value specified in the request did not match the MD5 value calculated "
                                   "by the server.")
            entry = ctx.shares.write_range(entry, start, data)
        headers["Content-MD5"] = digest
        headers["x-ms-request-server-encrypted"] = "true"  # a clear writes no data: Azure leaves it out
    else:
        entry = ctx.shares.clear_range(entry, start, end)
    headers.update({"ETag": entry.etag, "Last-Modified": _http_date(entry.last_modified),
                    "x-ms-file-last-write-time": _smb_time(entry.last_write_time_ns)})
    return _respond(ctx, 201, headers)


def list_ranges(ctx: Ctx) -> Response:
    entry = ctx.shares.get_file(ctx.account, ctx.share, ctx.parts)
    requested, _ = _request_range(ctx)
    start, end = (0, entry.size - 1) if requested is None else (requested[0], requested[1] if requested[1] is not None
                                                                 else entry.size - 1)
    ranges = ctx.shares.data_ranges(entry, start, end)
    text = "<Ranges>" + "".join(f"<Range><Start>{s}</Start><End>{e}</End></Range>" for s, e in ranges) + "</Ranges>"
    response = _xml(ctx, text)
    response.headers.update({"ETag": entry.etag, "Last-Modified": _http_date(entry.last_modified),
                             "x-ms-content-length": str(entry.size)})
    return response


# -- rename -------------------------------------------------------------------------------------

def _bool_header(ctx: Ctx, name: str) -> bool:
    value = (ctx.header(name) or "false").strip().lower()
    if value not in ("true", "false"):
        raise StorageError(400, "InvalidHeaderValue", f"The header '{name}' must be 'true' or 'false'.",
                           HeaderName=name, HeaderValue=value[:40])
    return value == "true"


def _rename_source(ctx: Ctx) -> tuple[str, ...]:
    """The path in this share of the file ``x-ms-file-rename-source`` names (its full URL, as the SDK
    sends it), checked to be one the caller may move away."""
    name = "x-ms-file-rename-source"
    value = (ctx.header(name) or "").strip()
    if not value:
        raise StorageError(400, "MissingRequiredHeader",
                           f"Rename File needs '{name}: <the full URL of the file to rename>'.", HeaderName=name)
    split = urlsplit(value)
    raw_path = split.path
    if _VIRTUAL_HOST_RE.match(split.netloc):  # https://<account>.file.core.windows.net/<share>/<path>
        raw_path = "/" + split.netloc.split(".", 1)[0] + raw_path
    if split.scheme not in ("http", "https") or not split.netloc:
        raise StorageError(400, "InvalidHeaderValue",
                           f"The header '{name}' must be the full URL of a file of this share, e.g. "
                           f"{ctx.call.base_url}/{ctx.account}/{ctx.share}/<path>.", HeaderName=name)
    try:
        source = parse_target(raw_path)
    except StorageError as err:
        raise StorageError(400, "InvalidHeaderValue", f"The header '{name}' does not name a file: {err.message}",
                           HeaderName=name) from None
    if source.account != ctx.account or source.share != ctx.share or not source.parts:
        raise StorageError(400, "InvalidHeaderValue",
                           f"The header '{name}' must name a file in the share being renamed into "
                           f"({ctx.account}/{ctx.share}): a file is renamed within its share.", HeaderName=name)
    grant = ctx.grant
    if grant.scheme == "SAS":
        # The source may carry a SAS of its own (a file SAS reaches one file); else the request's must reach it.
        pairs = _parse_query(split.query)
        if any(k == "sig" for k, _ in pairs):
            signed = SignedRequest(method=ctx.signed.method, raw_path=raw_path, query=pairs, headers=[],
                                   scheme=ctx.signed.scheme, remote_addr=ctx.signed.remote_addr)
            grant = authenticate(signed, source.account, source.share, source.parts,
                                 account_keys(ctx.call.context.store, source.account))
        authorize(grant, level="file", needs="d", share=source.share, parts=source.parts)
    return source.parts


def rename_file(ctx: Ctx) -> Response:
    """Rename File (version 2021-04-10 on): the file named by x-ms-file-rename-source takes this URL's name."""
    source = _rename_source(ctx)
    content_type = ctx.header("x-ms-content-type")
    if content_type is not None and _printable(content_type) is None:
        raise StorageError(400, "InvalidHeaderValue", "The header 'x-ms-content-type' must be printable ASCII.",
                           HeaderName="x-ms-content-type")
    entry = ctx.shares.rename_file(
        ctx.account, ctx.share, source, ctx.parts,
        replace=_bool_header(ctx, "x-ms-file-rename-replace-if-exists"),
        ignore_readonly=_bool_header(ctx, "x-ms-file-rename-ignore-readonly"),
        metadata=ctx.metadata() or None, content_type=content_type, smb=_smb_request(ctx))
    return _respond(ctx, 200, {**_entry_headers(entry), "x-ms-request-server-encrypted": "true"})


# -- copy ---------------------------------------------------------------------------------------

def _copy_source(ctx: Ctx) -> tuple[EntryInfo, CopySource, str]:
    """The file ``x-ms-copy-source`` names, checked to be one the caller may read, and the URL
    as the file's properties will show it (without a SAS signature).

    A file of the destination's account is read on the request's own authority (its Shared Key, or
    its SAS where that reaches the source with 'r'); a file of another account only through a SAS
    in the source URL that grants 'r' on it, as Azure requires."""
    name = "x-ms-copy-source"
    value = (ctx.header(name) or "").strip()
    split = urlsplit(value)
    local = urlsplit(ctx.call.base_url)
    try:
        port = split.port
    except ValueError:  # a port that is not a number
        port = -1
    raw_path = split.path
    if _VIRTUAL_HOST_RE.match(split.netloc):  # https://<account>.file.core.windows.net/<share>/<path>
        raw_path = "/" + split.netloc.split(".", 1)[0] + raw_path
    elif port != local.port or (split.hostname or "") not in (local.hostname, "127.0.0.1", "localhost", "::1"):
        raise StorageError(400, "InvalidHeaderValue",
                           f"The header '{name}' must be the URL of a file of this service: "
                           f"{ctx.call.base_url}/<account>/<share>/<path> or https://<account>.file.core.windows.net/"
                           "<share>/<path>, with a SAS for another account's file (blob sources are not served "
                           "by the local Files plane).", HeaderName=name)
    if split.scheme not in ("http", "https"):
        raise StorageError(400, "InvalidHeaderValue", f"The header '{name}' must be an https URL.", HeaderName=name)
    try:
        source = parse_target(raw_path)
    except StorageError as err:
        raise StorageError(400, "InvalidHeaderValue", f"The header '{name}' does not name a file: {err.message}",
                           HeaderName=name) from None
    if source.share is None or not source.parts:
        raise StorageError(400, "InvalidHeaderValue", f"The header '{name}' must name a file, not an account or share.",
                           HeaderName=name)
    pairs = _parse_query(split.query)
    try:
        if any(k == "sig" for k, _ in pairs):
            signed = SignedRequest(method="GET", raw_path=raw_path, query=pairs, headers=[], scheme=split.scheme,
                                   remote_addr=ctx.signed.remote_addr)
            grant = authenticate(signed, source.account, source.share, source.parts,
                                 account_keys(ctx.call.context.store, source.account))
        elif source.account == ctx.account:
            grant = ctx.grant
        else:
            raise StorageError(403, "CannotVerifyCopySource",
                               f"The source file is in another storage account ({source.account}): its URL needs a "
                               "SAS that grants read ('r') on it.")
        authorize(grant, level="file", needs="r", share=source.share, parts=source.parts)
    except StorageError as err:
        if err.code == "CannotVerifyCopySource":
            raise
        raise StorageError(403, "CannotVerifyCopySource",
                           f"This request is not authorized to read the copy source: {err.message}") from None
    try:
        entry = ctx.shares.get_file(source.account, source.share, source.parts)
    except StorageError:
        raise StorageError(404, "CannotVerifyCopySource", "The specified copy source does not exist.") from None
    shown = urlunsplit(split._replace(query="&".join(f"{k}={v}" for k, v in _raw_pairs(split.query)
                                                     if k.lower() != "sig")))
    return entry, CopySource(source.account, source.share, source.parts, entry.etag), shown


def _raw_pairs(query: str) -> list[tuple[str, str]]:
    return [(item.partition("=")[0], item.partition("=")[2]) for item in query.split("&") if item]


def copy_file(ctx: Ctx) -> Response:
    """Copy File: ``PUT <file>`` with ``x-ms-copy-source``; 202 with the copy's id and status."""
    mode = ctx.header("x-ms-file-permission-copy-mode")
    if mode is not None and mode.strip().lower() not in ("source", "override"):
        raise StorageError(400, "InvalidHeaderValue", "x-ms-file-permission-copy-mode must be 'source' or 'override'.",
                           HeaderName="x-ms-file-permission-copy-mode")
    ignore_readonly = _bool_header(ctx, "x-ms-file-copy-ignore-readonly")
    set_archive = _bool_header(ctx, "x-ms-file-copy-set-archive")
    metadata = ctx.metadata() or None
    if metadata is not None:
        validate_metadata(metadata)
    source, ref, shown = _copy_source(ctx)
    smb = _smb_request(ctx, source)
    if set_archive and "Archive" not in smb.get("attributes", "Archive").split("|"):
        smb["attributes"] = smb["attributes"] + "|Archive"
    try:
        existing: Optional[EntryInfo] = ctx.shares.get_file(ctx.account, ctx.share, ctx.parts)
    except StorageError:
        existing = None
    if existing is not None and not ignore_readonly and "ReadOnly" in existing.attributes.split("|"):
        raise StorageError(409, "ReadOnlyAttribute", "The destination file is ReadOnly; set "
                           "x-ms-file-copy-ignore-readonly: true to copy over it.")
    entry, state = _copies(ctx).start(ctx.account, ctx.share, ctx.parts, source, ref, shown, metadata=metadata,
                                      smb=smb)
    return _respond(ctx, 202, {"ETag": entry.etag, "Last-Modified": _http_date(entry.last_modified),
                               "x-ms-copy-id": state.copy_id, "x-ms-copy-status": state.status})


def abort_copy(ctx: Ctx) -> Response:
    """Abort Copy File: ``PUT <file>?comp=copy&copyid=<id>`` with ``x-ms-copy-action: abort``; 204."""
    action = ctx.header("x-ms-copy-action")
    if action is None:
        raise StorageError(400, "MissingRequiredHeader", "Abort Copy File needs 'x-ms-copy-action: abort'.",
                           HeaderName="x-ms-copy-action")
    if action.strip().lower() != "abort":
        raise StorageError(400, "InvalidHeaderValue", "The header 'x-ms-copy-action' must be 'abort'.",
                           HeaderName="x-ms-copy-action")
    copy_id = ctx.query.get("copyid", "")
    if not copy_id:
        raise StorageError(400, "MissingRequiredQueryParameter",
                           "Abort Copy File needs the query parameter 'copyid' (the x-ms-copy-id of the copy).",
                           QueryParameterName="copyid")
    _copies(ctx).abort(ctx.account, ctx.share, ctx.parts, copy_id)
    return _respond(ctx, 204)


OPERATIONS: list[FilesOperation] = [
    FilesOperation("service", "GET", "list", list_shares),
    FilesOperation("share", "PUT", "", create_share),
    FilesOperation("share", "GET", "", get_share_properties),
    FilesOperation("share", "HEAD", "", get_share_properties),
    FilesOperation("share", "DELETE", "", delete_share),
    FilesOperation("share", "PUT", "metadata", set_share_metadata),
    FilesOperation("share", "PUT", "properties", set_share_properties),
    FilesOperation("share", "GET", "stats", get_share_stats),
    FilesOperation("directory", "PUT", "", create_directory, "cw"),
    FilesOperation("directory", "GET", "", get_directory_properties, "r"),
    FilesOperation("directory", "HEAD", "", get_directory_properties, "r"),
    FilesOperation("directory", "DELETE", "", delete_directory, "d"),
    FilesOperation("directory", "PUT", "metadata", set_directory_metadata, "w"),
    FilesOperation("directory", "PUT", "properties", set_directory_properties, "w"),
    FilesOperation("directory", "GET", "list", list_directory, "l"),
    FilesOperation("file", "PUT", "", create_file, "cw"),
    FilesOperation("file", "GET", "", download_file, "r"),
    FilesOperation("file", "HEAD", "", get_file_properties, "r"),
    FilesOperation("file", "DELETE", "", delete_file, "d"),
    FilesOperation("file", "PUT", "range", put_range, "w"),
    FilesOperation("file", "PUT", "properties", set_file_properties, "w"),
    FilesOperation("file", "PUT", "metadata", set_file_metadata, "w"),
    FilesOperation("file", "GET", "rangelist", list_ranges, "r"),
    FilesOperation("file", "PUT", "rename", rename_file, "cw"),
    FilesOperation("file", "PUT", "copy", abort_copy, "w"),
]
_BY_KEY = {(op.level, op.method, op.comp): op for op in OPERATIONS}


def _level(target: RequestTarget, restype: str) -> str:
    if target.share is None:
        if restype not in ("", "service"):
            raise StorageError(400, "InvalidQueryParameterValue",
                               f"restype={restype} does not apply to an account URL.", QueryParameterName="restype")
        return "service"
    if restype == "share":
        if target.parts:
            raise StorageError(400, "InvalidQueryParameterValue",
                               "restype=share applies to /<account>/<share> only.", QueryParameterName="restype")
        return "share"
    if restype == "directory":
        return "directory"
    if restype:
        raise StorageError(400, "InvalidQueryParameterValue",
                           f"restype={restype[:40]} is not valid: use 'share' or 'directory' (or none for a file).",
                           QueryParameterName="restype")
    if not target.parts:
        raise StorageError(400, "InvalidQueryParameterValue",
                           "A share URL needs restype=share (the share) or restype=directory (its root directory).",
                           QueryParameterName="restype")
    return "file"


def _find_operation(level: str, method: str, comp: str) -> FilesOperation:
    op = _BY_KEY.get((level, method, comp))
    if op is not None:
        return op
    comps = sorted({o.comp for o in OPERATIONS if o.level == level})
    if comp in comps:
        methods = sorted({o.method for o in OPERATIONS if o.level == level and o.comp == comp})
        raise StorageError(405, "UnsupportedHttpVerb",
                           f"The {method} method is not supported for this {level} operation; use {', '.join(methods)}.",
                           headers={"Allow": ", ".join(methods)})
    valid = ", ".join(f"comp={c}" if c else "no comp" for c in comps)
    raise StorageError(400, "InvalidQueryParameterValue",
                       f"comp={comp[:40]} is not supported for a {level} by the local service; valid: {valid}.",
                       QueryParameterName="comp")


def handle(call: Call) -> Response:
    # A refused body is not read here: the HTTP server reads and drops the rest of it (up to 64 MiB)
    # after the answer, so the client reads the answer and the connection stays usable.
    request = call.request
    max_body = call.context.settings.max_body_bytes
    if (request.content_length or 0) > max_body:
        raise StorageError(413, "RequestBodyTooLarge",
                           f"The request body is too large: at most {max_body} bytes are accepted.")
    raw_path, raw_query = _raw_uri(call)
    if _VIRTUAL_HOST_RE.match(request.host or ""):
        raise StorageError(400, "InvalidUri",
                           "The local service addresses accounts by path, not by host name: use "
                           f"{call.base_url}/<account>/<share>/<path> (account_url {call.base_url}/<account>).")
    target = parse_target(raw_path)
    pairs = _parse_query(raw_query)
    query = {k.lower(): v for k, v in pairs if k not in SAS_PARAMS}
    signed = SignedRequest(method=request.method, raw_path=raw_path, query=pairs, headers=_raw_headers(call),
                           scheme=request.scheme, remote_addr=request.remote_addr or "")
    keys = account_keys(call.context.store, target.account)
    if not keys:
        raise StorageError(404, "ResourceNotFound",
                           f"The storage account '{target.account}' does not exist in the local service; "
                           "create it (StorageManagementClient.storage_accounts.begin_create) first.")
    grant = authenticate(signed, target.account, target.share, target.parts, keys)
    level = _level(target, query.get("restype", ""))
    op = _find_operation(level, request.method, query.get("comp", ""))
    authorize(grant, level=level, needs=op.needs, share=target.share, parts=target.parts)
    ctx = Ctx(call=call, target=target, query=query, signed=signed, grant=grant, shares=shares_for(call.context))
    if target.share and target.parts and STALE_UPLOAD_RE.match(target.parts[-1]):
        # an upload in progress, however long it reads back: not a leftover (see remove_stale_uploads)
        note_upload_activity(ctx.shares.root / target.account.lower() / target.share / Path(*target.parts))
    return op.handler(ctx)
