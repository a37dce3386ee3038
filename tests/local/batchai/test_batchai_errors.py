"""Bad input to Microsoft.BatchAI: each class of mistake gets its status and code, a message naming the
field and the valid form, and leaves the store as it was. Sent raw (through the client's own
pipeline) where the client's models would refuse to build the request."""
from __future__ import annotations

import pytest

from batchai_helpers import EXP, job_params, make_cluster, make_workspace, raw, ws_path
from raw_arm import RawArm

CLUSTER = ws_path() + "/clusters/cluster"
JOB = ws_path() + f"/experiments/{EXP}/jobs/job"


@pytest.fixture
def cluster(resources, batchai):
    make_workspace(resources, batchai)
    return make_cluster(batchai, nodes=2, mounts=False)


def _job_body(cluster_id: str, **properties):
    body = job_params(cluster_id).serialize()
    body["properties"].update(properties)
    return body


def _refused(batchai, method: str, path: str, body, status: int, code: str, *fragments: str) -> None:
    answer = raw(batchai, method, path, json=body)
    assert answer.status_code == status, answer.text()
    error = answer.json()["error"]
    assert error["code"] == code, error
    for fragment in fragments:
        assert fragment in error["message"], (fragment, error["message"])


@pytest.mark.parametrize("change, field, form", [
    ({"nodeCount": 3}, "properties.nodeCount", "between 1 and 2"),
    ({"nodeCount": 0}, "properties.nodeCount", "an integer >= 1"),
    ({"nodeCount": "two"}, "properties.nodeCount", "an integer"),
    ({"schedulingPriority": "urgent"}, "properties.schedulingPriority", "'low', 'normal', 'high'"),
    ({"stdOutErrPathPrefix": None}, "properties.stdOutErrPathPrefix", "required"),
    ({"horovodSettings": {"pythonScriptFilePath": "train.py"}}, "properties", "exactly one toolkit"),
    ({"horovodSettings": {}, "customToolkitSettings": None}, "properties.horovodSettings.pythonScriptFilePath",
     "required"),
    ({"constraints": {"maxWallClockTime": "a week"}}, "properties.constraints.maxWallClockTime", "ISO 8601"),
    ({"outputDirectories": [{"id": "stdouterr", "pathPrefix": "$AZ_BATCHAI_JOB_TEMP"}]},
     "properties.outputDirectories[0].id", "reserved"),
    ({"environmentVariables": [{"name": "1BAD", "value": "x"}]}, "properties.environmentVariables[0].name",
     "environment variable name"),
    ({"cluster": {"id": "/subscriptions/x/clusters/c"}}, "properties.cluster.id", "cluster resource id"),
    ({"nodeCountt": 2}, "properties.nodeCountt", "is not known; properties takes schedulingPriority, cluster"),
    ({"containerSettings": {"imageSourceRegistry": {"image": "ubuntu", "serverUrl": "::::"}}},
     "properties.containerSettings.imageSourceRegistry.serverUrl", "a registry address like"),
    ({"containerSettings": {"imageSourceRegistry": {"image": "ubuntu"}, "shmSize": "lots"}},
     "properties.containerSettings.shmSize", "a size docker accepts for --shm-size"),
    ({"containerSettings": {"imageSourceRegistry": {"image": "ubuntu", "serverUrll": "x"}}},
     "properties.containerSettings.imageSourceRegistry.serverUrll", "is not known"),
])
def test_bad_job_properties_are_400_naming_the_field(cluster, batchai, change, field, form):
    body = _job_body(cluster.id, **change)
    body["properties"] = {k: v for k, v in body["properties"].items() if v is not None}
    answer = raw(batchai, "PUT", JOB, json=body)
    assert answer.status_code == 400, answer.text()
    message = answer.json()["error"]["message"]
    assert field in message and form in message, message
    assert raw(batchai, "GET", JOB).status_code == 404  # nothing stored


@pytest.mark.parametrize("toolkit", [
    {"cntkSettings": {"configFilePath": "c.cntk"}}, {"tensorFlowSettings": {"pythonScriptFilePath": "t.py"}},
    {"pyTorchSettings": {"pythonScriptFilePath": "p.py"}}, {"caffeSettings": {"configFilePath": "s.prototxt"}},
    {"caffe2Settings": {"pythonScriptFilePath": "c.py"}}, {"chainerSettings": {"pythonScriptFilePath": "c.py"}},
])
def test_toolkits_without_a_local_runner_are_refused(cluster, batchai, toolkit):
    body = _job_body(cluster.id, **toolkit)
    del body["properties"]["customToolkitSettings"]
    _refused(batchai, "PUT", JOB, body, 400, "UnsupportedToolkit", next(iter(toolkit)), "horovodSettings")


def test_job_on_a_missing_cluster_is_404_and_on_a_zero_node_cluster_400(cluster, batchai):
    _refused(batchai, "PUT", JOB, _job_body(cluster.id[:-len("cluster")] + "nocluster"), 404, "ClusterNotFound")
    make_cluster(batchai, "empty", nodes=0, mounts=False)
    _refused(batchai, "PUT", JOB, _job_body(cluster.id[:-len("cluster")] + "empty"), 400, "InvalidParameter",
             "scaled to 0 nodes", "resize")
    _refused(batchai, "PUT", ws_path() + "/experiments/noexp/jobs/job", _job_body(cluster.id), 404,
             "ExperimentNotFound")


@pytest.mark.parametrize("change, code, field", [
    ({"vmSize": "Standard_Imaginary"}, "InvalidParameter", "properties.vmSize"),
    ({"vmSize": "Standard_DS2_v2"}, "InvalidParameter", "premium-storage"),
    ({"vmPriority": "spot"}, "InvalidParameter", "properties.vmPriority"),
    ({"userAccountSettings": None}, "MissingRequiredProperty", "properties.userAccountSettings"),
    ({"userAccountSettings": {"adminUserName": "u"}}, "MissingRequiredProperty", "adminUserPassword"),
    ({"scaleSettings": {}}, "InvalidParameter", "exactly one of 'manual' or 'autoScale'"),
    ({"nodeSetup": {"mountVolumes": {"azureFileShares": [{"accountName": "a", "relativeMountPath": "x",
                                                          "credentials": {"accountKey": "k"}}]}}},
     "MissingRequiredProperty", "properties.nodeSetup.mountVolumes.azureFileShares[0].azureFileUrl"),
    ({"nodeSetup": {"mountVolumes": {"azureFileShares": [{"accountName": "a", "relativeMountPath": "../up",
                                                          "azureFileUrl": "https://a.file.core.windows.net/s",
                                                          "credentials": {"accountKey": "k"}}]}}},
     "InvalidParameter", "relativeMountPath"),
    ({"nodeSetup": {"mountVolumes": {"azureFileShares": [{"accountName": "a", "relativeMountPath": "x",
                                                          "azureFileUrl": "https://example.com/a/s/extra",
                                                          "credentials": {"accountKey": "k"}}]}}},
     "InvalidParameter", "https://<account>.file.core.windows.net/<share>"),
    ({"nodeSetup": {"mountVolumes": {"azureFileShares": [{"accountName": "a", "relativeMountPath": "x",
                                                          "azureFileUrl": "https://a.file.core.windows.net/s",
                                                          "credentials": {"accountKeySecretReference": {
                                                              "sourceVault": {"id": "v"}, "secretUrl": "u"}}}]}}},
     "InvalidParameter", "Key Vault"),
])
def test_bad_cluster_properties_are_400_and_store_nothing(resources, batchai, change, code, field):
    make_workspace(resources, batchai, experiment=None)
    body = {"properties": {"vmSize": "STANDARD_D1", "scaleSettings": {"manual": {"targetNodeCount": 1}},
                           "userAccountSettings": {"adminUserName": "u", "adminUserPassword": "p"}}}
    body["properties"].update(change)
    body["properties"] = {k: v for k, v in body["properties"].items() if v is not None}
    _refused(batchai, "PUT", CLUSTER, body, 400, code, field)
    assert raw(batchai, "GET", CLUSTER).status_code == 404


SECRET_NUMBER = 73914682051


@pytest.mark.parametrize("change, field", [
    ({"userAccountSettings": {"adminUserName": "u", "adminUserPassword": SECRET_NUMBER}},
     "properties.userAccountSettings.adminUserPassword"),
    ({"nodeSetup": {"mountVolumes": {"azureFileShares": [{"accountName": "a", "relativeMountPath": "x",
                                                          "azureFileUrl": "https://a.file.core.windows.net/s",
                                                          "credentials": {"accountKey": SECRET_NUMBER}}]}}},
     "properties.nodeSetup.mountVolumes.azureFileShares[0].credentials.accountKey"),
    ({"nodeSetup": {"setupTask": {"commandLine": "true", "stdOutErrPathPrefix": "$AZ_BATCHAI_MOUNT_ROOT",
                                  "secrets": [{"name": "TOKEN", "value": SECRET_NUMBER}]}}},
     "properties.nodeSetup.setupTask.secrets[0].value"),
])
def test_a_secret_of_the_wrong_type_is_named_but_not_echoed(resources, batchai, change, field):
    make_workspace(resources, batchai, experiment=None)
    body = {"properties": {"vmSize": "STANDARD_D1", "scaleSettings": {"manual": {"targetNodeCount": 1}},
                           "userAccountSettings": {"adminUserName": "u", "adminUserPassword": "p"}}}
    body["properties"].update(change)
    answer = raw(batchai, "PUT", CLUSTER, json=body)
    assert answer.status_code == 400, answer.text()
    message = answer.json()["error"]["message"]
    assert field in message and "must be a string; got a number" in message, message
    assert str(SECRET_NUMBER) not in answer.text()
    assert raw(batchai, "GET", CLUSTER).status_code == 404


def test_a_job_secret_of_the_wrong_type_is_named_but_not_echoed(cluster, batchai):
    body = _job_body(cluster.id, secrets=[{"name": "TOKEN", "value": SECRET_NUMBER}])
    answer = raw(batchai, "PUT", JOB, json=body)
    assert answer.status_code == 400, answer.text()
    assert "properties.secrets[0].value" in answer.json()["error"]["message"]
    assert str(SECRET_NUMBER) not in answer.text()


@pytest.mark.parametrize("path, param", [
    (ws_path(ws="bad name"), "workspaceName"),
    (ws_path(ws="x" * 65), "workspaceName"),
    (ws_path(ws="newline%0A"), "workspaceName"),
    (ws_path() + "/clusters/newline%0A", "clusterName"),
    (ws_path() + "/clusters/bad.name", "clusterName"),
    (ws_path() + "/experiments/bad!exp", "experimentName"),
    (ws_path() + f"/experiments/{EXP}/jobs/{'j' * 65}", "jobName"),
    (ws_path() + "/fileServers/no%20spaces", "fileServerName"),
])
def test_names_outside_the_pattern_or_length_are_400(resources, batchai, path, param):
    make_workspace(resources, batchai)
    answer = raw(batchai, "PUT", path, json={"location": "northeurope", "properties": {}})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "InvalidParameter" and param in error["message"] and "1 to 64" in error["message"]


def test_malformed_json_wrong_types_and_missing_location(resources, batchai):
    make_group(resources)
    answer = raw(batchai, "PUT", ws_path(), content=b'{"location": "northeurope",')
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "InvalidRequestContent"
    _refused(batchai, "PUT", ws_path(), ["northeurope"], 400, "InvalidRequestContent", "the request body",
             "JSON object")
    _refused(batchai, "PUT", ws_path(), {"location": 5}, 400, "InvalidRequestContent", "location", "string")
    _refused(batchai, "PUT", ws_path(), {}, 400, "MissingRequiredProperty", "location")
    _refused(batchai, "PUT", ws_path(), {"location": "atlantis"}, 400, "InvalidLocation", "atlantis")
    assert raw(batchai, "GET", ws_path()).status_code == 404


def test_unknown_api_version_missing_token_and_oversized_body(service, resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    answer = raw(batchai, "GET", ws_path(), api_version="2017-09-01-preview")
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "InvalidApiVersionParameter"
    assert "2018-05-01" in answer.json()["error"]["message"]
    with RawArm(service) as arm:
        assert arm.request("GET", ws_path(), api_version="2018-05-01", token=None).status_code == 401
        assert arm.request("GET", ws_path(), api_version="2018-05-01", token="forged.token").status_code == 401
        huge = b'{"location": "northeurope", "tags": {"a": "' + b"x" * (service.settings.max_body_bytes + 10) + b'"}}'
        answer = arm.request("PUT", ws_path(ws="huge"), api_version="2018-05-01", data=huge,
                             headers={"Content-Type": "application/json"})
        assert answer.status_code == 413
    assert raw(batchai, "GET", ws_path(ws="huge")).status_code == 404
    assert raw(batchai, "GET", ws_path()).status_code == 200  # still serving


def make_group(resources):
    from batchai_helpers import make_group as make
    make(resources)


def test_unknown_operation_id_is_404(batchai):
    from service_support import SUBSCRIPTION
    answer = raw(batchai, "GET", f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.BatchAI/locations/eastus/"
                                 "operationresults/00000000-1111-2222-3333-444444444444")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "OperationNotFound"


def test_bad_list_query_parameters_are_400(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    answer = raw(batchai, "GET", ws_path() + "/clusters?maxresults=0")
    assert answer.status_code == 400 and "maxresults" in answer.json()["error"]["message"]
    assert "between 1 and 1000" in answer.json()["error"]["message"]
