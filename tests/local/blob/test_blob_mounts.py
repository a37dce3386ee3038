"""Blob containers mounted on clusters and jobs (``azureBlobFileSystems``), through Microsoft's
BatchAI client and azure-storage-blob: the container's files are there for the job, what the job
writes reaches the container, output directories on it are listed with blob download links, and a
wrong key or a missing container fails as a bad file-share mount does."""
from __future__ import annotations

import shutil
from urllib.parse import parse_qs, urlparse

import pytest
from azure.core.exceptions import HttpResponseError, ServiceRequestError
from azure.storage.blob import BlobClient

from horovod_batchai.local.blob.mirror import ContainerMirror
from jobs_support import make_lab, wait_for

pytestmark = pytest.mark.skipif(shutil.which("node") is None,
                                reason="blob storage needs Node.js (make install says how)")


@pytest.fixture
def lab(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster()
    return lab


def _counts(cluster) -> dict[str, int]:
    c = cluster.node_state_counts
    return {"idle": c.idle_node_count, "unusable": c.unusable_node_count, "preparing": c.preparing_node_count}


def test_a_cluster_mount_serves_the_container_to_its_setup_task_and_jobs(service, batchai):
    lab = make_lab(service, batchai)
    container = lab.blobs().create_container("autobfs")
    container.upload_blob("data/input.txt", b"from the container\n")
    lab.create_cluster("withblob", nodes=1, nodeSetup={
        "mountVolumes": lab.blob_mount("autobfs", "bfs"),
        "setupTask": {"commandLine": "cp $AZ_BATCHAI_MOUNT_ROOT/bfs/data/input.txt $AZ_BATCHAI_MOUNT_ROOT/bfs/seen-by-setup.txt",
                      "stdOutErrPathPrefix": "$AZ_BATCHAI_MOUNT_ROOT/bfs/setup-logs"}})
    cluster = lab.wait_steady("withblob")
    assert _counts(cluster)["idle"] == 1 and not cluster.errors
    [mounted] = cluster.node_setup.mount_volumes.azure_blob_file_systems
    assert (mounted.account_name, mounted.container_name) == (lab.account, "autobfs")
    assert mounted.credentials.account_key is None  # as recorded: the key is never echoed
    assert container.download_blob("seen-by-setup.txt").readall() == b"from the container\n"
    container.upload_blob("data/later.txt", b"uploaded after the cluster was made\n")
    lab.submit("reader", {"customToolkitSettings": {"commandLine":
        "cat $AZ_BATCHAI_MOUNT_ROOT/bfs/data/later.txt && mkdir -p $AZ_BATCHAI_MOUNT_ROOT/bfs/out && "
        "echo written > $AZ_BATCHAI_MOUNT_ROOT/bfs/out/by-job.txt"}},
        cluster="withblob")
    job = lab.wait_state("reader")
    assert job.execution_state == "succeeded", [e.message for e in job.execution_info.errors or []]
    assert lab.read("reader", "stdout.txt") == "uploaded after the cluster was made\n"
    assert container.download_blob("out/by-job.txt").readall() == b"written\n"


def test_output_directories_on_a_blob_mount_are_listed_with_blob_links(lab):
    container = lab.blobs().create_container("outputs")
    lab.submit("job", {
        "mountVolumes": {**lab.share_mount("afs"), **lab.blob_mount("outputs")},
        "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs",
        "outputDirectories": [{"id": "MODEL", "pathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs", "pathSuffix": "models"}],
        "customToolkitSettings": {"commandLine": "echo hi; mkdir -p $AZ_BATCHAI_OUTPUT_MODEL/epochs; "
                                                 "echo weights > $AZ_BATCHAI_OUTPUT_MODEL/model.h5; "
                                                 "echo 1 > $AZ_BATCHAI_OUTPUT_MODEL/epochs/1.txt"}})
    job = lab.wait_state("job")
    assert job.execution_state == "succeeded", job.execution_info.errors
    segment = job.job_output_directory_path_segment
    stdouterr = lab.files("job")
    assert {"stdout.txt", "stderr.txt", "execution.log"} <= set(stdouterr)
    stdout = stdouterr["stdout.txt"]
    assert stdout.file_type == "file" and stdout.content_length == 3
    link = urlparse(stdout.download_url)
    query = parse_qs(link.query)
    assert query["sr"] == ["b"] and query["sp"] == ["r"] and "sig" in query and "se" in query
    assert link.path == f"/{lab.account}/outputs/{segment}/stdouterr/stdout.txt"
    blob = BlobClient.from_blob_url(stdout.download_url, connection_verify=str(lab.service.info.ca_cert))
    assert blob.download_blob().readall() == b"hi\n"
    model = lab.files("job", "MODEL")
    assert model["epochs"].file_type == "directory" and model["epochs"].download_url is None
    assert model["model.h5"].content_length == len(b"weights\n")
    inner = lab.files("job", "MODEL", directory="epochs")
    assert list(inner) == ["1.txt"]
    # The same bytes are in the container, where the job's path put them.
    assert container.download_blob(f"{segment}/outputs/models/model.h5").readall() == b"weights\n"


def test_a_running_jobs_output_on_a_blob_mount_is_listed_as_it_grows(lab):
    lab.blobs().create_container("live")
    gate = "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/release-live"
    lab.submit("live", {"mountVolumes": {**lab.share_mount("afs"), **lab.blob_mount("live")},
                        "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs",
                        "customToolkitSettings": {"commandLine":
                            f"echo first; while [ ! -f {gate} ]; do sleep 0.1; done; echo second"}})
    lab.wait_state("live", "running")
    wait_for(lambda: lab.files("live").get("stdout.txt") and lab.files("live")["stdout.txt"].content_length == 6,
             60, what="the first line in the listing")
    lab.release("live")
    assert lab.wait_state("live").execution_state == "succeeded"
    entry = lab.files("live")["stdout.txt"]
    blob = BlobClient.from_blob_url(entry.download_url, connection_verify=str(lab.service.info.ca_cert))
    assert blob.download_blob(offset=6).readall() == b"second\n"  # read on from where a stream stopped


def test_a_listing_whose_upload_fails_shows_the_container_as_last_synced(lab, monkeypatch):
    lab.blobs().create_container("flaky")
    gate = "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/release-flaky"
    lab.submit("flaky", {"mountVolumes": {**lab.share_mount("afs"), **lab.blob_mount("flaky")},
                         "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs",
                         "customToolkitSettings": {"commandLine":
                             f"echo first; while [ ! -f {gate} ]; do sleep 0.1; done"}})
    try:
        lab.wait_state("flaky", "running")
        wait_for(lambda: lab.files("flaky").get("stdout.txt") and lab.files("flaky")["stdout.txt"].content_length == 6,
                 60, what="the first line in the listing")

        def unreachable(self: ContainerMirror) -> None:
            raise ServiceRequestError("the blob endpoint did not answer")
        monkeypatch.setattr(ContainerMirror, "push", unreachable)
        assert lab.files("flaky")["stdout.txt"].content_length == 6  # not a 500
        monkeypatch.undo()
    finally:
        lab.release("flaky")
    assert lab.wait_state("flaky").execution_state == "succeeded"


def test_listing_the_output_of_a_deleted_container_is_a_404_naming_it(lab):
    container = lab.blobs().create_container("gone")
    lab.submit("done", {"mountVolumes": {**lab.share_mount("afs"), **lab.blob_mount("gone")},
                        "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs",
                        "customToolkitSettings": {"commandLine": "echo hi"}})
    assert lab.wait_state("done").execution_state == "succeeded"
    assert "stdout.txt" in lab.files("done")
    container.delete_container()
    with pytest.raises(HttpResponseError) as err:
        lab.files("done")
    assert err.value.status_code == 404 and "blob container 'gone'" in str(err.value.message)


def test_a_missing_container_fails_the_job(lab):
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo never"},
                       "mountVolumes": {**lab.share_mount("afs"), **lab.blob_mount("nosuchcontainer")}})
    job = lab.wait_state("job")
    assert job.execution_state == "failed"
    [error] = job.execution_info.errors
    assert error.code == "MountFailed"
    assert ("mountVolumes.azureBlobFileSystems[0]: blob container 'nosuchcontainer' does not exist in storage "
            f"account '{lab.account}'") in error.message


def test_a_wrong_key_fails_the_job(lab):
    lab.blobs().create_container("data")
    mounts = {**lab.share_mount("afs"), **lab.blob_mount("data")}
    wrong = "A" * 86 + "=="
    mounts["azureBlobFileSystems"][0]["credentials"]["accountKey"] = wrong
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo never"}, "mountVolumes": mounts})
    job = lab.wait_state("job")
    assert job.execution_state == "failed"
    [error] = job.execution_info.errors
    assert error.code == "MountFailed" and "not a current key" in error.message
    assert wrong not in error.message and lab.key not in error.message


def test_a_wrong_key_on_a_cluster_mount_makes_the_node_unusable(lab):
    lab.blobs().create_container("data")
    mounts = lab.blob_mount("data")
    mounts["azureBlobFileSystems"][0]["credentials"]["accountKey"] = "B" * 86 + "=="
    lab.create_cluster("badkey", nodes=1, wait=False, nodeSetup={"mountVolumes": mounts})
    cluster = wait_for(lambda: (lambda c: c if _counts(c)["unusable"] == 1 else None)(lab.cluster("badkey")), 60,
                       what="an unusable node")
    [error] = cluster.errors
    assert error.code == "MountFailed" and "azureBlobFileSystems[0]" in error.message


def test_a_container_deleted_after_the_cluster_was_made_fails_the_next_job(lab):
    container = lab.blobs().create_container("gone")
    lab.create_cluster("c2", nodes=1, nodeSetup={"mountVolumes": lab.blob_mount("gone", "bfs")})
    container.delete_container()
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo never"}}, cluster="c2")
    job = lab.wait_state("job")
    assert job.execution_state == "failed"
    assert "blob container 'gone' does not exist" in job.execution_info.errors[0].message
