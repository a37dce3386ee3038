"""Which storage a datastore is: read before it is registered or mounted, and never silently
something else. The datastores are recorded ones (recordings 2 and 10); their sanitized
account and share or container are renamed where a test needs them to be this test's."""
from __future__ import annotations

from pathlib import Path

import pytest

from horovod_batchai import ConflictError, FileShare, HorovodJob, Target, Workspace

import scenario as S
from replay import ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"


def _share_steps() -> list:
    """FileShare.create's requests after the datastore read, up to (not including) its PUT."""
    return S.share_create(*S.storage_api_versions())[1:-1]


def test_an_absent_datastore_is_created(target: Target, transport: ReplayTransport) -> None:
    transport.add(*S.share_create(*S.storage_api_versions()))
    FileShare.create(target, S.RG, S.ACCOUNT, S.SHARE, location=S.LOCATION)
    transport.verify()
    assert transport.requests[0].startswith("GET ") and "/datastores/" in transport.requests[0]  # read first
    assert transport.requests[-1].startswith("PUT ") and "/datastores/" in transport.requests[-1]


def test_a_datastore_that_is_the_share_is_reused_without_a_write(target: Target, transport: ReplayTransport) -> None:
    transport.add(S.datastore_get(), *_share_steps())
    FileShare.create(target, S.RG, S.ACCOUNT, S.SHARE, location=S.LOCATION)
    transport.verify()
    assert not [r for r in transport.requests if "/datastores/" in r and not r.startswith("GET ")]


@pytest.mark.parametrize("existing, differs", [
    # recording 10's credential-less AzureBlob datastore, as recorded (account "Sanitized", container "testblob")
    (lambda: S.blob_datastore_get(S.DATASTORE), ["type AzureBlob, not AzureFile", "storage account 'Sanitized'",
                                                  "share 'testblob', not 'myshare'"]),
    # recording 2's AzureFile datastore, as recorded: another account's share
    (lambda: S.datastore_get(storage={}), ["storage account 'Sanitized', not 'mystorageaccount'",
                                           "share 'testfileshare', not 'myshare'"]),
    # the same account, another share
    (lambda: S.datastore_get(storage={"Sanitized": S.ACCOUNT}), ["share 'testfileshare', not 'myshare'"]),
])
def test_a_datastore_that_is_other_storage_is_a_conflict_before_anything_changes(
        target: Target, transport: ReplayTransport, existing: object, differs: list[str]) -> None:
    transport.add(existing())  # type: ignore[operator]
    with pytest.raises(ConflictError) as caught:
        FileShare.create(target, S.RG, S.ACCOUNT, S.SHARE, location=S.LOCATION)
    message = str(caught.value)
    assert f"datastore '{S.DATASTORE}'" in message and all(d in message for d in differs), message
    assert caught.value.resource.endswith(f"/datastores/{S.DATASTORE}")
    assert S.ACCOUNT_KEY not in message
    assert len(transport.requests) == 1  # the read; no resource group, account, share or datastore written
    transport.verify()


def test_get_never_writes(target: Target, transport: ReplayTransport) -> None:
    """FileShare.get reads the account, its key and the share: no datastore request at all."""
    account, keys = _share_steps()[1:3]
    properties = S.Exchange("GET", f"/{S.SHARE}", f"built:{S.STORAGE_WHY}", host=S.FILE_HOST,
                            query={"restype": "share"}, headers={"ETag": '"0x8D0"', "x-ms-share-quota": "5120",
                                                                 "Last-Modified": "Mon, 23 Nov 2026 06:00:00 GMT",
                                                                 "x-ms-version": "2025-01-05"})
    transport.add(account, keys, properties)
    FileShare.get(target, S.RG, S.ACCOUNT, S.SHARE)
    transport.verify()
    assert not [r for r in transport.requests if "MachineLearningServices" in r]


def _spec() -> HorovodJob:
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    return spec.replace(node_count=2)


def test_a_submit_whose_share_datastore_is_other_storage_is_refused_before_the_job(
        target: Target, transport: ReplayTransport) -> None:
    """A process that did not register the share finds the datastore of its name: it is a blob
    container (recording 10's, as recorded), so the job is not created."""
    transport.add(S.blob_datastore_get(S.DATASTORE))
    experiment = Workspace(target, S.RG, S.WS).create_experiment(S.EXPERIMENT)
    with pytest.raises(ConflictError) as caught:
        experiment.submit(S.JOB, _spec(), cluster=S.steady_cluster(target))
    message = str(caught.value)
    assert message.startswith("properties.mountVolumes.azureFileShares[0]: ")  # as job.json names the mount
    assert "type AzureBlob, not AzureFile" in message and "the job was not submitted" in message
    assert transport.requests and all(r.startswith("GET ") for r in transport.requests)
    transport.verify()


def test_a_submit_whose_share_datastore_is_the_share_goes_ahead(target: Target, transport: ReplayTransport) -> None:
    submitted = S.SubmittedJob()
    transport.add(S.datastore_get(), *S.job_submit(submitted))
    Workspace(target, S.RG, S.WS).create_experiment(S.EXPERIMENT).submit(S.JOB, _spec(),
                                                                         cluster=S.steady_cluster(target))
    transport.verify()
