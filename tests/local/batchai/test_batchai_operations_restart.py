"""Long-running operations a killed service left ``InProgress`` end when it starts again: a create
whose resource was stored succeeds, one whose resource was not fails saying to send it again, a
delete is carried out to its end. A client polling one never polls forever."""
from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

from azure.mgmt.batchai import BatchAI
from azure.mgmt.resource.resources import ResourceManagementClient

from batchai_helpers import RG, WS, make_cluster, make_workspace, ws_path
from raw_arm import RawArm
from service_support import FAST, SUBSCRIPTION, kill_daemon
from horovod_batchai.local import LocalCredential, LocalService, ensure_running

API = "2018-05-01"


def _interrupt(db: sqlite3.Connection, kind: str, resource_id: str) -> str:
    """An operation row as a kill inside its request leaves it: started, never finished."""
    op_id = str(uuid.uuid4())
    db.execute("INSERT INTO batchai_operations (id, subscription, provider, location, resource_id, kind, status,"
               " start_time) VALUES (?, ?, 'Microsoft.BatchAI', 'northeurope', ?, ?, 'InProgress',"
               " '2026-01-01T00:00:00.000Z')", (op_id, SUBSCRIPTION, resource_id, kind))
    return op_id


def test_operations_a_killed_service_left_in_progress_end_at_start_up(tmp_path: Path):
    state = tmp_path / "state"
    info = ensure_running(state)  # a daemon, killed with -9 below
    try:
        kwargs = {"base_url": info.endpoint, "connection_verify": str(info.ca_cert)}
        credential = LocalCredential(state)
        with ResourceManagementClient(credential, SUBSCRIPTION, **kwargs) as resources, \
                BatchAI(credential, SUBSCRIPTION, **kwargs) as batchai:
            make_workspace(resources, batchai)
            make_cluster(batchai, "kept", mounts=False)
            make_cluster(batchai, "doomed", mounts=False)
    finally:
        kill_daemon(info.pid)

    clusters = ws_path() + "/clusters/"
    db = sqlite3.connect(state / "state.db", isolation_level=None)
    try:
        created = _interrupt(db, "clusters/create", clusters + "kept")     # killed after storing the cluster
        lost = _interrupt(db, "clusters/create", clusters + "never")       # killed before storing it
        deleted = _interrupt(db, "clusters/delete", clusters + "doomed")   # killed halfway through the delete
        db.execute("UPDATE resources SET body = json_set(body, '$.properties.provisioningState', 'deleting')"
                   " WHERE key = lower(?)", (clusters + "doomed",))
    finally:
        db.close()

    service = LocalService(state, settings=FAST).start()
    try:
        raw = RawArm(service)

        def poll(op_id: str) -> dict:
            answer = raw.request("GET", f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.BatchAI/locations/"
                                        f"northeurope/operationresults/{op_id}", api_version=API)
            assert answer.status_code == 200, answer.text
            return answer.json()

        assert poll(created)["status"] == "Succeeded"
        failed = poll(lost)
        assert failed["status"] == "Failed" and failed["error"]["code"] == "OperationInterrupted"
        assert "send the request again" in failed["error"]["message"]
        assert poll(deleted)["status"] == "Succeeded"
        with BatchAI(service.credential(), SUBSCRIPTION, base_url=service.endpoint,
                     connection_verify=str(service.info.ca_cert)) as batchai:
            assert sorted(c.name for c in batchai.clusters.list_by_workspace(RG, WS)) == ["kept"]
            assert batchai.clusters.get(RG, WS, "kept").provisioning_state == "succeeded"
    finally:
        service.stop()
