"""``GET /metadata/endpoints``: the cloud's own description of where its services are, which
``az cloud register --endpoint-resource-manager URL`` (without ``--skip-endpoint-discovery``),
Azure PowerShell's ``Add-AzEnvironment -AutoDiscover`` and Azure Stack tooling read. ARM answers it
without authentication.

Its shape depends on the api-version the client sends:

* ``1.0`` and ``2015-01-01`` (Azure Stack's tools): one flat object,
  ``{"galleryEndpoint", "graphEndpoint", "portalEndpoint", "authentication": {"loginEndpoint", "audiences"}}``.
* ``2019-05-01``, ``2019-10-01`` and ``2020-06-01`` (azure-ai-ml, Azure PowerShell, Terraform's
  helpers, ``ARM_CLOUD_METADATA_URL``): a JSON array of clouds, here the one local cloud.
* ``2022-09-01`` (azure-cli): that cloud as a single object.

A cloud names its ARM endpoint (``resourceManager``), its token authority
(``authentication.loginEndpoint``) and the audience of ARM tokens (``authentication.audiences[0]``,
which the CLI passes to the token endpoint as ``resource``). Locally the authority is the service
itself: tokens come from its managed identity (see ``core/identity.py``), not from Azure AD.
"""
from __future__ import annotations

from typing import Any

from ..core.jwt_tokens import AUDIENCES, DEFAULT_AUDIENCE

__all__ = ["METADATA_PATH", "API_VERSIONS", "CLOUD_NAME", "metadata_body"]

METADATA_PATH = "/metadata/endpoints"
CLOUD_NAME = "HorovodBatchAILocal"
_FLAT, _ARRAY, _OBJECT = "flat", "array", "object"
API_VERSIONS = {"1.0": _FLAT, "2015-01-01": _FLAT, "2019-05-01": _ARRAY, "2019-10-01": _ARRAY,
                "2020-06-01": _ARRAY, "2022-09-01": _OBJECT}


def _cloud(endpoint: str) -> dict[str, Any]:
    audiences = [DEFAULT_AUDIENCE, *sorted(AUDIENCES - {DEFAULT_AUDIENCE})]
    return {
        "name": CLOUD_NAME,
        "resourceManager": endpoint + "/",
        "portal": endpoint + "/",
        "authentication": {"loginEndpoint": endpoint + "/", "audiences": audiences},
        # Azure's: file share URLs in Batch AI mount volumes keep Azure's form
        # (https://<account>.file.core.windows.net/<share>, as job.json has them), which the service maps
        # to its own shares by account name. Data-plane clients reach the shares path-style at
        # {endpoint}/<account> through a connection string (see `horovod-batchai local az-env`).
        "suffixes": {"storage": "core.windows.net"},
    }


def metadata_body(api_version: str, endpoint: str) -> Any:
    """The document for ``api_version`` (one of :data:`API_VERSIONS`) of the service at ``endpoint``."""
    shape = API_VERSIONS[api_version]
    cloud = _cloud(endpoint.rstrip("/"))
    if shape == _FLAT:
        return {"galleryEndpoint": cloud["portal"], "graphEndpoint": cloud["portal"], "portalEndpoint": cloud["portal"],
                "authentication": {"loginEndpoint": cloud["authentication"]["loginEndpoint"],
                                   "audiences": cloud["authentication"]["audiences"]}}
    return [cloud] if shape == _ARRAY else cloud
