"""What the tests of the local MLflow tracking server share: a service that tracks its jobs, and
MLflow's REST API through the service's authenticated front."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Iterator

import pytest
import requests

from horovod_batchai.local import LocalService

from service_support import FAST

__all__ = ["tracked", "mlflow_api"]


@pytest.fixture
def tracked(tmp_path: Path) -> Iterator[LocalService]:
    """A service with MLflow tracking on (the suite turns it off elsewhere)."""
    svc = LocalService(tmp_path / "state", settings=dataclasses.replace(FAST, mlflow_tracking=True)).start()
    try:
        yield svc
    finally:
        svc.stop()


def mlflow_api(svc: LocalService, method: str, path: str, **kwargs: Any) -> Any:
    """``/api/2.0/mlflow/<path>`` of the service's tracking server, answered 200."""
    token = svc.credential().get_token("https://management.azure.com/.default").token
    answer = requests.request(method, f"{svc.endpoint}/_mlflow/api/2.0/mlflow/{path}", timeout=300,
                              headers={"Authorization": f"Bearer {token}"}, verify=str(svc.info.ca_cert), **kwargs)
    assert answer.status_code == 200, answer.text
    return answer.json()
