"""The SDK's whole flow under the lowest and the highest release of each Azure library setup.py allows
(azure-mgmt-resource, azure-mgmt-storage, azure-storage-file-share, azure-identity, azure-core), each
combination in its own virtualenv from PyPI, against a fresh local service: the service accepts the
api-versions those releases send, and the SDK works with each release's models."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from client_venvs import REPO, VERSION_RANGE_ENDS, ensure, version_range_end
from horovod_batchai.local import LocalService
from horovod_batchai.local.core.jwt_tokens import TENANT_ID

from service_support import FAST, SUBSCRIPTION

FLOW = Path(__file__).with_name("sdk_flow.py")

#: what each end's management clients send by default (their generated configurations say so).
API_VERSIONS = {
    "lowest": {"resources": "2022-09-01", "storage": "2022-09-01"},
    "highest": {"resources": "2025-04-01", "storage": "2026-09-01"},
}


@pytest.mark.slow
@pytest.mark.parametrize("end", sorted(VERSION_RANGE_ENDS))
def test_the_sdk_flow_works_at_each_end_of_the_declared_ranges(end: str, tmp_path: Path) -> None:
    venv = ensure(version_range_end(end))
    with LocalService(tmp_path / "state", settings=FAST) as svc:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "HOROVOD_BATCHAI_"))}
        env["PYTHONPATH"] = str(REPO)  # the SDK from this checkout, its dependencies from the venv
        result = subprocess.run([str(venv / "bin" / "python"), str(FLOW), "--state-dir", str(svc.state_dir),
                                 "--name", end], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{end}: {result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["versions"] == VERSION_RANGE_ENDS[end]
    assert report["api_versions"] == API_VERSIONS[end]
    # azure-mgmt-resource 23 still ships SubscriptionClient (25 does not): it lists the local ones.
    assert report["subscriptions"] == ([SUBSCRIPTION, TENANT_ID] if end == "lowest" else None)
