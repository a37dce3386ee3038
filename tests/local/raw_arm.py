"""Plain HTTPS requests to the local service, for what Microsoft's clients will not send.

The SDK clients validate names and types and retry failures before a request leaves the process,
so tests of the service's own checks (bad JSON, bad names, missing tokens, fault injection) send
raw requests with ``requests`` instead, over the same TLS connection the clients use.
"""
from __future__ import annotations

from typing import Any, Optional

import requests

from horovod_batchai.local import LocalService

__all__ = ["RawArm", "RESOURCES_VERSION", "STORAGE_VERSION"]

RESOURCES_VERSION = "2018-05-01"   # as recorded
STORAGE_VERSION = "2018-07-01"     # as recorded


class RawArm:
    """A ``requests`` session that trusts the service's certificate and carries a valid token."""

    def __init__(self, service: LocalService) -> None:
        self.endpoint = service.endpoint
        self.session = requests.Session()
        # Passed with every request: a session-level verify loses to $REQUESTS_CA_BUNDLE.
        self.verify = str(service.info.ca_cert)
        self.token = service.credential().get_token("https://management.azure.com/.default").token

    def request(self, method: str, path: str, *, api_version: Optional[str] = RESOURCES_VERSION,
                json: Any = None, data: Optional[bytes] = None, token: Optional[str] = "valid",
                headers: Optional[dict[str, str]] = None, **kwargs: Any) -> requests.Response:
        """``path`` is a path under the endpoint or a whole URL (a Location header). ``token="valid"`` sends this service's token, ``None`` sends no Authorization header,
        any other string is sent as the bearer token."""
        all_headers = dict(headers or {})
        if token is not None:
            all_headers["Authorization"] = f"Bearer {self.token if token == 'valid' else token}"
        params = {"api-version": api_version} if api_version is not None else None
        url = path if path.startswith("https://") else self.endpoint + path
        return self.session.request(method, url, params=params, json=json, data=data, headers=all_headers,
                                    timeout=30, verify=self.verify, **kwargs)

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "RawArm":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
