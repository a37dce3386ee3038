"""Specs, names and job.json loading: everything that is checked before a request is sent."""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from horovod_batchai import (AutoScale, AzureBlobMount, AzureFileShareMount, ClusterSpec, ContainerRegistry,
                             FileServerMount, HorovodJob, ImageReference, InputDirectory, InvalidSpecError,
                             OutputDirectory, SetupTask, UnmanagedMount)
from horovod_batchai._models.mounts import ACCOUNT_PLACEHOLDER
from horovod_batchai._models.names import check_share_path, check_storage_account

REPO = Path(__file__).resolve().parents[2]
TUTORIAL_JOB = REPO / "examples" / "job.json"
KEY = "c2VjcmV0LWtleS1mb3ItdGVzdHMtb25seQ=="


class FakeStorage:
    """Stands in for a FileShare as the source of an account name and key (no service needed)."""

    account_name = "mystorageaccount"

    def __init__(self) -> None:
        self.key_requests = 0

    def get_account_key(self) -> str:
        self.key_requests += 1
        return KEY


def share_mount(path: str = "myshare") -> AzureFileShareMount:
    return AzureFileShareMount.for_share("mystorageaccount", "myshare", relative_mount_path=path, account_key=KEY)


def test_tutorial_job_json_loads_verbatim_and_keeps_batchai_variables() -> None:
    spec = HorovodJob.from_file(TUTORIAL_JOB)
    assert spec.node_count == 4
    assert spec.script == "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/cifar_cnn_distributed.py"
    assert spec.arguments == "--dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar"
    assert spec.std_out_err_path_prefix == "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar"
    assert spec.container_image == "tensorflow/tensorflow:1.8.0-gpu"
    assert spec.job_preparation.startswith("apt update;")
    (mount,) = spec.mounts
    assert mount.account_name == ACCOUNT_PLACEHOLDER and mount.account_key is None
    assert spec.needs_storage


def test_from_file_fills_storage_from_a_share_without_listing_accounts() -> None:
    storage = FakeStorage()
    spec = HorovodJob.from_file(TUTORIAL_JOB, storage=storage)
    (mount,) = spec.mounts
    assert mount.account_name == "mystorageaccount"
    assert mount.azure_file_url == "https://mystorageaccount.file.core.windows.net/myshare"
    assert mount.account_key == KEY and storage.key_requests == 1
    assert not spec.needs_storage
    # the key is held but never shown
    assert KEY not in repr(spec) and KEY not in repr(mount) and KEY not in json.dumps(spec.to_dict())


def test_from_file_with_explicit_account_and_key() -> None:
    spec = HorovodJob.from_file(TUTORIAL_JOB, storage_account_name="otheraccount", storage_account_key=KEY)
    assert spec.mounts[0].azure_file_url == "https://otheraccount.file.core.windows.net/myshare"
    with pytest.raises(InvalidSpecError, match="storage_account_key"):
        HorovodJob.from_file(TUTORIAL_JOB, storage_account_key=KEY)


def test_an_unmanaged_mount_command_is_sent_but_never_shown() -> None:
    command = "mount -t cifs //fs/data -o username=me,password=Pa55-not-shown"
    mount = UnmanagedMount(mount_command=command, relative_mount_path="data")
    spec = HorovodJob.from_file(TUTORIAL_JOB, storage=FakeStorage()).replace(mounts=(share_mount(), mount))
    for shown in (repr(mount), repr(spec), json.dumps(spec.to_dict()), str(spec.to_dict())):
        assert "Pa55-not-shown" not in shown
    assert spec.to_dict()["properties"]["mountVolumes"]["unmanagedFileSystems"][0]["mountCommand"] == "<SECRET>"
    # The request sent to the service carries the real command.
    from horovod_batchai._models.job_json import job_to_rest
    sent = job_to_rest(spec, cluster_id=None).serialize()["properties"]["mountVolumes"]
    assert sent["unmanagedFileSystems"][0]["mountCommand"] == command and mount.mount_command == command


def test_to_dict_round_trips_and_validates_again(tmp_path: Path) -> None:
    spec = HorovodJob.from_file(TUTORIAL_JOB, storage=FakeStorage()).replace(
        environment_variables={"EPOCHS": "2"}, secrets={"TOKEN": "hunter2"}, max_wall_clock_time=timedelta(hours=2))
    document = spec.to_dict()
    assert "hunter2" not in json.dumps(document)
    path = tmp_path / "job.json"
    path.write_text(json.dumps(document))
    again = HorovodJob.from_file(path, storage=FakeStorage())
    assert again.replace(secrets={"TOKEN": "hunter2"}) == spec
    assert again.max_wall_clock_time == timedelta(hours=2)


def test_replace_validates() -> None:
    spec = HorovodJob.from_file(TUTORIAL_JOB)
    assert spec.replace(node_count=2).node_count == 2
    with pytest.raises(InvalidSpecError, match="node_count"):
        spec.replace(node_count=0)


@pytest.mark.parametrize("document, field", [
    ({"properties": {"nodeCount": "four", "horovodSettings": {"pythonScriptFilePath": "x"}}}, "nodeCount"),
    ({"properties": {"nodeCount": 1, "horovodSettings": {"commandLineArgs": "--x"}}}, "horovodSettings"),
    ({"properties": {"nodeCount": 1, "customToolkitSettings": {"commandLine": "echo"}}}, "customToolkitSettings"),
    ({"$schema": "https://example.com/job.json", "properties": {}}, "$schema"),
    ({"$schema": "https://raw.githubusercontent.com/Azure/BatchAI/master/schemas/2018-05-01/cluster.json",
      "properties": {}}, "$schema"),
    ({"properties": {"nodeCount": 1, "schedulingPriority": "urgent",
                     "horovodSettings": {"pythonScriptFilePath": "x"}}}, "schedulingPriority"),
])
def test_schema_errors_name_the_field(document: dict, field: str) -> None:
    with pytest.raises(InvalidSpecError) as info:
        HorovodJob.from_dict(document)
    assert field in info.value.field
    assert info.value.valid_form


def test_schema_error_does_not_echo_a_key() -> None:
    document = json.loads(TUTORIAL_JOB.read_text())
    document["properties"]["mountVolumes"]["azureFileShares"][0]["credentials"] = {"accountKey": ["s3cr3t-key"]}
    with pytest.raises(InvalidSpecError) as info:
        HorovodJob.from_dict(document)
    assert "s3cr3t-key" not in str(info.value)


def test_from_file_reports_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidSpecError, match="does not exist"):
        HorovodJob.from_file(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidSpecError, match="not valid JSON"):
        HorovodJob.from_file(bad)


def test_built_in_python_equals_the_json() -> None:
    from_json = HorovodJob.from_file(TUTORIAL_JOB, storage=FakeStorage())
    built = HorovodJob(
        script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/cifar_cnn_distributed.py",
        arguments=["--dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar"],
        node_count=4, container_image="tensorflow/tensorflow:1.8.0-gpu",
        job_preparation="apt update; apt install mpi-default-dev mpi-default-bin -y; pip install keras horovod",
        mounts=[share_mount()], std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar")
    assert built == from_json


def test_std_out_err_defaults_to_the_first_mount() -> None:
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/data/train.py", mounts=[share_mount("data")])
    assert spec.std_out_err_path_prefix == "$AZ_BATCHAI_JOB_MOUNT_ROOT/data"


@pytest.mark.parametrize("changes, field", [
    ({"script": "$AZ_BATCHAI_JOB_MOUNT_ROOT/elsewhere/train.py"}, "script"),
    ({"script": ""}, "script"),
    ({"node_count": True}, "node_count"),
    ({"process_count": 0}, "process_count"),
    ({"priority": "urgent"}, "priority"),
    ({"max_wall_clock_time": timedelta(0)}, "max_wall_clock_time"),
    ({"environment_variables": {"1BAD": "x"}}, "environment_variables"),
    ({"secrets": {"A": "1"}, "environment_variables": {"A": "2"}}, "secrets"),
    ({"mounts": [share_mount(), share_mount()]}, "mounts[1].relative_mount_path"),
    ({"mounts": ["not a mount"]}, "mounts[0]"),
    ({"output_directories": [OutputDirectory(id="OUT", path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/nope")]},
     "output_directories[OUT].path_prefix"),
])
def test_bad_job_specs_name_the_field(changes: dict, field: str) -> None:
    base = dict(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py", mounts=[share_mount()])
    with pytest.raises(InvalidSpecError) as info:
        HorovodJob(**{**base, **changes})
    assert info.value.field == field


def test_spec_is_frozen_and_keyword_only() -> None:
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py", mounts=[share_mount()])
    with pytest.raises(Exception):
        spec.node_count = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        HorovodJob("$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py")  # type: ignore[misc]


def test_paths_under_declared_input_directories_are_accepted() -> None:
    spec = HorovodJob(script="${AZ_BATCHAI_INPUT_CODE}/train.py", mounts=[share_mount()],
                      input_directories=[InputDirectory(id="CODE", path="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/code")])
    spec.check_paths_against([])


def test_paths_under_cluster_mounts_are_checked_against_the_cluster() -> None:
    spec = HorovodJob(script="$AZ_BATCHAI_MOUNT_ROOT/azfiles/train.py",
                      std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/azfiles")
    spec.check_paths_against([share_mount("azfiles")])
    with pytest.raises(InvalidSpecError, match="outside every mount"):
        spec.check_paths_against([share_mount("other")])
    with pytest.raises(InvalidSpecError, match="outside every mount"):
        HorovodJob(script="/opt/train.py", mounts=[share_mount()]).check_paths_against([])


def test_cluster_spec_validation() -> None:
    key = "ssh-rsa AAAAB3NzaC1yc2E test"
    spec = ClusterSpec(vm_size="Standard_NC6", admin_user_name="demo", ssh_public_key=key)
    assert spec.target_node_count == 1 and spec.maximum_node_count == 1
    auto = ClusterSpec(vm_size="Standard_NC6", admin_user_name="demo", ssh_public_key=key, auto_scale=(0, 4))
    assert auto.auto_scale == AutoScale(minimum=0, maximum=4) and auto.maximum_node_count == 4
    cases = [
        (dict(vm_size="NC6"), "vm_size"),
        (dict(vm_priority="spot"), "vm_priority"),
        (dict(target_node_count=-1), "target_node_count"),
        (dict(target_node_count=2, auto_scale=AutoScale(minimum=0, maximum=2)), "target_node_count"),
        (dict(ssh_public_key=None), "ssh_public_key"),
        (dict(ssh_public_key="not a key"), "ssh_public_key"),
        (dict(admin_user_name="root"), "admin_user_name"),
    ]
    for changes, field in cases:
        with pytest.raises(InvalidSpecError) as info:
            ClusterSpec(**{**dict(vm_size="Standard_NC6", admin_user_name="demo", ssh_public_key=key), **changes})
        assert info.value.field == field, changes
    with pytest.raises(InvalidSpecError, match="auto_scale"):
        AutoScale(minimum=3, maximum=2)
    with_password = ClusterSpec(vm_size="Standard_D1", admin_user_name="demo", admin_password="DemoPa$$w0rd")
    assert "DemoPa$$w0rd" not in repr(with_password)


@pytest.mark.parametrize("path", ["", "../x", "a//b", "a/./b", "a:b", "x" * 256])
def test_bad_share_paths(path: str) -> None:
    with pytest.raises(InvalidSpecError):
        check_share_path(path)


def test_names() -> None:
    assert check_share_path("cifar/data/") == "cifar/data" and check_share_path("/", allow_root=True) == ""
    with pytest.raises(InvalidSpecError, match="is absolute"):
        check_share_path("/cifar/data/")  # refused, not made relative in silence
    for bad in ("MyAccount", "ab", "a" * 25, "my-account"):
        with pytest.raises(InvalidSpecError, match="3-24 lower-case"):
            check_storage_account(bad)


def test_a_trailing_newline_does_not_pass_a_name_check() -> None:
    from horovod_batchai._models.names import (check_batchai_name, check_env_name, check_resource_group,
                                        check_subscription_id)
    checks = [(check_storage_account, "myaccount"), (lambda n: check_batchai_name(n, "name"), "cifar"),
              (check_resource_group, "batchai.horovod"), (check_subscription_id, "0" * 8 + "-0000-0000-0000-" + "0" * 12)]
    for check, good in checks:
        check(good)
        with pytest.raises(InvalidSpecError):
            check(good + "\n")
    with pytest.raises(InvalidSpecError):
        check_env_name("PATH\n", "environment_variables")


def test_an_argument_with_a_newline_is_quoted_not_split_into_two_commands() -> None:
    from horovod_batchai._models.job_spec import join_arguments
    assert join_arguments(["--epochs=3", "--dir=/tmp/x\n"]) == '--epochs=3 "--dir=/tmp/x\n"'


def test_from_file_reports_unreadable_files_by_name(tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(json.dumps({"properties": {"nodeCount": 1}}).encode() + b"\xff")
    with pytest.raises(InvalidSpecError, match="not UTF-8") as info:
        HorovodJob.from_file(latin1)
    assert info.value.field == "the document" and info.value.source == str(latin1)
    with pytest.raises(InvalidSpecError, match="cannot be read") as info:
        HorovodJob.from_file(tmp_path)  # a directory
    assert info.value.field == "path"


def test_a_malformed_duration_names_its_field() -> None:
    document = json.loads(TUTORIAL_JOB.read_text())
    document["properties"]["constraints"] = {"maxWallClockTime": "2 hours"}
    with pytest.raises(InvalidSpecError, match="ISO 8601") as info:
        HorovodJob.from_dict(document)
    assert info.value.field == "properties.constraints.maxWallClockTime"
    document["properties"]["constraints"] = {"maxWallClockTime": "PT2H"}
    assert HorovodJob.from_dict(document).max_wall_clock_time == timedelta(hours=2)


@pytest.mark.parametrize("changes, field", [
    ({"mounts": share_mount()}, "mounts"),  # one mount, not a sequence of them
    ({"mounts": None}, "mounts"),
    ({"environment_variables": ["A=1"]}, "environment_variables"),
    ({"secrets": None}, "secrets"),
    ({"input_directories": ["$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/data"]}, "input_directories[0]"),
    ({"output_directories": [{"id": "OUT", "path_prefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare"}]},
     "output_directories[0]"),
    ({"container_image": "tensorflow/tensorflow", "container_registry": "myregistry.azurecr.io"},
     "container_registry"),
])
def test_job_fields_of_the_wrong_kind_name_the_field(changes: dict, field: str) -> None:
    base = dict(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py", mounts=[share_mount()])
    with pytest.raises(InvalidSpecError) as info:
        HorovodJob(**{**base, **changes})
    assert info.value.field == field
    assert info.value.valid_form


@pytest.mark.parametrize("changes, field", [
    ({"mounts": share_mount()}, "mounts"),
    ({"setup_task": "apt install -y x"}, "setup_task"),
    ({"image": "UbuntuServer 16.04-LTS"}, "image"),
    ({"auto_scale": (0, 2, 4)}, "auto_scale"),
])
def test_cluster_fields_of_the_wrong_kind_name_the_field(changes: dict, field: str) -> None:
    base = dict(vm_size="Standard_NC6", admin_user_name="demo", ssh_public_key="ssh-rsa AAAAB3NzaC1yc2E test")
    with pytest.raises(InvalidSpecError) as info:
        ClusterSpec(**{**base, **changes})
    assert info.value.field == field
    assert ClusterSpec(**{**base, "auto_scale": [0, 2]}).auto_scale == AutoScale(minimum=0, maximum=2)


def test_setup_task_and_mount_fields_of_the_wrong_kind() -> None:
    from horovod_batchai import SetupTask
    with pytest.raises(InvalidSpecError) as info:
        SetupTask(command_line=None, std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/x")  # type: ignore[arg-type]
    assert info.value.field == "setup_task.command_line"
    with pytest.raises(InvalidSpecError) as info:
        AzureFileShareMount(account_name="mystorageaccount", azure_file_url=None,  # type: ignore[arg-type]
                            relative_mount_path="myshare")
    assert info.value.field == "mount.azure_file_url"


@pytest.mark.parametrize("changes, field, fragment", [
    ({"container_image": ""}, "container_image", "is empty"),
    ({"container_image": "TensorFlow/tensorflow"}, "container_image", "lower-case"),
    ({"container_image": "tensorflow/tensorflow", "shm_size": "lots"}, "shm_size", "not a size"),
    ({"shm_size": "2g"}, "shm_size", "container_image is not"),
    ({"container_registry": ContainerRegistry(username="me")}, "container_registry", "container_image is not"),
    ({"job_preparation": ""}, "job_preparation", "is empty"),
    ({"job_preparation": "apt install\x00 x"}, "job_preparation", "NUL"),
    ({"interpreter": ""}, "interpreter", "is empty"),
    ({"arguments": "--x " * 20_000}, "arguments", "80000 bytes long"),
    ({"arguments": ["--epochs", None]}, "arguments[1]", "null"),
    ({"script": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train\x00.py"}, "script", "NUL"),
    ({"script": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py\nrm -rf ~"}, "script", "control character"),
    ({"script": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/../../etc/train.py"}, "script", "outside every mount"),
    ({"script": "$AZ_BATCHAI_INPUT_CODE/train.py"}, "script", "not under an input directory"),
    ({"node_count": 2**31}, "node_count", "int32"),
    ({"process_count": 2.0}, "process_count", "not a positive integer"),
    ({"environment_variables": {"EPOCHS": 2}}, "environment_variables['EPOCHS']", "not a string"),
    ({"environment_variables": {"EPOCHS": None}}, "environment_variables['EPOCHS']", "not a string"),
    ({"secrets": {"TOKEN": "s3cr3t\x00"}}, "secrets['TOKEN']", "NUL"),
    ({"secrets": {f"S{i}": "v" * 100_000 for i in range(12)}}, "environment_variables and secrets", "1048576"),
    ({"cluster_id": "nc6cluster"}, "cluster_id", "not a cluster resource id"),
    (lambda: {"output_directories": [OutputDirectory(id="OUT", path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare",
                                                     path_suffix="/models")]}, "output_directories.path_suffix",
     "not a relative path"),
    (lambda: {"input_directories": [InputDirectory(id="DATA", path="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/a")],
              "output_directories": [OutputDirectory(id="data", path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare")]},
     "output_directories[0].id", "repeats the id"),
])
def test_python_arguments_are_checked_by_the_same_rules_naming_the_argument(changes: Any, field: str,
                                                                            fragment: str) -> None:
    base = dict(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py", mounts=[share_mount()])
    with pytest.raises(InvalidSpecError) as info:
        HorovodJob(**{**base, **(changes() if callable(changes) else changes)})
    assert info.value.field == field and fragment in str(info.value), str(info.value)
    assert info.value.source is None and "s3cr3t" not in str(info.value)


@pytest.mark.parametrize("build, field", [
    (lambda: AzureFileShareMount(account_name="otheraccount", relative_mount_path="x",
                                 azure_file_url="https://mystorageaccount.file.core.windows.net/myshare"),
     "mount.account_name"),
    (lambda: AzureFileShareMount(account_name="mystorageaccount", relative_mount_path="x",
                                 azure_file_url="https://mystorageaccount.blob.core.windows.net/myshare"),
     "mount.azure_file_url"),
    (lambda: AzureFileShareMount.for_share("mystorageaccount", "myshare", account_key="k\x00ey"), "mount.account_key"),
    (lambda: AzureBlobMount(account_name="mystorageaccount", container_name="Bad_Name", relative_mount_path="b"),
     "mount.container_name"),
    (lambda: FileServerMount(file_server_id=None, relative_mount_path="nfs"), "mount.file_server_id"),
    (lambda: UnmanagedMount(mount_command=None, relative_mount_path="nfs"), "mount.mount_command"),
    (lambda: ContainerRegistry(server_url="my registry", username="me"), "container_registry.server_url"),
    (lambda: ContainerRegistry(username=""), "container_registry.username"),
])
def test_mount_and_registry_arguments_name_the_field(build: Any, field: str) -> None:
    with pytest.raises(InvalidSpecError) as info:
        build()
    assert info.value.field == field, str(info.value)
    assert "k\x00ey" not in str(info.value)


def test_a_job_json_spec_names_properties_until_a_field_is_replaced_in_python(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    document = json.loads((REPO / "tests" / "sdk" / "good_job_json" / "base.json").read_text())
    path.write_text(json.dumps(document))
    spec = HorovodJob.from_file(path, storage=FakeStorage())
    with pytest.raises(InvalidSpecError) as info:
        spec.check_paths_against([])  # fine: the script is under the job's own mount
        spec.replace(script="$AZ_BATCHAI_MOUNT_ROOT/azfiles/train.py").check_paths_against([])
    assert info.value.field == "script" and info.value.source is None  # the caller wrote it in Python
    with pytest.raises(InvalidSpecError) as info:
        spec.replace(node_count=0)
    assert info.value.field == "node_count"
    with pytest.raises(InvalidSpecError) as info:  # the script still comes from the file, now outside the mounts
        spec.replace(mounts=(share_mount("elsewhere"),), std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/elsewhere")
    assert (info.value.field, info.value.source) == ("properties.horovodSettings.pythonScriptFilePath", str(path))
    with pytest.raises(InvalidSpecError) as info:
        spec.check_cluster("/subscriptions/x/resourceGroups/rg/providers/Microsoft.BatchAI/workspaces/w/clusters/c",
                           "c", maximum_node_count=1)
    assert (info.value.field, info.value.source) == ("properties.nodeCount", str(path))


@pytest.mark.parametrize("build, field", [
    (lambda: SetupTask(command_line="", std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/x"), "setup_task.command_line"),
    (lambda: SetupTask(command_line="true", std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/x\n"),
     "setup_task.std_out_err_path_prefix"),
    (lambda: SetupTask(command_line="true", std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/x", secrets={"T": 5}),
     "setup_task.secrets['T']"),
    (lambda: SetupTask(command_line="true", std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/x",
                       environment_variables={"T": "1"}, secrets={"T": "2"}), "setup_task.secrets"),
    (lambda: ImageReference(publisher="", offer="UbuntuServer", sku="16.04-LTS"), "image.publisher"),
    (lambda: ClusterSpec(vm_size="Standard_NC6", admin_user_name="demo", admin_password="Pa55\x00word"),
     "admin_password"),
    (lambda: ClusterSpec(vm_size="Standard_NC6", admin_user_name="demo", ssh_public_key="ssh-rsa AAAA\nssh-rsa B"),
     "ssh_public_key"),
])
def test_cluster_arguments_name_the_field(build: Any, field: str) -> None:
    with pytest.raises(InvalidSpecError) as info:
        build()
    assert info.value.field == field, str(info.value)
    assert "Pa55" not in str(info.value)


def test_a_bad_directory_id_names_the_variable_of_its_kind() -> None:
    from horovod_batchai import InputDirectory, InvalidSpecError, OutputDirectory
    with pytest.raises(InvalidSpecError, match=r"output_directories\.id: .*\$AZ_BATCHAI_OUTPUT_<id>"):
        OutputDirectory(id="bad id", path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/share")
    with pytest.raises(InvalidSpecError, match=r"input_directories\.id: .*\$AZ_BATCHAI_INPUT_<id>"):
        InputDirectory(id="bad id", path="$AZ_BATCHAI_JOB_MOUNT_ROOT/share")
