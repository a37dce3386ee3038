"""What the tests of the local MLflow tracking server share: MLflow's REST API through the
service's authenticated front (the ``tracked`` service is tests/conftest.py's)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import requests
from azure.mgmt.batchai import BatchAI

from horovod_batchai.local import LocalService

from jobs_support import SUBSCRIPTION, make_lab
from sweeps_support import Sweeps

__all__ = ["mlflow_api", "sweep_lab"]


def mlflow_api(svc: LocalService, method: str, path: str, **kwargs: Any) -> Any:
    """``/api/2.0/mlflow/<path>`` of the service's tracking server, answered 200."""
    token = svc.credential().get_token("https://management.azure.com/.default").token
    answer = requests.request(method, f"{svc.endpoint}/_mlflow/api/2.0/mlflow/{path}", timeout=300,
                              headers={"Authorization": f"Bearer {token}"}, verify=str(svc.info.ca_cert), **kwargs)
    assert answer.status_code == 200, answer.text
    return answer.json()


@contextmanager
def sweep_lab(svc: LocalService, trial: str) -> Iterator[tuple[Any, Sweeps]]:
    """A 2-node cluster on ``svc`` with ``trial`` uploaded as ``sweep/trial.py``, and the sweeps'
    REST client (closed after)."""
    with BatchAI(svc.credential(), SUBSCRIPTION, base_url=svc.endpoint,
                 connection_verify=str(svc.info.ca_cert)) as batchai:
        lab = make_lab(svc, batchai)
        lab.create_cluster(nodes=2)
        lab.upload("sweep/trial.py", trial)
        sweeps = Sweeps(svc)
        try:
            yield lab, sweeps
        finally:
            sweeps.close()
