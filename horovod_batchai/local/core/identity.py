"""The local service's managed identity: a token endpoint in the protocol Azure App Service gives
its apps, which both the Azure CLI (``az login --identity``, through MSAL) and azure-identity
(``ManagedIdentityCredential``, ``DefaultAzureCredential``) speak when two environment variables
name it::

    IDENTITY_ENDPOINT=https://127.0.0.1:<port>/msi/token
    IDENTITY_HEADER=<the contents of <state dir>/identity-header>

    GET /msi/token?api-version=2019-08-01&resource=https://management.core.windows.net/
    X-IDENTITY-HEADER: <IDENTITY_HEADER>
    -> 200 {"access_token": <JWT>, "expires_on": "<epoch seconds>", "resource": ..., "token_type": "Bearer",
            "client_id": ...}

The identity header is the credential: a random value the service keeps in its state directory
(mode 0600, like the token secret), compared in constant time and never logged. Errors are answered
as App Service does, ``{"statusCode": ..., "message": ...}``; MSAL and azure-identity show the
message. There is one identity, system-assigned: a request for a user-assigned one (``client_id``,
``object_id``, ``mi_res_id``, ``principal_id``) is refused, naming the parameter.
"""
from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any

from werkzeug.wrappers import Request, Response

from .jwt_tokens import AUDIENCES, IDENTITY_CLIENT_ID, issue_token, normalize_audience
from .routing import json_response
from .tokens import ensure_random_secret_file

__all__ = ["TOKEN_PATH", "API_VERSION", "IDENTITY_HEADER_FILE", "ensure_identity_header", "token_endpoint"]

TOKEN_PATH = "/msi/token"
API_VERSION = "2019-08-01"
IDENTITY_HEADER_FILE = "identity-header"
_USER_ASSIGNED = ("client_id", "object_id", "mi_res_id", "principal_id")


def ensure_identity_header(state_dir: Path) -> Path:
    """The file holding the identity header's value, created (0600, random) on first use."""
    return ensure_random_secret_file(Path(state_dir) / IDENTITY_HEADER_FILE)


def _error(status: int, message: str) -> Response:
    return json_response({"statusCode": status, "message": message}, status)


def token_endpoint(request: Request, state_dir: Path, secret: bytes) -> Response:
    """Answer one request to :data:`TOKEN_PATH`."""
    if request.method != "GET":
        return _error(405, f"The token endpoint answers GET, not {request.method}.")
    expected = ensure_identity_header(state_dir).read_text().strip()
    given = request.headers.get("X-IDENTITY-HEADER", "")
    if not given or not hmac.compare_digest(given.encode(), expected.encode()):
        return _error(401, "The X-IDENTITY-HEADER header is missing or wrong: send the value of IDENTITY_HEADER "
                           "that `horovod-batchai local az-env` sets.")
    version = request.args.get("api-version", "")
    if version != API_VERSION:
        return _error(400, f"The api-version '{version}' is not supported by the token endpoint; use '{API_VERSION}'.")
    resource = request.args.get("resource", "")
    audience = normalize_audience(resource)
    if audience is None:
        served = " or ".join(sorted(AUDIENCES))
        return _error(400, f"The resource '{resource[:200]}' is not served here; ask for {served}.")
    for name in _USER_ASSIGNED:
        if request.args.get(name):
            return _error(400, f"The parameter '{name}' asks for a user-assigned identity; the local service has only "
                               "its system-assigned identity: leave it out.")
    issued = issue_token(secret, audience=audience)
    body: dict[str, Any] = {"access_token": issued.token, "expires_on": str(issued.expires_on),
                            "resource": resource, "token_type": "Bearer", "client_id": IDENTITY_CLIENT_ID}
    return json_response(body, headers={"Cache-Control": "no-store"})
