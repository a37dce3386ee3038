"""Bearer tokens for the local management plane.

The service keeps a random signing secret in its state directory (mode 0600). :class:`LocalCredential`
is the azure-core ``TokenCredential`` that SDK clients use against the local service: it reads the
secret and mints short-lived HMAC-signed tokens; the service accepts only tokens it can verify.
Anyone who can read the state directory can act on the local service, which is the same trust
boundary as the state itself.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Optional

from azure.core.credentials import AccessToken, AccessTokenInfo

__all__ = ["LocalCredential", "ensure_secret", "verify_token"]

SECRET_FILE = "token-secret"
TOKEN_LIFETIME_S = 3600


def ensure_secret(state_dir: Path) -> bytes:
    path = Path(state_dir) / SECRET_FILE
    if not path.exists():
        Path(state_dir).mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it first; use theirs
        else:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text().strip())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _sign(secret: bytes, payload: str) -> str:
    return _b64(hmac.new(secret, payload.encode("ascii"), hashlib.sha256).digest())


def mint_token(secret: bytes, *, lifetime_s: int = TOKEN_LIFETIME_S, now: Optional[float] = None) -> AccessToken:
    expires_on = int((now if now is not None else time.time()) + lifetime_s)
    payload = _b64(json.dumps({"sub": "local-user", "exp": expires_on}).encode())
    return AccessToken(f"{payload}.{_sign(secret, payload)}", expires_on)


def verify_token(secret: bytes, token: str, *, now: Optional[float] = None) -> bool:
    """True for a token this service minted that has not expired."""
    payload, _, signature = token.partition(".")
    if not payload or not signature or not hmac.compare_digest(signature, _sign(secret, payload)):
        return False
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"]) > (now if now is not None else time.time())
    except (ValueError, KeyError, TypeError):
        return False


class LocalCredential:
    """A ``TokenCredential`` for the local service whose state lives in ``state_dir``."""

    def __init__(self, state_dir: Path) -> None:
        self._state_dir = Path(state_dir)

    def __repr__(self) -> str:
        return f"LocalCredential(state_dir={str(self._state_dir)!r})"

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return mint_token(ensure_secret(self._state_dir))

    def get_token_info(self, *scopes: str, options: Any = None) -> AccessTokenInfo:
        token = self.get_token(*scopes)
        return AccessTokenInfo(token.token, token.expires_on)

    def close(self) -> None:
        pass

    def __enter__(self) -> "LocalCredential":
        return self

    def __exit__(self, *args: Any) -> None:
        pass
