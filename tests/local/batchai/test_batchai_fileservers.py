"""File servers: a local file server is a directory in the state dir, created and removed with it."""
from __future__ import annotations

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.batchai import models as m

from batchai_helpers import RG, WS, make_workspace, raw, ws_path

FS_PATH = ws_path() + "/fileServers/nfs"


def _params(**user: str) -> m.FileServerCreateParameters:
    return m.FileServerCreateParameters(
        vm_size="STANDARD_NC6",
        ssh_configuration=m.SshConfiguration(user_account_settings=m.UserAccountSettings(
            admin_user_name="admin_user_name", **(user or {"admin_user_password": "fs-Pa55word"}))),
        data_disks=m.DataDisks(disk_size_in_gb=10, disk_count=2, storage_account_type="Standard_LRS"))


def test_create_get_list_delete(service, resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    first = raw(batchai, "PUT", FS_PATH, json=_params().serialize())
    assert first.status_code == 202
    assert raw(batchai, "GET", first.headers["Azure-AsyncOperation"], api_version=None).json()["status"] == "Succeeded"
    server = batchai.file_servers.begin_create(RG, WS, "nfs", _params()).result()  # same settings: accepted
    assert server.provisioning_state == "succeeded"
    assert server.mount_settings.file_server_public_ip == "127.0.0.1"
    assert server.data_disks.caching_type == "none"  # the spec's default
    body = raw(batchai, "GET", FS_PATH).json()
    assert body["type"] == "Microsoft.BatchAI/workspaces/fileservers"
    assert body["properties"]["sshConfiguration"] == {"userAccountSettings": {"adminUserName": "admin_user_name"}}
    assert "fs-Pa55word" not in str(body)
    data_dir = service.context.fileserver_dir(server.id)
    assert data_dir.is_dir()
    assert [s.name for s in batchai.file_servers.list_by_workspace(RG, WS)] == ["nfs"]
    deleted = raw(batchai, "DELETE", FS_PATH)
    assert deleted.status_code == 202
    assert not data_dir.exists()
    missing = raw(batchai, "GET", FS_PATH)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "FileServerNotFound"
    assert raw(batchai, "DELETE", FS_PATH).status_code == 204


def test_create_validates_and_conflicts(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    no_disks = _params().serialize()
    del no_disks["properties"]["dataDisks"]
    answer = raw(batchai, "PUT", FS_PATH, json=no_disks)
    assert answer.status_code == 400 and "properties.dataDisks" in answer.json()["error"]["message"]
    bad_size = _params().serialize()
    bad_size["properties"]["vmSize"] = "Standard_Imaginary"
    answer = raw(batchai, "PUT", FS_PATH, json=bad_size)
    assert answer.status_code == 400 and "properties.vmSize" in answer.json()["error"]["message"]
    assert raw(batchai, "GET", FS_PATH).status_code == 404  # nothing was stored
    batchai.file_servers.begin_create(RG, WS, "nfs", _params()).result()
    changed = _params()
    changed.data_disks.disk_count = 4
    with pytest.raises(HttpResponseError) as err:
        batchai.file_servers.begin_create(RG, WS, "nfs", changed).result()
    assert err.value.status_code == 409 and "properties.dataDisks.diskCount" in err.value.error.message
