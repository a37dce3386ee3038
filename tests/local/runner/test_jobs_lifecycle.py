"""Jobs from queued to their end, through Microsoft's BatchAI client against the local service:
the recorded custom-toolkit scenario, the node environment, job preparation, failures, terminate,
the wall-clock limit, live output and listOutputFiles."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.batchai.models import JobsListOutputFilesOptions

from horovod_batchai.local.runner.mounts import Mount, MountError, apply_mounts, parse_share_url
from jobs_support import EXP, RG, SHARE, WS, make_lab, tagged_processes, wait_for

SEGMENT = re.compile(r"00000000-0000-0000-0000-000000000000/jobs-rg/workspaces/ws/experiments/exp/jobs/(\w+)/"
                     r"[0-9a-f-]{36}")


@pytest.fixture
def lab(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1)
    return lab


def test_recorded_custom_toolkit_job_runs_and_lists_its_outputs(service, batchai):
    # The manual-scale scenario: the share mounted on the cluster at azfiles, stdout/err and an
    # output directory on it, a container image the local node replaces by the host.
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1, nodeSetup={"mountVolumes": {"azureFileShares": [
        {"accountName": lab.account, "azureFileUrl": lab.share_url, "credentials": {"accountKey": lab.key},
         "relativeMountPath": "azfiles"}]}})
    lab.batchai.jobs.begin_create(RG, WS, EXP, "job", {
        "cluster": {"id": lab.cluster_id("cluster")}, "node_count": 1,
        "std_out_err_path_prefix": "$AZ_BATCHAI_MOUNT_ROOT/azfiles",
        "custom_toolkit_settings": {"command_line": "echo hi | tee $AZ_BATCHAI_OUTPUT_OUTPUT/result.txt"},
        "output_directories": [{"id": "OUTPUT", "path_prefix": "$AZ_BATCHAI_MOUNT_ROOT/azfiles",
                                "path_suffix": "output"}],
        "container_settings": {"image_source_registry": {"image": "ubuntu"}}}).result()

    job = lab.wait_state("job")
    assert job.execution_state == "succeeded"
    assert job.execution_info.exit_code == 0 and not job.execution_info.errors
    assert job.execution_info.start_time <= job.execution_info.end_time
    assert job.custom_toolkit_settings.command_line == "echo hi | tee $AZ_BATCHAI_OUTPUT_OUTPUT/result.txt"

    stdouterr = lab.files("job")
    assert {"execution.log", "stderr.txt", "stdout.txt"} <= set(stdouterr)
    assert stdouterr["stdout.txt"].content_length == 3 and stdouterr["stdout.txt"].file_type == "file"
    assert all(f.download_url for f in stdouterr.values())
    assert lab.read("job", "stdout.txt") == "hi\n"
    log = lab.read("job", "execution.log")
    assert "no container engine: running on the node runtime" in log and "ubuntu" in log

    outputs = lab.files("job", "OUTPUT")
    assert list(outputs) == ["result.txt"] and outputs["result.txt"].content_length == 3
    url = outputs["result.txt"].download_url
    # Where Azure put it: {share}/{jobOutputDirectoryPathSegment}/outputs/{pathSuffix}/result.txt.
    assert url.startswith(f"{service.endpoint}/{lab.account}/{SHARE}/{job.job_output_directory_path_segment}"
                          "/outputs/output/result.txt?")
    assert "sig=" in url and "sp=rl" in url
    assert lab.read("job", "result.txt", "OUTPUT") == "hi\n"
    # And it is an ordinary file of the share.
    path = f"{job.job_output_directory_path_segment}/outputs/output/result.txt"
    assert lab.shares().get_share_client(SHARE).get_file_client(path).download_file().readall() == b"hi\n"


def test_node_environment_has_every_batch_ai_variable(lab):
    lab.upload("inputs/data.txt", "input data\n")
    command = ("env > $AZ_BATCHAI_OUTPUT_ENV/env.txt; cat $AZ_BATCHAI_INPUT_DATA/data.txt; "
               "cat $AZ_BATCHAI_MPI_HOST_FILE; echo secret=$MY_SECRET >&2; pwd")
    lab.submit("job", {
        "customToolkitSettings": {"commandLine": command},
        "inputDirectories": [{"id": "DATA", "path": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/inputs"}],
        "outputDirectories": [{"id": "ENV", "pathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs", "pathSuffix": "env"}],
        "environmentVariables": [{"name": "MY_SETTING", "value": "42"}],
        "secrets": [{"name": "MY_SECRET", "value": "s3cr3t-value"}]})
    job = lab.wait_state("job")
    assert job.execution_state == "succeeded", job.execution_info.errors
    # The service never expands the command line: the node's shell did.
    assert job.custom_toolkit_settings.command_line == command
    env = dict(line.split("=", 1) for line in lab.read("job", "env.txt", "ENV").splitlines() if "=" in line)
    segment = job.job_output_directory_path_segment
    job_mounts = env["AZ_BATCHAI_JOB_MOUNT_ROOT"]
    assert env["AZ_BATCHAI_STDOUTERR_DIR"] == f"{job_mounts}/afs/{segment}/stdouterr"
    assert env["AZ_BATCHAI_OUTPUT_ENV"] == f"{job_mounts}/afs/{segment}/outputs/env"
    assert env["AZ_BATCHAI_INPUT_DATA"] == f"{job_mounts}/afs/inputs"
    assert env["AZ_BATCHAI_TASK_INDEX"] == "0"
    assert env["AZ_BATCHAI_NUM_GPUS"] == "0"          # Standard_D1 has no GPU
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["MY_SETTING"] == "42" and env["MY_SECRET"] == "s3cr3t-value"
    assert env["PYTHONUNBUFFERED"] == "1"
    for name in ("AZ_BATCHAI_MOUNT_ROOT", "AZ_BATCHAI_JOB_TEMP", "AZ_BATCHAI_SHARED_JOB_TEMP",
                 "AZ_BATCHAI_MPI_HOST_FILE"):
        assert env[name].startswith(str(lab.service.state_dir)), name
    stdout = lab.read("job", "stdout.txt")
    assert "input data\n" in stdout and "localhost slots=1\n" in stdout
    # The secret reached the process, and nothing the service wrote or answers.
    assert "secret=s3cr3t-value" in lab.read("job", "stderr.txt")
    log = lab.read("job", "execution.log")
    assert "MY_SECRET" in log and "s3cr3t-value" not in log
    assert "s3cr3t-value" not in str(lab.job("job").as_dict())


def test_failing_command_fails_the_job_with_its_exit_code(lab):
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo oops >&2; exit 3"}})
    job = lab.wait_state("job")
    assert job.execution_state == "failed"
    assert job.execution_info.exit_code == 3
    [error] = job.execution_info.errors
    assert error.code == "JobFailed" and "exit code 3" in error.message
    assert lab.read("job", "stderr.txt") == "oops\n"


def test_live_output_is_readable_while_the_job_runs(lab):
    # The job prints a line, then waits for a file that the test uploads once it has read that line.
    command = "echo first; while [ ! -f $AZ_BATCHAI_JOB_MOUNT_ROOT/afs/go ]; do sleep 0.1; done; echo second"
    lab.submit("job", {"customToolkitSettings": {"commandLine": command}})
    wait_for(lambda: "stdout.txt" in lab.files("job") and lab.read("job", "stdout.txt") == "first\n", 60,
             what="the first line")
    assert lab.job("job").execution_state == "running"
    lab.upload("go", "")
    assert lab.wait_state("job").execution_state == "succeeded"
    assert lab.read("job", "stdout.txt", offset=len("first\n")) == "second\n"


def test_job_preparation_skips_container_package_installs_and_runs_the_rest(lab):
    # The tutorial's jobPreparation, plus a step that must really run on the host.
    prep = ("apt update; apt install mpi-default-dev mpi-default-bin -y; pip install keras horovod; "
            "echo prepared > $AZ_BATCHAI_JOB_MOUNT_ROOT/afs/prepared.txt")
    lab.submit("job", {"jobPreparation": {"commandLine": prep},
                       "containerSettings": {"imageSourceRegistry": {"image": "tensorflow/tensorflow:1.8.0-gpu"}},
                       "customToolkitSettings": {"commandLine": "cat $AZ_BATCHAI_JOB_MOUNT_ROOT/afs/prepared.txt"}})
    job = lab.wait_state("job")
    assert job.execution_state == "succeeded", job.execution_info.errors
    files = lab.files("job")
    assert {"stdout-job_prep.txt", "stderr-job_prep.txt"} <= set(files)
    prep_out = lab.read("job", "stdout-job_prep.txt")
    for skipped in ("apt update", "apt install mpi-default-dev mpi-default-bin -y", "pip install keras horovod"):
        assert f"skipped '{skipped}'" in prep_out
    assert "tensorflow/tensorflow:1.8.0-gpu" in prep_out and "node runtime" in prep_out
    assert lab.read("job", "stdout.txt") == "prepared\n"
    log = lab.read("job", "execution.log")
    assert "skipped 'pip install keras horovod'" in log
    assert "no container engine: running on the node runtime" in log
    assert "job preparation exited with code 0" in log


def test_failing_job_preparation_fails_the_job_before_the_command(lab):
    lab.submit("job", {"jobPreparation": {"commandLine": "echo cannot prepare >&2; exit 4"},
                       "customToolkitSettings": {"commandLine": "echo main-ran"}})
    job = lab.wait_state("job")
    assert job.execution_state == "failed" and job.execution_info.exit_code == 4
    [error] = job.execution_info.errors
    assert error.code == "JobPreparationFailed" and "exit code 4" in error.message
    assert lab.read("job", "stderr-job_prep.txt") == "cannot prepare\n"
    assert "stdout.txt" not in lab.files("job")  # the command never started


def test_terminate_stops_a_running_job(lab):
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo started; sleep 300"}})
    lab.wait_state("job", "running")
    # its command runs (tagged processes alone may be its supervisor, before the command starts:
    # a job stopped then has no exit code)
    wait_for(lambda: "stdout.txt" in lab.files("job") and "started" in lab.read("job", "stdout.txt"), 60,
             what="the job's command to run")
    assert tagged_processes(lab.service.state_dir)
    lab.batchai.jobs.begin_terminate(RG, WS, EXP, "job").result()
    job = lab.job("job")
    assert job.execution_state == "failed"
    [error] = job.execution_info.errors
    assert error.code == "JobTerminated" and "terminated by the user" in error.message
    assert job.execution_info.exit_code is not None
    assert tagged_processes(lab.service.state_dir) == []
    # Its node is free again, and terminating again changes nothing.
    assert lab.wait_steady().node_state_counts.idle_node_count == 1
    lab.batchai.jobs.begin_terminate(RG, WS, EXP, "job").result()
    assert lab.job("job").execution_info.errors[0].code == "JobTerminated"


def test_terminate_a_queued_job(lab):
    lab.hold()
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo never"}})
    assert lab.job("job").execution_state == "queued"
    lab.batchai.jobs.begin_terminate(RG, WS, EXP, "job").result()
    job = lab.job("job")
    assert job.execution_state == "failed" and job.execution_info.errors[0].code == "JobTerminated"
    assert job.execution_info.start_time is None  # it never ran
    lab.release()
    assert lab.wait_state("blocker").execution_state == "succeeded"


def test_max_wall_clock_time_fails_the_job(lab):
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo started; sleep 300"},
                       "constraints": {"maxWallClockTime": "PT2S"}})
    job = lab.wait_state("job", timeout=60)
    assert job.execution_state == "failed"
    [error] = job.execution_info.errors
    assert error.code == "MaxWallClockTimeExceeded"
    assert "maximum wall-clock time" in error.message and "PT2S" in error.message
    assert tagged_processes(lab.service.state_dir) == []


def test_a_fractional_wall_clock_time_is_kept_as_written_and_enforced(lab):
    lab.submit("job", {"customToolkitSettings": {"commandLine": "sleep 300"},
                       "constraints": {"maxWallClockTime": "PT0.00005S"}})
    job = lab.wait_state("job", timeout=60)
    assert job.constraints.max_wall_clock_time.total_seconds() == pytest.approx(0.00005)
    assert job.execution_state == "failed"
    [error] = job.execution_info.errors
    assert error.code == "MaxWallClockTimeExceeded" and "PT0.00005S" in error.message


def test_deleting_a_running_job_stops_its_processes(lab):
    lab.submit("job", {"customToolkitSettings": {"commandLine": "sleep 300"}})
    lab.wait_state("job", "running")
    wait_for(lambda: tagged_processes(lab.service.state_dir), 30, what="the job's processes")
    segment = lab.job("job").job_output_directory_path_segment
    lab.batchai.jobs.begin_delete(RG, WS, EXP, "job").result()
    with pytest.raises(ResourceNotFoundError):
        lab.job("job")
    assert tagged_processes(lab.service.state_dir) == []
    # The job's scratch space went, but not the share it had mounted: its outputs stay, as on Azure.
    share = lab.shares().get_share_client(SHARE)
    assert share.get_directory_client(f"{segment}/stdouterr").exists()
    assert lab.wait_steady().node_state_counts.idle_node_count == 1


# -- mounts ----------------------------------------------------------------------------------------

def test_a_rotated_account_key_fails_the_mount(lab, storage):
    lab.hold()
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo never"}})
    old_key = lab.key
    lab.key = storage.storage_accounts.regenerate_key(RG, lab.account, {"keyName": "key1"}).keys_property[0].value
    lab.release()
    job = lab.wait_state("job")
    assert job.execution_state == "failed"
    [error] = job.execution_info.errors
    assert error.code == "MountFailed" and "not a current key" in error.message
    assert old_key not in error.message and lab.key not in error.message


def test_a_missing_share_fails_the_mount(lab):
    mount = lab.share_mount("afs")
    mount["azureFileShares"][0]["azureFileUrl"] = f"https://{lab.account}.file.core.windows.net/nosuchshare"
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo never"}, "mountVolumes": mount})
    job = lab.wait_state("job")
    assert job.execution_state == "failed"
    assert "'nosuchshare' does not exist" in job.execution_info.errors[0].message


@pytest.mark.skipif(shutil.which("node") is None, reason="blob storage needs Node.js (make install says how)")
def test_file_servers_and_blob_containers_are_mounted_as_local_directories(lab):
    from azure.mgmt.batchai import models as m
    lab.blobs().create_container("data")
    server = lab.batchai.file_servers.begin_create(RG, WS, "nfs", m.FileServerCreateParameters(
        vm_size="STANDARD_D1", ssh_configuration=m.SshConfiguration(user_account_settings=m.UserAccountSettings(
            admin_user_name="admin", admin_user_password="fs-Pa55word")),
        data_disks=m.DataDisks(disk_size_in_gb=10, disk_count=1, storage_account_type="Standard_LRS"))).result()
    mounts = lab.share_mount("afs")
    mounts["fileServers"] = [{"fileServer": {"id": server.id}, "relativeMountPath": "nfs"}]
    mounts["azureBlobFileSystems"] = [{"accountName": lab.account, "containerName": "data",
                                       "credentials": {"accountKey": lab.key}, "relativeMountPath": "bfs"}]
    lab.submit("job", {"mountVolumes": mounts, "customToolkitSettings": {"commandLine":
        "echo on-nfs > $AZ_BATCHAI_JOB_MOUNT_ROOT/nfs/note.txt; echo on-blob > $AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/b.txt"}})
    job = lab.wait_state("job")
    assert job.execution_state == "succeeded", job.execution_info.errors
    assert (lab.service.context.fileserver_dir(server.id) / "note.txt").read_text() == "on-nfs\n"
    assert lab.blobs().get_container_client("data").download_blob("b.txt").readall() == b"on-blob\n"
    log = lab.read("job", "execution.log")
    assert "file server nfs" in log and f"blob container {lab.account}/data" in log


def test_unmanaged_file_systems_fail_the_job_clearly(lab):
    mounts = lab.share_mount("afs")
    mounts["unmanagedFileSystems"] = [{"mountCommand": "mount -t nfs 10.0.0.4:/data", "relativeMountPath": "un"}]
    try:
        lab.submit("job", {"mountVolumes": mounts, "customToolkitSettings": {"commandLine": "true"}})
    except HttpResponseError as exc:  # refused at creation is as clear
        assert "unmanagedFileSystems" in str(exc.message)
        return
    job = lab.wait_state("job")
    assert job.execution_state == "failed"
    assert "unmanagedFileSystems cannot be mounted" in job.execution_info.errors[0].message


def test_custom_mpi_command_line_runs_on_the_master_node(lab):
    lab.submit("job", {"customMpiSettings": {"commandLine": "echo mpi on task $AZ_BATCHAI_TASK_INDEX",
                                             "processCount": 1}})
    job = lab.wait_state("job")
    assert job.execution_state == "succeeded" and job.tool_type == "mpi"
    assert lab.read("job", "stdout.txt") == "mpi on task 0\n"


def test_share_urls_of_azure_and_of_the_local_endpoint_name_the_same_share():
    assert parse_share_url("https://acct.file.core.windows.net/myshare") == ("acct", "myshare")
    assert parse_share_url("https://127.0.0.1:4443/acct/myshare", "https://127.0.0.1:4443") == ("acct", "myshare")
    with pytest.raises(MountError, match="not an Azure file share URL"):
        parse_share_url("https://example.com/acct/myshare/extra")


def test_nodes_mounting_the_same_cluster_volume_at_once_all_succeed(tmp_path):
    """A cluster's nodes are set up in parallel and share its mount root (the race once made a
    node of a 2-node cluster unusable with 'already exists')."""
    import threading
    failures: list[str] = []
    for round_ in range(50):
        target = tmp_path / f"share{round_}"
        target.mkdir()
        mount = Mount(kind="azureFileShare", mount_point=tmp_path / f"root{round_}" / "azfiles", target=target,
                      description="share")
        start = threading.Barrier(4)

        def node() -> None:
            start.wait()
            try:
                apply_mounts([mount])
            except MountError as exc:
                failures.append(str(exc))
        threads = [threading.Thread(target=node) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert (tmp_path / f"root{round_}" / "azfiles").resolve() == target.resolve()
    assert failures == []


# -- listOutputFiles ---------------------------------------------------------------------------------

def test_list_output_files_pages_and_directories(lab):
    command = ("cd $AZ_BATCHAI_OUTPUT_OUT && for i in 1 2 3 4 5; do echo $i > f$i.txt; done && "
               "mkdir sub && echo nested > sub/n.txt")
    lab.submit("job", {"customToolkitSettings": {"commandLine": command},
                       "outputDirectories": [{"id": "OUT", "pathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs"}]})
    assert lab.wait_state("job").execution_state == "succeeded"
    options = JobsListOutputFilesOptions(outputdirectoryid="OUT", max_results=2)
    pager = lab.batchai.jobs.list_output_files(RG, WS, EXP, "job", options).by_page()
    pages = [[f.name for f in page] for page in pager]
    assert pages == [["f1.txt", "f2.txt"], ["f3.txt", "f4.txt"], ["f5.txt", "sub"]]
    entries = lab.files("job", "OUT")
    assert entries["sub"].file_type == "directory" and entries["sub"].download_url is None
    nested = lab.files("job", "OUT", directory="sub")
    assert list(nested) == ["n.txt"] and nested["n.txt"].content_length == len("nested\n")
    assert "/outputs/sub/n.txt?" in nested["n.txt"].download_url


def test_links_a_job_planted_out_of_its_output_directory_are_not_listed(lab):
    command = ("cd $AZ_BATCHAI_OUTPUT_OUT && echo mine > mine.txt && ln -s /etc/passwd passwd && "
               "ln -s / rootdir && ln -s mine.txt alias.txt && mkdir sub && ln -s ../../.. sub/up")
    lab.submit("job", {"customToolkitSettings": {"commandLine": command},
                       "outputDirectories": [{"id": "OUT", "pathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs"}]})
    assert lab.wait_state("job").execution_state == "succeeded"
    assert sorted(lab.files("job", "OUT")) == ["alias.txt", "mine.txt", "sub"]  # a link inside stays listed
    assert list(lab.files("job", "OUT", directory="sub")) == []
    with pytest.raises(HttpResponseError) as err:
        lab.files("job", "OUT", directory="rootdir")
    assert err.value.status_code == 404


def test_list_output_files_errors_name_the_parameter(lab):
    lab.submit("job", {"customToolkitSettings": {"commandLine": "true"}})
    lab.wait_state("job")
    with pytest.raises(HttpResponseError) as err:
        lab.files("job", "NOPE")
    assert err.value.status_code == 404 and "'stdouterr'" in str(err.value.message)
    with pytest.raises(HttpResponseError) as err:
        lab.files("job", "stdouterr", directory="missing")
    assert err.value.status_code == 404 and "missing" in str(err.value.message)
    with pytest.raises(HttpResponseError) as err:
        lab.files("job", "stdouterr", directory="../..")
    assert err.value.status_code == 400 and "directory" in str(err.value.message)


def test_outputs_of_a_queued_job_are_an_empty_list(lab):
    lab.hold()
    lab.submit("job", {"customToolkitSettings": {"commandLine": "true"}})
    assert lab.job("job").execution_state == "queued"
    assert lab.files("job") == {}
    lab.release()


def test_paths_are_expanded_as_the_node_would_expand_them(lab):
    # $AZ_BATCHAI_JOB_TEMP is the master node's; a relative prefix is relative to the node's working
    # directory (never to wherever the service was started).
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo $AZ_BATCHAI_OUTPUT_TMP; echo $AZ_BATCHAI_OUTPUT_REL"},
                       "outputDirectories": [{"id": "TMP", "pathPrefix": "$AZ_BATCHAI_JOB_TEMP"},
                                             {"id": "REL", "pathPrefix": "relative/dir"}]})
    job = lab.wait_state("job")
    assert job.execution_state == "succeeded", job.execution_info.errors
    tmp, rel = lab.read("job", "stdout.txt").splitlines()
    segment = job.job_output_directory_path_segment
    assert tmp.endswith(f"/temp/{segment}/outputs") and tmp.startswith(str(lab.service.state_dir))
    assert rel.endswith(f"/wd/relative/dir/{segment}/outputs") and rel.startswith(str(lab.service.state_dir))


def test_a_jobs_own_mounts_are_removed_when_it_ends_and_its_outputs_stay_listed(lab):
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo $AZ_BATCHAI_JOB_MOUNT_ROOT; echo hi > "
                                                                "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/note.txt"}})
    job = lab.wait_state("job")
    assert job.execution_state == "succeeded", job.execution_info.errors
    job_mount_root = Path(lab.read("job", "stdout.txt").splitlines()[0])
    # As the spec says of job-level mounts: unmounted when the job completes; the share keeps the data.
    assert not (job_mount_root / "afs").exists() and not (job_mount_root / "afs").is_symlink()
    assert lab.shares().get_share_client("myshare").get_file_client("note.txt").download_file().readall() == b"hi\n"
    assert set(lab.files("job")) >= {"stdout.txt", "stderr.txt"}
    assert lab.read("job", "stdout.txt").endswith(f"{job_mount_root}\n")


def test_what_a_job_writes_is_private_whatever_the_host_programs_umask(lab):
    # The service runs in this (test) process, whose umask lets others read; the job's files must not.
    old = os.umask(0o022)
    try:
        lab.submit("job", {"customToolkitSettings": {"commandLine": "umask; echo data > $AZ_BATCHAI_JOB_TEMP/f; "
                                                                    "stat -c %a $AZ_BATCHAI_JOB_TEMP/f"}})
        job = lab.wait_state("job")
    finally:
        os.umask(old)
    assert job.execution_state == "succeeded", lab.read("job", "stderr.txt")
    assert lab.read("job", "stdout.txt").split() == ["0077", "600"]
