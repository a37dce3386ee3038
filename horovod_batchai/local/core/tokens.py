"""Bearer tokens for the local management plane.

The service keeps a random signing secret in its state directory (mode 0600). :class:`LocalCredential`
is the azure-core ``TokenCredential`` that SDK clients use against the local service: it reads the
secret and issues short-lived JWTs signed with it (``jwt_tokens``), the same tokens the service's
managed-identity endpoint gives other clients; the service accepts only tokens it can verify.
Anyone who can read the state directory can act on the local service, which is the same trust
boundary as the state itself.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any, Optional

from azure.core.credentials import AccessToken, AccessTokenInfo

from .jwt_tokens import DEFAULT_AUDIENCE, LIFETIME_S, issue_token, normalize_audience
from .jwt_tokens import verify_token as verify_jwt

__all__ = ["LocalCredential", "ensure_secret", "ensure_random_secret_file", "verify_token"]

SECRET_FILE = "token-secret"
TOKEN_LIFETIME_S = LIFETIME_S


def ensure_random_secret_file(path: Path) -> Path:
    """``path``, holding 32 random bytes in hex, created 0600 on first use."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it first; use theirs
        else:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_hex(32))
    return path


def ensure_secret(state_dir: Path) -> bytes:
    return bytes.fromhex(ensure_random_secret_file(Path(state_dir) / SECRET_FILE).read_text().strip())


def mint_token(secret: bytes, *, audience: str = DEFAULT_AUDIENCE, lifetime_s: int = TOKEN_LIFETIME_S,
               now: Optional[float] = None) -> AccessToken:
    issued = issue_token(secret, audience=audience, lifetime_s=lifetime_s, now=now)
    return AccessToken(issued.token, issued.expires_on)


def verify_token(secret: bytes, token: str, *, now: Optional[float] = None) -> bool:
    """True for a token this service issued that is valid now (see ``jwt_tokens``)."""
    return verify_jwt(secret, token, now=now) is not None


class LocalCredential:
    """A ``TokenCredential`` for the local service whose state lives in ``state_dir``."""

    def __init__(self, state_dir: Path) -> None:
        self._state_dir = Path(state_dir)

    def __repr__(self) -> str:
        return f"LocalCredential(state_dir={str(self._state_dir)!r})"

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        # A token for the ARM audience the scope names (clients ask for management.azure.com or
        # management.core.windows.net); the local service is ARM, whatever the scope says.
        audience = next((a for a in map(normalize_audience, scopes) if a), DEFAULT_AUDIENCE)
        return mint_token(ensure_secret(self._state_dir), audience=audience)

    def get_token_info(self, *scopes: str, options: Any = None) -> AccessTokenInfo:
        token = self.get_token(*scopes)
        return AccessTokenInfo(token.token, token.expires_on)

    def close(self) -> None:
        pass

    def __enter__(self) -> "LocalCredential":
        return self

    def __exit__(self, *args: Any) -> None:
        pass
