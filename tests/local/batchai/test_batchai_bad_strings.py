"""Strings no process can take, sent straight to Microsoft.BatchAI through Microsoft's own client:
a NUL byte, an unpaired surrogate, a control character in a path, a command line or variable
larger than Linux lets one process argument be. Each is a 400 naming the property, before anything
is stored -- never a job that fails later with InternalError, a 500, or a traceback in the log."""
from __future__ import annotations

import logging
import time

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.batchai import models as m

from batchai_helpers import EXP, RG, WS, cluster_params, job_params, make_cluster, make_workspace

SECRET = "Zq9-not-to-be-echoed"
HOROVOD = "properties.horovodSettings"


@pytest.fixture
def cluster(resources, batchai):
    make_workspace(resources, batchai)
    return make_cluster(batchai, nodes=2, mounts=False)


def _horovod(cluster_id: str, *, script: str = "$AZ_BATCHAI_JOB_TEMP/train.py", args: str = "--epochs 1",
             **extra) -> m.JobCreateParameters:
    params = job_params(cluster_id, custom_toolkit_settings=None, **extra)
    params.horovod_settings = m.HorovodSettings(python_script_file_path=script, command_line_args=args)
    return params


def _env(name: str, value: str) -> list[m.EnvironmentVariable]:
    return [m.EnvironmentVariable(name=name, value=value)]


JOB_CASES = {
    "2 MB commandLineArgs": (lambda c: _horovod(c, args="--x " * (512 * 1024)),
                             f"{HOROVOD}.commandLineArgs", "at most 65536 bytes"),
    "NUL in the script path": (lambda c: _horovod(c, script="$AZ_BATCHAI_JOB_TEMP/train\x00.py"),
                               f"{HOROVOD}.pythonScriptFilePath", "NUL"),
    "newline in the script path": (lambda c: _horovod(c, script="$AZ_BATCHAI_JOB_TEMP/train.py\nrm -rf ~"),
                                   f"{HOROVOD}.pythonScriptFilePath", "control character"),
    "5000-byte script path": (lambda c: _horovod(c, script="$AZ_BATCHAI_JOB_TEMP/" + "d/" * 2500 + "t.py"),
                              f"{HOROVOD}.pythonScriptFilePath", "at most 4096 bytes"),
    "unpaired surrogate in arguments": (lambda c: _horovod(c, args="--name \ud800"),
                                        f"{HOROVOD}.commandLineArgs", "unpaired surrogate"),
    "NUL in a custom command line": (lambda c: job_params(c, command="echo hi\x00"),
                                     "properties.customToolkitSettings.commandLine", "NUL"),
    "2 MB custom command line": (lambda c: job_params(c, command="true " + "#" * (2 * 1024 * 1024)),
                                 "properties.customToolkitSettings.commandLine", "at most 65536 bytes"),
    "NUL in the job preparation": (lambda c: job_params(c, job_preparation=m.JobPreparation(command_line="a\x00b")),
                                   "properties.jobPreparation.commandLine", "NUL"),
    "NUL in stdOutErrPathPrefix": (lambda c: job_params(c, std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/a\x00"),
                                   "properties.stdOutErrPathPrefix", "NUL"),
    "NUL in a variable": (lambda c: job_params(c, environment_variables=_env("A", "x\x00y")),
                          "properties.environmentVariables[0].value", "NUL"),
    "NUL in a secret": (lambda c: job_params(c, secrets=[m.EnvironmentVariableWithSecretValue(
        name="TOKEN", value=SECRET + "\x00")]), "properties.secrets[0].value", "NUL"),
    "a variable over one argument": (lambda c: job_params(c, environment_variables=_env("BLOB", "v" * 200_000)),
                                     "properties.environmentVariables[0]", "131072"),
    "variables over 1 MiB together": (lambda c: job_params(c, secrets=[m.EnvironmentVariableWithSecretValue(
        name=f"S{i}", value="v" * 100_000) for i in range(12)]), "properties.secrets", "1048576"),
    "NUL in an output path": (lambda c: job_params(c, output_directories=[m.OutputDirectory(
        id="OUT", path_prefix="$AZ_BATCHAI_JOB_TEMP", path_suffix="a\x00")]),
        "properties.outputDirectories[0].pathSuffix", "NUL"),
}


@pytest.mark.parametrize("case", list(JOB_CASES))
def test_a_job_string_no_process_can_take_is_a_400_naming_the_property(case, cluster, batchai, caplog):
    caplog.set_level(logging.DEBUG)
    build, field, fragment = JOB_CASES[case]
    with pytest.raises(HttpResponseError) as info:
        batchai.jobs.begin_create(RG, WS, EXP, "job", build(cluster.id)).result()
    err = info.value
    assert err.status_code == 400, err
    assert err.error.code in ("InvalidParameter", "InvalidRequestContent"), err.error.code
    assert field in err.error.message and fragment in err.error.message, err.error.message
    assert SECRET not in err.error.message and len(err.error.message) < 1000
    assert list(batchai.jobs.list_by_experiment(RG, WS, EXP)) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], \
        [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


CLUSTER_CASES = {
    "2 MB setup task": (dict(node_setup=m.NodeSetup(setup_task=m.SetupTask(
        command_line="true " + "#" * (2 * 1024 * 1024), std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT"))),
        "properties.nodeSetup.setupTask.commandLine", "at most 65536 bytes"),
    "NUL in a setup task secret": (dict(node_setup=m.NodeSetup(setup_task=m.SetupTask(
        command_line="true", std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT",
        secrets=[m.EnvironmentVariableWithSecretValue(name="T", value=SECRET + "\x00")]))),
        "properties.nodeSetup.setupTask.secrets[0].value", "NUL"),
    "NUL in a mount path": (dict(node_setup=m.NodeSetup(mount_volumes=m.MountVolumes(
        unmanaged_file_systems=[m.UnmanagedFileSystemReference(mount_command="mount -t tmpfs none",
                                                               relative_mount_path="a\x00")]))),
        "properties.nodeSetup.mountVolumes.unmanagedFileSystems[0].relativeMountPath", "NUL"),
    "NUL in the admin password": (dict(user_account_settings=m.UserAccountSettings(
        admin_user_name="DemoUser", admin_user_password=SECRET + "\x00")),
        "properties.userAccountSettings.adminUserPassword", "NUL"),
}


@pytest.mark.parametrize("case", list(CLUSTER_CASES))
def test_a_cluster_string_no_process_can_take_is_a_400_naming_the_property(case, resources, batchai, caplog):
    make_workspace(resources, batchai, experiment=None)
    caplog.set_level(logging.DEBUG)
    settings, field, fragment = CLUSTER_CASES[case]
    with pytest.raises(HttpResponseError) as info:
        batchai.clusters.begin_create(RG, WS, "cluster", cluster_params(**settings)).result()
    err = info.value
    assert err.status_code == 400 and field in err.error.message and fragment in err.error.message, err.error.message
    assert SECRET not in err.error.message
    assert list(batchai.clusters.list_by_workspace(RG, WS)) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_the_longest_command_allowed_runs(cluster, batchai):
    """The bound is where it is for a reason, not too tight: a 60 KB command line still runs."""
    command = "true " + "#" * 60_000
    batchai.jobs.begin_create(RG, WS, EXP, "long", job_params(cluster.id, command=command)).result()
    deadline = time.monotonic() + 60
    while (job := batchai.jobs.get(RG, WS, EXP, "long")).execution_state not in ("succeeded", "failed"):
        assert time.monotonic() < deadline, job.execution_state
        time.sleep(0.2)
    assert job.execution_state == "succeeded", job.execution_info
