"""Status, node counts and errors read from responses exactly as the service sent them: the
compute while it is created (upper-case VM size, null counts and allocation state), the compute
once created, and a job submission answered 400 with the service's error details."""
from __future__ import annotations

from pathlib import Path

import pytest

from horovod_batchai import (AllocationState, ConflictError, GpuCluster, HorovodJob, ResourceError, Target,
                             Workspace)

import scenario as S
from replay import ReplayTransport, recording

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"
REJECTED_FILE = "command_job__test_command_job.pyTestCommandJobtest_command_job_register_output"


def _cluster(target: Target) -> GpuCluster:
    return GpuCluster(Workspace(target, S.RG, S.WS), S.CLUSTER)


def test_a_compute_being_created(target: Target, transport: ReplayTransport) -> None:
    transport.add(S.compute_get_creating())
    status = _cluster(target).status()
    assert status.vm_size == "Standard_DS2_v2"  # sent as STANDARD_DS2_V2
    assert status.provisioning_state == "creating" and status.allocation_state is AllocationState.RESIZING
    assert status.node_state_counts.total == 0 and status.current_node_count == 0  # null, not yet counted
    assert status.auto_scale == (0, 2) and not status.errors and not status.is_ready
    transport.verify()


def test_a_wait_goes_from_creating_to_steady(target: Target, transport: ReplayTransport) -> None:
    transport.add(S.compute_get_creating(), S.compute_get(3))
    seen = []
    ready = _cluster(target).wait_until_ready(timeout=60, poll_interval=0, on_status=seen.append)
    assert [s.provisioning_state for s in seen] == ["creating", "succeeded"]
    assert ready.allocation_state is AllocationState.STEADY and ready.is_ready
    assert ready.allocation_state_transition_time is not None and ready.vm_size == "Standard_DS2_v2"
    transport.verify()


def test_an_existing_compute_reported_upper_case_is_the_size_asked_for(target: Target,
                                                                       transport: ReplayTransport) -> None:
    transport.add(S.compute_get_creating())
    cluster = Workspace(target, S.RG, S.WS).create_cluster(S.CLUSTER, vm_size="Standard_DS2_v2", target_node_count=2,
                                                           admin_user_name="azureuser", ssh_public_key=S.SSH_KEY)
    assert cluster.vm_size == "Standard_DS2_v2"
    transport.add(S.compute_get_creating())
    with pytest.raises(ConflictError, match="exists with VM size Standard_DS2_v2, not Standard_NC6s_v3"):
        Workspace(target, S.RG, S.WS).create_cluster(S.CLUSTER, vm_size=S.VM_SIZE, target_node_count=2,
                                                     admin_user_name="azureuser", ssh_public_key=S.SSH_KEY)
    assert all(r.startswith("GET ") for r in transport.requests)  # nothing created or changed
    transport.verify()


def test_a_submission_the_service_refuses_carries_its_code_and_details(target: Target,
                                                                       transport: ReplayTransport) -> None:
    """Recording 9's answer (400 UserError, two RequestInvalid details) to this package's job PUT."""
    submitted = S.SubmittedJob()
    put = S.job_put(submitted)
    put.status, put.adapt = 400, None
    put.response = recording(REJECTED_FILE)[0]["ResponseBody"]
    put.source = f"recording:{REJECTED_FILE}#0's response, to recording 3's request shape"
    transport.add(S.datastore_get(), S.not_found(f"{S.WS_PATH}/jobs/{S.JOB}", S.JOB_GET, "UserError", "a new job"),
                  *S.image_environment(), put)
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    with pytest.raises(ResourceError) as caught:
        Workspace(target, S.RG, S.WS).create_experiment(S.EXPERIMENT).submit(
            S.JOB, spec.replace(node_count=2), cluster=S.steady_cluster(target))
    err = caught.value
    assert (err.status_code, err.error_code) == (400, "UserError")
    assert str(err).startswith(f"submitting job {S.WS_PATH}/jobs/{S.JOB} failed with HTTP 400: UserError: "
                               "Request is invalid and/or missing fields.")
    assert "RequestInvalid: Could not find member 'assetVersion' on object of type 'UriFolderJobOutput'" in str(err)
    assert S.ACCOUNT_KEY not in str(err) and "Correlation" not in str(err)
    transport.verify()


def test_a_missing_datastore_carries_the_services_code(target: Target, transport: ReplayTransport) -> None:
    """Recording 10's 404 for a datastore: the code azure-ai-ml's error carries is the service's."""
    from horovod_batchai._models.errors import NotFoundError, azure_errors
    transport.add(S.datastore_missing(S.DATASTORE))
    backend = target.backend
    with pytest.raises(NotFoundError) as caught:
        with azure_errors("reading datastore", S.DATASTORE):
            backend.ml.datastores.get(S.DATASTORE)  # type: ignore[attr-defined]
    assert (caught.value.status_code, caught.value.error_code) == (404, "UserError")
    assert f"Could not find datastore: {S.DATASTORE}." in str(caught.value)
    transport.verify()
