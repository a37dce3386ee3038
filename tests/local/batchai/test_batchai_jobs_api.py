"""Jobs through azure-mgmt-batchai's client, as an API: create (202 + LRO) to ``queued`` with the
service's defaults, validation, idempotent re-create, terminate, delete, login information and the
listOutputFiles plumbing. (Running jobs is the scheduler's and is tested with it.)"""
from __future__ import annotations

import time

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.batchai import models as m

from batchai_helpers import EXP, RG, WS, job_params, make_cluster, make_workspace, raw, ws_path
from service_support import SUBSCRIPTION

JOB_PATH = ws_path() + f"/experiments/{EXP}/jobs"


@pytest.fixture
def cluster(resources, batchai):
    make_workspace(resources, batchai)
    return make_cluster(batchai, nodes=2, mounts=False)


def _wait_state(batchai, name: str, *states: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while (job := batchai.jobs.get(RG, WS, EXP, name)).execution_state not in states:
        assert time.monotonic() < deadline, f"job {name} stayed {job.execution_state}"
        time.sleep(0.1)
    return job


def test_create_answers_202_and_the_job_is_queued_with_defaults(cluster, batchai):
    body = {"properties": {"cluster": {"id": cluster.id}, "nodeCount": 1,
                           "stdOutErrPathPrefix": "$AZ_BATCHAI_MOUNT_ROOT/azfiles",
                           "customToolkitSettings": {"commandLine": "sleep 30"},
                           "outputDirectories": [{"pathPrefix": "$AZ_BATCHAI_MOUNT_ROOT/azfiles", "pathSuffix": "output",
                                                  "id": "OUTPUT"}],
                           "containerSettings": {"imageSourceRegistry": {"image": "ubuntu"}}}}
    first = raw(batchai, "PUT", JOB_PATH + "/job", json=body)
    assert first.status_code == 202 and first.text() == ""
    poll = raw(batchai, "GET", first.headers["Azure-AsyncOperation"], api_version=None).json()
    assert poll["status"] == "Succeeded"
    assert poll["properties"]["resourceId"] == f"{SUBSCRIPTION}${RG}${WS}${EXP}$job"
    job = raw(batchai, "GET", JOB_PATH + "/job").json()
    props = job["properties"]
    assert job["type"] == "Microsoft.BatchAI/workspaces/experiments/jobs"
    assert list(props)[:7] == ["experimentName", "schedulingPriority", "cluster", "jobOutputDirectoryPathSegment",
                               "nodeCount", "containerSettings", "toolType"]
    assert props["experimentName"] == EXP and props["schedulingPriority"] == "normal"
    assert props["toolType"] == "custom" and props["constraints"] == {"maxWallClockTime": "P7D"}
    assert props["provisioningState"] == "succeeded" and props["executionState"] in ("queued", "running")
    segment = props["jobOutputDirectoryPathSegment"]
    assert segment.startswith(f"{SUBSCRIPTION}/{RG}/workspaces/{WS}/experiments/{EXP}/jobs/job/")
    assert len(segment.rsplit("/", 1)[1]) == 36  # a uuid
    batchai.jobs.begin_terminate(RG, WS, EXP, "job").result()


def test_horovod_and_mpi_process_count_defaults_to_node_count(cluster, batchai):
    horovod = batchai.jobs.begin_create(RG, WS, EXP, "hvd", job_params(
        cluster.id, nodes=2, custom_toolkit_settings=None,
        horovod_settings=m.HorovodSettings(python_script_file_path="$AZ_BATCHAI_MOUNT_ROOT/x/train.py"))).result()
    assert horovod.tool_type == "horovod" and horovod.horovod_settings.process_count == 2
    mpi = batchai.jobs.begin_create(RG, WS, EXP, "mpi", job_params(
        cluster.id, custom_toolkit_settings=None,
        custom_mpi_settings=m.CustomMpiSettings(command_line="echo $OMPI_COMM_WORLD_RANK", process_count=3))).result()
    assert mpi.tool_type == "mpi" and mpi.custom_mpi_settings.process_count == 3
    for name in ("hvd", "mpi"):
        batchai.jobs.begin_terminate(RG, WS, EXP, name).result()


def test_secret_values_are_never_answered(service, cluster, batchai):
    job = batchai.jobs.begin_create(RG, WS, EXP, "secretive", job_params(
        cluster.id, command="sleep 30", secrets=[m.EnvironmentVariableWithSecretValue(name="TOKEN", value="s3cr3t-value")],
        environment_variables=[m.EnvironmentVariable(name="PLAIN", value="visible")])).result()
    assert [s.name for s in job.secrets] == ["TOKEN"] and job.secrets[0].value is None
    assert job.environment_variables[0].value == "visible"
    assert "s3cr3t-value" not in raw(batchai, "GET", JOB_PATH + "/secretive").text()
    assert service.context.store.get_private(job.id)["secrets"] == {"TOKEN": "s3cr3t-value"}
    batchai.jobs.begin_terminate(RG, WS, EXP, "secretive").result()


def test_recreate_identical_is_accepted_different_is_409(cluster, batchai):
    params = job_params(cluster.id, command="sleep 30")
    first = batchai.jobs.begin_create(RG, WS, EXP, "job", params).result()
    again = batchai.jobs.begin_create(RG, WS, EXP, "job", params).result()
    assert again.job_output_directory_path_segment == first.job_output_directory_path_segment
    assert [j.name for j in batchai.jobs.list_by_experiment(RG, WS, EXP)] == ["job"]
    with pytest.raises(HttpResponseError) as err:
        batchai.jobs.begin_create(RG, WS, EXP, "job", job_params(cluster.id, command="echo other")).result()
    assert err.value.status_code == 409 and err.value.error.code == "JobAlreadyExists"
    assert "properties.customToolkitSettings.commandLine" in err.value.error.message
    batchai.jobs.begin_terminate(RG, WS, EXP, "job").result()


def test_terminate_ends_the_job_failed_and_is_idempotent(cluster, batchai):
    batchai.jobs.begin_create(RG, WS, EXP, "long", job_params(cluster.id, command="sleep 60")).result()
    _wait_state(batchai, "long", "running")
    first = raw(batchai, "POST", JOB_PATH + "/long/terminate")
    assert first.status_code == 202 and "Azure-AsyncOperation" in first.headers
    job = _wait_state(batchai, "long", "failed")
    assert job.execution_info.errors and job.execution_info.end_time is not None
    poll = raw(batchai, "GET", first.headers["Azure-AsyncOperation"], api_version=None).json()
    assert poll["status"] == "Succeeded"
    batchai.jobs.begin_terminate(RG, WS, EXP, "long").result()  # already terminal: nothing to do
    assert batchai.jobs.get(RG, WS, EXP, "long").execution_state == "failed"


def test_delete_and_list_and_404(cluster, batchai):
    batchai.jobs.begin_create(RG, WS, EXP, "a", job_params(cluster.id, command="sleep 60")).result()
    batchai.jobs.begin_create(RG, WS, EXP, "b", job_params(cluster.id, command="true")).result()
    assert [j.name for j in batchai.jobs.list_by_experiment(RG, WS, EXP)] == ["a", "b"]
    _wait_state(batchai, "a", "running")
    batchai.jobs.begin_delete(RG, WS, EXP, "a").result()  # a running job is stopped, then deleted
    batchai.jobs.begin_delete(RG, WS, EXP, "b").result()
    assert list(batchai.jobs.list_by_experiment(RG, WS, EXP)) == []
    with pytest.raises(ResourceNotFoundError) as err:
        batchai.jobs.get(RG, WS, EXP, "a")
    assert err.value.error.code == "JobNotFound" and err.value.error.message == "The specified job a is not found"
    with pytest.raises(ResourceNotFoundError) as err:
        batchai.jobs.begin_terminate(RG, WS, EXP, "a").result()
    assert raw(batchai, "DELETE", JOB_PATH + "/a").status_code == 204


def test_login_information_lists_the_nodes_of_a_started_job(cluster, batchai):
    batchai.jobs.begin_create(RG, WS, EXP, "pair", job_params(cluster.id, nodes=2, command="sleep 60")).result()
    _wait_state(batchai, "pair", "running")
    logins = list(batchai.jobs.list_remote_login_information(RG, WS, EXP, "pair"))
    assert len(logins) == 2 and all(x.ip_address == "127.0.0.1" for x in logins)
    batchai.jobs.begin_terminate(RG, WS, EXP, "pair").result()


def test_list_output_files_answers_the_recorded_shape_and_pages(service, batchai):
    """The handler's side of listOutputFiles: query checks, paging through nextLink (followed by the
    client with GET), items in the recorded shape. The listing itself is outputs.py's."""
    import jobs_support
    lab = jobs_support.make_lab(service, batchai)  # a storage account and share to write outputs to
    lab.create_cluster(nodes=1)
    lab.submit("out", {"customToolkitSettings": {
        "commandLine": "for i in 1 2 3; do echo $i > $AZ_BATCHAI_OUTPUT_OUTPUT/f$i.txt; done"},
        "outputDirectories": [{"id": "OUTPUT", "pathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs", "pathSuffix": "out"}]})
    assert lab.wait_state("out").execution_state == "succeeded"
    names = [f.name for f in batchai.jobs.list_output_files(jobs_support.RG, jobs_support.WS, jobs_support.EXP, "out",
                                                            m.JobsListOutputFilesOptions(outputdirectoryid="OUTPUT",
                                                                                         max_results=2))]
    assert sorted(names) == ["f1.txt", "f2.txt", "f3.txt"]  # three files over two pages
    path = (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{jobs_support.RG}/providers/Microsoft.BatchAI/workspaces/"
            f"{jobs_support.WS}/experiments/{jobs_support.EXP}/jobs/out/listOutputFiles")
    page = raw(batchai, "POST", path + "?outputdirectoryid=OUTPUT&maxresults=2").json()
    assert len(page["value"]) == 2 and "nextLink" in page
    item = page["value"][0]
    assert item["fileType"] == "file" and set(item["properties"]) == {"lastModified", "contentLength"}
    assert "sig=" in item["downloadUrl"]
    rest = raw(batchai, "GET", page["nextLink"], api_version=None).json()
    assert len(rest["value"]) == 1 and "nextLink" not in rest
    missing = raw(batchai, "POST", path)
    assert missing.status_code == 400 and "outputdirectoryid" in missing.json()["error"]["message"]
    bad_expiry = raw(batchai, "POST", path + "?outputdirectoryid=OUTPUT&linkexpiryinminutes=1")
    assert bad_expiry.status_code == 400 and "linkexpiryinminutes" in bad_expiry.json()["error"]["message"]
    too_many = raw(batchai, "POST", path + "?outputdirectoryid=OUTPUT&maxresults=1001")
    assert too_many.status_code == 400 and "maxresults" in too_many.json()["error"]["message"]
