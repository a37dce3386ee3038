"""Who may do what on the Files data plane: Shared Key signatures and service SAS tokens.

Both are HMAC-SHA256 with one of the storage account's two keys, read afresh on every request so a
regenerated key takes effect at once.

* **Shared Key** (``Authorization: SharedKey <account>:<signature>``) signs the verb, eleven
  standard headers (Content-Length empty when 0, as from version 2015-02-21), the ``x-ms-*``
  headers and the canonicalized resource ``/<account><URI path>`` followed by the lower-cased,
  sorted query parameters. For our path-style endpoint the URI path already starts with
  ``/<account>/``, so the account appears twice, exactly as the Azure SDK signs it. The request
  date (``x-ms-date`` or ``Date``) must be within 15 minutes of now.
* **Service SAS** (``sv, sr=f|s, sp, st, se, spr, sip, si, sig, rscc..rsct`` in the query) signs,
  in this order: sp, st, se, ``/file/<account>/<share>[/<path>]``, si, sip, spr, sv, rscc, rscd,
  rsce, rscl, rsct (the form of every version from 2015-04-05 on). A file SAS reaches one file, a
  share SAS every file and directory of one share; neither reaches share- or service-level
  operations. Permissions, the validity window, the protocol and the IP range are enforced.

A request with neither gets 401 ``NoAuthenticationInformation``; a wrong signature, an expired or
not-yet-valid SAS and the like get 403 ``AuthenticationFailed``; a valid SAS without the
permission an operation needs gets 403 ``AuthorizationPermissionMismatch``. Messages say what is
wrong and never contain a signature, a key or a string-to-sign.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from typing import Iterable, Optional, Sequence

from .errors import StorageError

__all__ = ["SignedRequest", "Grant", "authenticate", "authorize", "SAS_PARAMS", "MIN_SAS_VERSION"]

#: query parameters that belong to a SAS token, not to the operation.
SAS_PARAMS = frozenset({"sv", "ss", "srt", "sr", "sp", "st", "se", "sip", "si", "spr", "sig",
                        "rscc", "rscd", "rsce", "rscl", "rsct", "sduoid", "skoid", "sktid", "skt",
                        "ske", "sks", "skv", "ses", "srh", "srq"})
#: the oldest SAS version whose string-to-sign we know (and the oldest the SDK can still produce).
MIN_SAS_VERSION = "2015-04-05"
#: how far a Shared Key request's date may be from now.
MAX_CLOCK_SKEW = timedelta(minutes=15)
_STANDARD_HEADERS = ("content-encoding", "content-language", "content-length", "content-md5", "content-type",
                     "date", "if-modified-since", "if-match", "if-none-match", "if-unmodified-since", "range")
_SAS_PERMISSIONS = "rcwdl"
_SAS_FIELDS_AFTER_RESOURCE = ("si", "sip", "spr", "sv", "rscc", "rscd", "rsce", "rscl", "rsct")


@dataclass(frozen=True)
class SignedRequest:
    """What authentication looks at, independent of the web framework."""

    method: str
    raw_path: str                        # as sent, percent-encoding intact, without the query
    query: Sequence[tuple[str, str]] = field(repr=False)  # names as sent, decoded (may hold a SAS)
    headers: Sequence[tuple[str, str]] = field(repr=False)  # names as sent (may hold a signature)
    scheme: str = "https"
    remote_addr: str = "127.0.0.1"

    def header(self, name: str) -> Optional[str]:
        values = [v for k, v in self.headers if k.lower() == name]
        return ",".join(values) if values else None

    def param(self, name: str) -> Optional[str]:
        for k, v in self.query:
            if k == name:
                return v
        return None


@dataclass(frozen=True)
class Grant:
    """What an authenticated request may reach. Holds no secret."""

    scheme: str                          # "SharedKey" or "SAS"
    resource: Optional[str] = None       # SAS only: "f" (one file) or "s" (one share)
    share: Optional[str] = None
    path: Optional[str] = None           # for "f": the file path inside the share
    permissions: frozenset[str] = frozenset()
    #: response headers a SAS overrides on reads (Cache-Control, Content-Disposition, ...).
    overrides: tuple[tuple[str, str], ...] = ()


def _fail(detail: str, status: int = 403, code: str = "AuthenticationFailed") -> StorageError:
    """The error for a refused request; ``detail`` says why and never holds a secret."""
    if code == "AuthenticationFailed":
        # Azure's shape: a fixed message plus the reason in AuthenticationErrorDetail.
        return StorageError(status, code, f"Server failed to authenticate the request. {detail}",
                            AuthenticationErrorDetail=detail)
    return StorageError(status, code, detail)


def _sign(key: str, string_to_sign: str) -> bytes:
    return hmac.new(base64.b64decode(key), string_to_sign.encode("utf-8"), hashlib.sha256).digest()


def _matches(keys: Iterable[str], candidates: Iterable[str], signature: str) -> bool:
    try:
        given = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return False
    ok = False
    for key in keys:
        for text in candidates:
            # compare_digest keeps the time independent of where a forged signature differs.
            ok |= hmac.compare_digest(_sign(key, text), given)
    return ok


# -- Shared Key -------------------------------------------------------------------------------

def _collation_key(name: str) -> tuple[str, str]:
    # Azure sorts x-ms-* header names with a culture collation in which '-' weighs nothing at the
    # first level (the Azure SDK emulates it); plain ordinal order breaks the ties.
    return (name.replace("-", ""), name)


def _canonical_headers(request: SignedRequest, order: str) -> str:
    merged: dict[str, list[str]] = {}
    for name, value in request.headers:
        lname = name.lower()
        if lname.startswith("x-ms-"):
            merged.setdefault(lname, []).append(value)
    names = sorted(merged, key=_collation_key) if order == "collation" else sorted(merged)
    return "".join(f"{n}:{','.join(merged[n])}\n" for n in names)


def _canonical_resource(request: SignedRequest, account: str) -> str:
    params: dict[str, list[str]] = {}
    for name, value in request.query:
        params.setdefault(name.lower(), []).append(value)
    query = "".join(f"\n{n}:{','.join(sorted(params[n]))}" for n in sorted(params))
    return f"/{account}{request.raw_path}{query}"


def shared_key_strings(request: SignedRequest, account: str) -> list[str]:
    """The string(s) a correct signer signs; two only when the header orders differ."""
    standard = []
    for name in _STANDARD_HEADERS:
        value = request.header(name) or ""
        if name == "content-length" and value == "0":
            value = ""
        standard.append(value)
    head = request.method.upper() + "\n" + "\n".join(standard) + "\n"
    resource = _canonical_resource(request, account)
    texts = {head + _canonical_headers(request, order) + resource for order in ("collation", "ordinal")}
    return sorted(texts)


def _check_date(request: SignedRequest, now: datetime) -> None:
    raw = request.header("x-ms-date") or request.header("date")
    if not raw:
        raise _fail("The request has no x-ms-date or Date header; a Shared Key request must be dated.")
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        raise _fail("The x-ms-date or Date header is not an RFC 1123 date (e.g. 'Tue, 01 May 2018 10:00:00 GMT').")
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    if abs(now - when) > MAX_CLOCK_SKEW:
        raise _fail("The request date differs from the service's clock by more than 15 minutes.")


def _shared_key(request: SignedRequest, account: str, keys: Sequence[str], now: datetime) -> Grant:
    value = request.header("authorization") or ""
    scheme, _, credentials = value.strip().partition(" ")
    if scheme == "Bearer":
        raise _fail("Bearer tokens are not accepted by the local Files service; use Shared Key or a SAS.")
    if scheme != "SharedKey":
        raise _fail("The Authorization header must be 'SharedKey <account>:<signature>'.", 400,
                    "InvalidAuthenticationInfo")
    who, sep, signature = credentials.strip().partition(":")
    if not sep or not signature:
        raise _fail("The Authorization header must be 'SharedKey <account>:<signature>'.", 400,
                    "InvalidAuthenticationInfo")
    if who != account:
        raise _fail("The account named in the Authorization header is not the account in the URL.")
    _check_date(request, now)
    if not _matches(keys, shared_key_strings(request, account), signature):
        raise _fail("The Shared Key signature does not match one computed with either of the account's "
                    "current keys.")
    return Grant("SharedKey")


# -- SAS --------------------------------------------------------------------------------------

def _parse_sas_time(value: str, name: str) -> datetime:
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%MZ", "%Y-%m-%d"):
        try:
            return datetime.strptime(value, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise _fail(f"The SAS field '{name}' is not an ISO 8601 UTC time (e.g. 2018-05-01T10:00:00Z).")


def _check_ip(spec: str, remote: str) -> bool:
    try:
        addr = ipaddress.ip_address(remote)
        low_text, _, high_text = spec.partition("-")
        low, high = ipaddress.ip_address(low_text), ipaddress.ip_address(high_text or low_text)
    except ValueError:
        return False
    if not addr.version == low.version == high.version:
        return False
    return int(low) <= int(addr) <= int(high)


def sas_string(fields: dict[str, str], canonical_resource: str) -> str:
    parts = [fields.get("sp", ""), fields.get("st", ""), fields.get("se", ""), canonical_resource]
    parts += [fields.get(name, "") for name in _SAS_FIELDS_AFTER_RESOURCE]
    return "\n".join(parts)


def _sas(request: SignedRequest, account: str, share: Optional[str], parts: tuple[str, ...],
         keys: Sequence[str], now: datetime) -> Grant:
    fields = {k: v for k, v in request.query if k in SAS_PARAMS}
    if "ss" in fields or "srt" in fields:
        raise _fail("Account SAS tokens are not supported by the local service; use a service SAS "
                    "(generate_share_sas or generate_file_sas).")
    for required in ("sv", "sr", "sig"):
        if not fields.get(required):
            raise _fail(f"The SAS has no '{required}' field.")
    if fields["sv"] < MIN_SAS_VERSION:
        raise _fail(f"SAS version {fields['sv']} is not supported; use {MIN_SAS_VERSION} or later.")
    if fields.get("si"):
        raise _fail("The SAS names a stored access policy (si), and the share has none.")
    if fields.get("skoid") or fields.get("sduoid"):
        raise _fail("User delegation SAS tokens are not supported by the local service.")
    resource = fields["sr"]
    if resource not in ("f", "s"):
        raise _fail(f"The SAS resource 'sr={resource}' is not valid here: use 'f' (a file) or 's' (a share).")
    if not fields.get("se") or not fields.get("sp"):
        raise _fail("The SAS has no expiry (se) or no permissions (sp).")
    unknown = set(fields["sp"]) - set(_SAS_PERMISSIONS)
    if unknown:
        raise _fail(f"The SAS permissions (sp) may only hold the letters '{_SAS_PERMISSIONS}'.")
    if share is None:
        raise _fail("A service SAS cannot authorize account-level operations.", 403,
                    "AuthorizationResourceTypeMismatch")
    if resource == "s":
        canonical = f"/file/{account}/{share}"
    else:
        canonical = f"/file/{account}/{share}/" + "/".join(parts)
    if not _matches(keys, [sas_string(fields, canonical)], fields["sig"]):
        raise _fail("The SAS signature does not match one computed with either of the account's current keys "
                    "for this resource.")
    # The token is genuine: now check what it allows.
    start = _parse_sas_time(fields["st"], "st") if fields.get("st") else None
    expiry = _parse_sas_time(fields["se"], "se")
    if start is not None and now < start:
        raise _fail("The SAS is not valid yet: its start time (st) is in the future.")
    if now >= expiry:
        raise _fail("The SAS has expired: its expiry time (se) has passed.")
    protocols = fields.get("spr", "https,http")
    if protocols not in ("https", "https,http"):
        raise _fail("The SAS protocol (spr) must be 'https' or 'https,http'.")
    if request.scheme not in protocols.split(","):
        raise _fail("This request is not authorized to perform this operation using this protocol.", 403,
                    "AuthorizationProtocolMismatch")
    if fields.get("sip") and not _check_ip(fields["sip"], request.remote_addr):
        raise _fail("This request is not authorized to perform this operation from this IP address.", 403,
                    "AuthorizationSourceIPMismatch")
    overrides = tuple((header, fields[name]) for name, header in (
        ("rscc", "Cache-Control"), ("rscd", "Content-Disposition"), ("rsce", "Content-Encoding"),
        ("rscl", "Content-Language"), ("rsct", "Content-Type")) if fields.get(name))
    return Grant("SAS", resource=resource, share=share, path="/".join(parts) if resource == "f" else None,
                 permissions=frozenset(fields["sp"]), overrides=overrides)


# -- entry points -----------------------------------------------------------------------------

def authenticate(request: SignedRequest, account: str, share: Optional[str], parts: tuple[str, ...],
                 keys: Sequence[str], *, now: Optional[datetime] = None) -> Grant:
    """Verify the request's Shared Key signature or SAS against the account's current ``keys``."""
    now = now or datetime.now(timezone.utc)
    if not keys:
        raise _fail("The storage account has no keys.")
    if request.header("authorization") is not None:
        return _shared_key(request, account, keys, now)
    if request.param("sig") is not None:
        return _sas(request, account, share, parts, keys, now)
    raise StorageError(401, "NoAuthenticationInformation",
                       "Server failed to authenticate the request. Sign it with Shared Key (an account key) "
                       "or add a SAS token to the URL.",
                       headers={"WWW-Authenticate": 'SharedKey realm="local"'})


def authorize(grant: Grant, *, level: str, needs: str, share: Optional[str], parts: tuple[str, ...]) -> None:
    """Refuse what a SAS does not allow. ``level`` is service|share|directory|file; ``needs`` the
    permission letters any one of which allows the operation."""
    if grant.scheme == "SharedKey":
        return
    if level in ("service", "share") or (grant.resource == "f" and level != "file"):
        scope = "one file" if grant.resource == "f" else "the files and directories of one share"
        raise _fail(f"This SAS reaches {scope} and cannot authorize a {level}-level operation.", 403,
                    "AuthorizationResourceTypeMismatch")
    if share != grant.share or (grant.resource == "f" and "/".join(parts) != grant.path):
        raise _fail("This SAS does not reach the requested resource.", 403, "AuthorizationFailure")
    if not set(needs) & grant.permissions:
        wanted = " or ".join(f"'{p}'" for p in needs)
        raise _fail(f"This request is not authorized to perform this operation using this permission "
                    f"(it needs {wanted}).", 403, "AuthorizationPermissionMismatch")
