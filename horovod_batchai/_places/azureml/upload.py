"""The Docker build context's upload to the workspace's default blob datastore, sent through
the target's own azure-storage-blob client (its transport, retries, proxy and credential).

azure-ai-ml uploads a local build context with blob clients it builds without the caller's
client options; this module does what it does -- read ``workspaceblobstore``, ask it for a
short-lived secret, skip a context already uploaded whole, upload, mark the upload complete --
and hands azure-ai-ml the context's URI, which it registers without uploading anything.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from ..._models.errors import ConflictError, azure_errors
from .datastore_storage import account_url, datastore_secret

if TYPE_CHECKING:
    from azure.ai.ml import MLClient

    from ..connection import Connection

__all__ = ["DEFAULT_BLOB_DATASTORE", "upload_context"]

log = logging.getLogger(__name__)

#: the datastore azure-ai-ml uploads local artifacts to unless told otherwise
DEFAULT_BLOB_DATASTORE = "workspaceblobstore"
#: azure-ai-ml's layout: new uploads under LocalUpload/<hash>/, older ones under az-ml-artifacts/<hash>/
UPLOAD_ROOT, LEGACY_ROOT = "LocalUpload", "az-ml-artifacts"
#: the metadata azure-ai-ml sets on an upload's first file once every file is in place
COMPLETED = {"upload_status": "completed"}


def upload_context(ml: "MLClient", connection: "Connection", files: Mapping[str, bytes], *, name: str, digest: str) -> str:
    """Upload ``files`` (relative path -> bytes) to ``LocalUpload/<digest>/<name>/`` in the
    workspace's default blob datastore, unless an earlier upload completed there; return that
    folder's URI (with its trailing '/', as Azure ML expects a build context)."""
    from azure.ai.ml.entities import AzureBlobDatastore, NoneCredentialConfiguration
    from azure.storage.blob import ContainerClient

    resource = f"{connection.workspace}/datastores/{DEFAULT_BLOB_DATASTORE}"
    with azure_errors("reading datastore", resource):
        datastore = ml.datastores.get(DEFAULT_BLOB_DATASTORE)
    if not isinstance(datastore, AzureBlobDatastore):
        raise ConflictError(f"datastore {DEFAULT_BLOB_DATASTORE!r} of workspace {connection.workspace!r} is not a blob "
                            f"container ({type(datastore).__name__}): the job's build context cannot be uploaded to "
                            "it", resource=resource)
    credential: Any
    if isinstance(datastore.credentials, NoneCredentialConfiguration):
        credential = connection.credential()  # identity-based: the caller's own identity writes the blobs
    else:
        try:
            credential = datastore_secret(ml, DEFAULT_BLOB_DATASTORE)
        except HttpResponseError as err:
            # As azure-ai-ml does: without the right to read secrets, try the caller's identity.
            log.info("no secret for datastore %s (%s); uploading with the caller's identity",
                     DEFAULT_BLOB_DATASTORE, getattr(err, "status_code", None))
            credential = None
        credential = credential or connection.credential()
    url = account_url(datastore, "blob")
    connection.check_data_url(url, f"datastore {DEFAULT_BLOB_DATASTORE!r}'s blob endpoint")
    folder = f"{UPLOAD_ROOT}/{digest}/{name}/"
    uri = f"{url}/{datastore.container_name}/{folder}"
    where = f"{datastore.account_name}/{datastore.container_name}/{folder}"
    ordered = sorted(files)
    indicator = folder + ordered[0]
    with ContainerClient(url, datastore.container_name, credential=credential,
                         **connection.data_plane_options()) as container:
        with azure_errors("uploading the build context to", where):
            overwrite = False
            try:
                metadata = container.get_blob_client(indicator).get_blob_properties().metadata or {}
            except ResourceNotFoundError:
                metadata = None
            if metadata is not None:
                legacy = folder.replace(UPLOAD_ROOT, LEGACY_ROOT, 1)
                if _completed(container, legacy + ordered[0]):
                    log.info("the build context was uploaded already, under %s", legacy)
                    return f"{url}/{datastore.container_name}/{legacy}"
                if COMPLETED.items() <= metadata.items():
                    log.info("the build context was uploaded already (%s)", uri)
                    return uri
                overwrite = True  # a partial upload: written again, whole
            log.info("uploading the build context (%d files) to %s", len(ordered), uri)
            for relative in ordered:
                data = files[relative]
                container.upload_blob(folder + relative, data, overwrite=overwrite, validate_content=bool(data))
            container.get_blob_client(indicator).set_blob_metadata({**COMPLETED, "name": name, "version": digest})
    return uri


def _completed(container: Any, blob: str) -> bool:
    """Whether ``blob`` exists and marks an upload completed (azure-ai-ml's legacy location)."""
    try:
        metadata = container.get_blob_client(blob).get_blob_properties().metadata or {}
    except ResourceNotFoundError:
        return False
    return COMPLETED.items() <= metadata.items()
