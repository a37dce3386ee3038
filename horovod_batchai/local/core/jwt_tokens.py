"""Access tokens as JSON Web Tokens (RFC 7519), signed with HMAC-SHA256 (``HS256``) and the service's
secret.

Clients decode access tokens without verifying them and read claims from them: the Azure CLI takes
the tenant from ``tid`` after ``az login --identity``. So a token here is a real JWT with the claims
a managed identity's token from Azure AD carries (``aud``, ``iss``, ``iat``, ``nbf``, ``exp``,
``tid``, ``oid``, ``sub``, ``appid``, ``idtyp``, ``ver``, ``uti``), except that the service itself
issues and signs it: ``iss`` names the local service, never Azure AD.

Only this service can verify a token, with the secret it keeps in its state directory; verification
refuses anything it did not issue exactly so: another algorithm (``none`` included), a bad
signature, an expired or not-yet-valid token, another audience, issuer or tenant.

The local service has one tenant, one identity and, by default, one subscription; their ids are
fixed so that every state directory looks the same to a client.
"""
from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Optional

__all__ = ["ALGORITHM", "ISSUER", "AUDIENCES", "DEFAULT_AUDIENCE", "TENANT_ID", "IDENTITY_OBJECT_ID",
           "IDENTITY_CLIENT_ID", "LIFETIME_S", "IssuedToken", "issue_token", "verify_token",
           "normalize_audience"]

ALGORITHM = "HS256"
#: who issues the tokens: the local service (a JWT ``iss`` is any string or URI).
ISSUER = "urn:horovod-batchai:local-service"
#: Azure Resource Manager's audiences, as Azure's own cloud metadata lists them; the local service
#: stands in for ARM, so a token for ARM is a token for it, and clients' default scopes work.
AUDIENCES = frozenset({"https://management.core.windows.net/", "https://management.azure.com/"})
DEFAULT_AUDIENCE = "https://management.core.windows.net/"
#: the local service's one tenant and its one (system-assigned) identity.
TENANT_ID = "00000000-0000-0000-0000-00000000aaaa"
IDENTITY_OBJECT_ID = "00000000-0000-0000-0000-00000000bbbb"
IDENTITY_CLIENT_ID = "00000000-0000-0000-0000-00000000cccc"
LIFETIME_S = 3600

_HEADER = {"alg": ALGORITHM, "typ": "JWT"}


@dataclass(frozen=True)
class IssuedToken:
    """A signed token and when it expires (seconds since the epoch)."""

    token: str
    expires_on: int

    def __repr__(self) -> str:  # a bearer token is a secret
        return f"IssuedToken(token=<redacted>, expires_on={self.expires_on})"


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    # JWTs use base64url without padding (RFC 7515 section 2); anything else is malformed.
    if not text or "=" in text:
        raise ValueError("not unpadded base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(secret: bytes, signing_input: str) -> bytes:
    return hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()


def normalize_audience(resource: str) -> Optional[str]:
    """The audience a resource or scope names (``https://management.azure.com``,
    ``https://management.azure.com/.default``), or None when it is not the local service's."""
    value = resource.strip()
    for suffix in ("/.default", "/user_impersonation"):
        if value.endswith(suffix):
            value = value[: -len(suffix)]
            break
    value = value.rstrip("/") + "/"
    return value if value in AUDIENCES else None


def issue_token(secret: bytes, *, audience: str = DEFAULT_AUDIENCE, lifetime_s: int = LIFETIME_S,
                now: Optional[float] = None) -> IssuedToken:
    """A token for the local service's identity, valid for ``lifetime_s`` seconds from ``now``."""
    if audience not in AUDIENCES:
        raise ValueError(f"audience must be one of {sorted(AUDIENCES)}, got {audience!r}")
    if lifetime_s <= 0:
        raise ValueError(f"lifetime_s must be positive, got {lifetime_s!r}")
    issued_at = int(now if now is not None else time.time())
    expires_on = issued_at + int(lifetime_s)
    claims = {
        "aud": audience, "iss": ISSUER, "iat": issued_at, "nbf": issued_at, "exp": expires_on,
        "tid": TENANT_ID, "oid": IDENTITY_OBJECT_ID, "sub": IDENTITY_OBJECT_ID, "appid": IDENTITY_CLIENT_ID,
        "idtyp": "app", "ver": "1.0", "uti": secrets.token_urlsafe(16),
    }
    signing_input = ".".join(_b64encode(json.dumps(part, separators=(",", ":")).encode("utf-8"))
                             for part in (_HEADER, claims))
    token = f"{signing_input}.{_b64encode(_signature(secret, signing_input))}"
    return IssuedToken(token, expires_on)


def _json_object(segment: str) -> Mapping[str, Any]:
    value = json.loads(_b64decode(segment))
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def _signed_claims(secret: bytes, token: str) -> Optional[Mapping[str, Any]]:
    """The claims of a token signed with ``secret``, else None; whether they hold *now* is checked
    by the caller."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    header_segment, claims_segment, signature_segment = parts
    try:
        header = _json_object(header_segment)
        # The algorithm is checked before the signature: a token must not choose how it is verified.
        if header.get("alg") != ALGORITHM:
            return None
        signature = _b64decode(signature_segment)
        if not hmac.compare_digest(signature, _signature(secret, f"{header_segment}.{claims_segment}")):
            return None
        return MappingProxyType(dict(_json_object(claims_segment)))  # read-only: it is shared
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
        return None


#: the same, kept for the tokens seen last: a client sends one token with every request until it
#: expires, and checking it again cost a third of an ARM request's own time. Only tokens of a
#: sane size are kept, so that junk in Authorization headers cannot fill the memory.
_recent_signed_claims = functools.lru_cache(maxsize=256)(_signed_claims)
_KEPT_TOKEN_CHARS = 4096


def verify_token(secret: bytes, token: str, *, now: Optional[float] = None) -> Optional[Mapping[str, Any]]:
    """The claims of a token this service issued and that is valid now, else None."""
    check = _recent_signed_claims if len(token) <= _KEPT_TOKEN_CHARS else _signed_claims
    claims = check(secret, token)
    if claims is None:
        return None
    moment = now if now is not None else time.time()
    try:
        if not float(claims["exp"]) > moment or float(claims["nbf"]) > moment:
            return None
    except (KeyError, TypeError, ValueError):
        return None
    audience = claims.get("aud")
    if not isinstance(audience, str) or audience not in AUDIENCES:
        return None
    if claims.get("iss") != ISSUER or claims.get("tid") != TENANT_ID:
        return None
    return claims
