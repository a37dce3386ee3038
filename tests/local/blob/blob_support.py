"""What the blob tests share: skipping where Node.js is missing, and clients for an Azurite."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

needs_node = pytest.mark.skipif(shutil.which("node") is None,
                                reason="Node.js is not installed here (make install says how to get it)")


def blob_client(account_url: str, account: str, key: str, cert: Path) -> BlobServiceClient:
    """azure-storage-blob's client for one account of a local blob endpoint."""
    return BlobServiceClient(account_url, credential={"account_name": account, "account_key": key},
                             connection_verify=str(cert))
