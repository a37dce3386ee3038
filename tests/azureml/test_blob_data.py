"""Blob containers as job inputs and outputs on Azure ML: each becomes an AzureBlob datastore
(with an account key, a SAS token, or no credentials: identity-based), mounted read-only as a
job input when the mount is read-only (blobfuse ``-o ro`` in a job.json) and read-write as an
output otherwise, with the same identity checks as a share's datastore."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from horovod_batchai import AzureBlobMount, ConflictError, HorovodJob, InvalidSpecError, Target, Workspace

import scenario as S
from replay import ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"
DATA, RESULTS = "cifar-data", "results"
#: the data lives in an account of its own, whose key the job is not given: identity-based
DATA_ACCOUNT = "cifardatasets"
DATA_STORE, RESULTS_STORE = f"{DATA_ACCOUNT}__cifar_data", f"{S.ACCOUNT}__results"


def _job_json_with_blobs() -> HorovodJob:
    """The tutorial's job.json with two azureBlobFileSystems: the data, read-only and without
    credentials (another account, whose key the job is not given: identity-based), and the
    results, read-write with the account key (filled in like the share's)."""
    document = json.loads(JOB_JSON.read_text(encoding="utf-8"))
    document["properties"]["mountVolumes"]["azureBlobFileSystems"] = [
        {"accountName": DATA_ACCOUNT, "containerName": DATA, "relativeMountPath": "data", "mountOptions": "-o ro"},
        {"accountName": "<AZURE_BATCHAI_STORAGE_ACCOUNT>", "containerName": RESULTS, "relativeMountPath": "results",
         "credentials": {"accountKey": "<AZURE_BATCHAI_STORAGE_KEY>"}}]
    spec = HorovodJob.from_dict(document, source="job.json").with_storage(account_name=S.ACCOUNT,
                                                                          account_key=S.ACCOUNT_KEY)
    return spec.replace(node_count=2)


def _mounted_as_data_and_results(request: Any, body: Any) -> Optional[str]:
    props = body["properties"]
    inputs = {k: (v["uri"], v["mode"], v["jobInputType"]) for k, v in props["inputs"].items()}
    outputs = {k: (v["uri"], v["mode"]) for k, v in props["outputs"].items()}
    if list(inputs.values()) != [(f"azureml://datastores/{DATA_STORE}/paths/", "ReadOnlyMount", "uri_folder")]:
        return f"inputs {inputs}"
    if sorted(outputs.values()) != sorted([(f"azureml://datastores/{S.DATASTORE}/paths/", "ReadWriteMount"),
                                           (f"azureml://datastores/{RESULTS_STORE}/paths/", "ReadWriteMount")]):
        return f"outputs {outputs}"
    (name,) = inputs
    if "${{inputs." + name + "}}" not in props["command"]:
        return "the command does not link the input where the job expects it"
    return None


def test_job_json_blob_mounts_become_datastores_inputs_and_outputs(target: Target,
                                                                   transport: ReplayTransport) -> None:
    spec = _job_json_with_blobs()
    submitted = S.SubmittedJob()
    # Every datastore is read first; the containers of the two missing ones are read (with the
    # caller's identity, and with the account key); they are registered once the job's name is
    # known to be free (recording 10: a 404, then a PUT).
    transport.add(S.datastore_get(), S.datastore_missing(DATA_STORE), S.datastore_missing(RESULTS_STORE),
                  S.container_properties(DATA_ACCOUNT, DATA, signed="bearer"),
                  S.container_properties(S.ACCOUNT, RESULTS, signed="key"),
                  S.not_found(f"{S.WS_PATH}/jobs/{S.JOB}", S.JOB_GET, "UserError", "the job does not exist yet"),
                  S.blob_datastore_put(DATA_STORE, DATA_ACCOUNT, DATA, "None"),
                  S.blob_datastore_put(RESULTS_STORE, S.ACCOUNT, RESULTS, "AccountKey"),
                  *S.image_environment(), S.blob_job_put(submitted, _mounted_as_data_and_results))
    job = Workspace(target, S.RG, S.WS).create_experiment(S.EXPERIMENT).submit(
        S.JOB, spec, cluster=S.steady_cluster(target))
    transport.verify()
    assert submitted.sent is not None and S.ACCOUNT_KEY not in json.dumps(submitted.sent)
    again = job.spec.mounts  # read back from the job: no key, the read-only flag kept
    blobs = [m for m in again if isinstance(m, AzureBlobMount)]
    assert [(m.container_name, m.read_only, m.account_key) for m in blobs] == [(DATA, True, None),
                                                                              (RESULTS, False, None)]


def test_a_blob_datastore_that_is_other_storage_is_refused_before_anything_changes(
        target: Target, transport: ReplayTransport) -> None:
    """Recording 10's datastore, as recorded (container 'testblob' of the sanitized account),
    under the name this job's data container would use."""
    transport.add(S.datastore_get(), S.blob_datastore_get(DATA_STORE))
    with pytest.raises(ConflictError) as caught:
        Workspace(target, S.RG, S.WS).create_experiment(S.EXPERIMENT).submit(
            S.JOB, _job_json_with_blobs(), cluster=S.steady_cluster(target))
    message = str(caught.value)
    assert message.startswith("properties.mountVolumes.azureBlobFileSystems[0]: ")
    assert "container 'testblob', not 'cifar-data'" in message and "storage account 'Sanitized'" in message
    assert all(r.startswith("GET ") for r in transport.requests)
    transport.verify()


def test_a_blob_datastore_that_is_the_container_is_reused(target: Target, transport: ReplayTransport) -> None:
    spec = _job_json_with_blobs()
    spec = spec.replace(mounts=tuple(m for m in spec.mounts if getattr(m, "container_name", None) != RESULTS))
    submitted = S.SubmittedJob()
    transport.add(S.datastore_get(), S.blob_datastore_get(DATA_STORE, storage={"Sanitized": DATA_ACCOUNT,
                                                                               "testblob": DATA}),
                  S.not_found(f"{S.WS_PATH}/jobs/{S.JOB}", S.JOB_GET, "UserError", "the job does not exist yet"),
                  *S.image_environment(), S.blob_job_put(submitted, lambda request, body: None))
    Workspace(target, S.RG, S.WS).create_experiment(S.EXPERIMENT).submit(S.JOB, spec,
                                                                         cluster=S.steady_cluster(target))
    transport.verify()
    assert not [r for r in transport.requests if "/datastores/" in r and not r.startswith("GET ")]


@pytest.mark.parametrize("credentials, wire", [
    ({"account_key": S.ACCOUNT_KEY}, {"credentialsType": "AccountKey",
                                      "secrets": {"secretsType": "AccountKey", "key": S.ACCOUNT_KEY}}),
    ({"sas_token": "sv=2024-01-01&sig=c2ln"}, {"credentialsType": "Sas",
                                                "secrets": {"secretsType": "Sas", "sasToken": "sv=2024-01-01&sig=c2ln"}}),
    ({}, {"credentialsType": "None"}),
])
def test_a_blob_mounts_credential_is_the_datastores(credentials: dict, wire: dict) -> None:
    """What azure-ai-ml sends for each kind of blob credential (library behaviour: only the
    credential-less kind is recorded, recording 10)."""
    from horovod_batchai._places.azureml.conversions import datastore_entity
    mount = AzureBlobMount(account_name=S.ACCOUNT, container_name=DATA, relative_mount_path="data", **credentials)
    body = datastore_entity(mount, description="d")._to_rest_object().as_dict()["properties"]
    assert (body["datastoreType"], body["accountName"], body["containerName"]) == ("AzureBlob", S.ACCOUNT, DATA)
    assert body["credentials"] == wire
    assert "sig=" not in repr(mount) and S.ACCOUNT_KEY not in repr(mount)


@pytest.mark.parametrize("options, problem", [
    ("-o attr_timeout=240", "takes no blobfuse options"),
    ("-o ro,attr_timeout=240", "takes no blobfuse options"),
])
def test_blobfuse_options_azure_ml_cannot_express(target: Target, transport: ReplayTransport, options: str,
                                                  problem: str) -> None:
    spec = _job_json_with_blobs()
    mounts = tuple(AzureBlobMount(account_name=DATA_ACCOUNT, container_name=DATA, relative_mount_path="data",
                                  mount_options=options) if getattr(m, "container_name", None) == DATA else m
                   for m in spec.mounts)
    with pytest.raises(InvalidSpecError, match=problem) as caught:
        Workspace(target, S.RG, S.WS).create_experiment(S.EXPERIMENT).submit(
            S.JOB, spec.replace(mounts=mounts), cluster=S.steady_cluster(target))
    assert caught.value.field.endswith("mount_options")
    assert transport.requests == []


def test_read_only_is_blobfuses_ro_option() -> None:
    typed = AzureBlobMount(account_name=S.ACCOUNT, container_name=DATA, relative_mount_path="d", read_only=True)
    written = AzureBlobMount(account_name=S.ACCOUNT, container_name=DATA, relative_mount_path="d",
                             mount_options="-o ro")
    assert typed == written and written.mount_options is None
    mixed = AzureBlobMount(account_name=S.ACCOUNT, container_name=DATA, relative_mount_path="d",
                           mount_options="-o allow_other,ro -o attr_timeout=240")
    assert mixed.read_only and mixed.mount_options == "-o allow_other -o attr_timeout=240"
    assert mixed.blobfuse_options == "-o allow_other -o attr_timeout=240 -o ro"
    with pytest.raises(InvalidSpecError, match="one credential"):
        AzureBlobMount(account_name=S.ACCOUNT, container_name=DATA, relative_mount_path="d", account_key="a2V5",
                       sas_token="sv=1&sig=x")


@pytest.mark.parametrize("credentials, words", [({}, "none is given"), ({"sas_token": "sv=1&sig=c2ln"}, "not a SAS")])
def test_batch_ai_mounts_blob_containers_with_the_key_only(tmp_path: Path, credentials: dict, words: str) -> None:
    """The same spec on the Batch AI API: blobfuse there takes the account key, so an
    identity-based or SAS mount is refused before any request, naming the mount."""
    from horovod_batchai._places.batchai.operations import check_job_spec
    target = Target.local(state_dir=tmp_path)  # nothing is started: the check sends no request
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    spec = spec.replace(mounts=spec.mounts + (AzureBlobMount(account_name=DATA_ACCOUNT, container_name=DATA,
                                                             relative_mount_path="data", **credentials),))
    record = S.steady_cluster(target)._record
    with pytest.raises(InvalidSpecError, match=words) as caught:
        check_job_spec(spec, record)
    assert caught.value.field == "mounts[1]" and "sig=" not in str(caught.value)
