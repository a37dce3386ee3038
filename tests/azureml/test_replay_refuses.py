"""The replay is a check, not a stub: a request that differs from the recorded one fails."""
from __future__ import annotations

import pytest

from horovod_batchai import FileShare, Target, Workspace

import scenario as S
from replay import ReplayMismatch, ReplayTransport, recorded, recording, shape_differences


def test_a_cluster_of_another_size_than_recorded_is_refused(target: Target, transport: ReplayTransport) -> None:
    """The recorded PUT is expected with min = max = 2 nodes; asking for 3 sends another body."""
    transport.add(*S.workspace_get(), *S.cluster_create())
    workspace = Workspace.get(target, S.RG, S.WS)
    with pytest.raises(ReplayMismatch, match="scaleSettings .* expected min = max = 2"):
        workspace.create_cluster(S.CLUSTER, vm_size=S.VM_SIZE, target_node_count=3, admin_user_name="azureuser",
                                 ssh_public_key=S.SSH_KEY)
    assert transport.mismatches and "PUT" in transport.mismatches[0]
    with pytest.raises(AssertionError, match="replay refused"):
        transport.verify()


def test_another_api_version_is_refused(target: Target, transport: ReplayTransport) -> None:
    (exchange,) = S.workspace_get()
    exchange.api_version = "2025-12-01"  # the spec's version, which azure-ai-ml 1.35.2 does not send
    transport.add(exchange)
    with pytest.raises(Exception) as caught:
        Workspace.get(target, S.RG, S.WS)
    assert "api-version 2024-10-01-preview, expected 2025-12-01" in "".join(transport.mismatches)
    assert isinstance(caught.value, ReplayMismatch) or caught.value.__cause__ is not None


def test_a_body_with_a_field_the_recording_lacks_is_refused(target: Target, transport: ReplayTransport) -> None:
    """Without the declared difference (our datastore has a description), the shape check fails."""
    entries = recording(S.DATASTORE_FILE)
    strict = recorded(entries, 0, S.DATASTORE_FILE, names={**S.SCOPE, "test_180231763309": S.DATASTORE},
                      api_version=S.DATASTORES)
    transport.add(*S.share_create(*S.storage_api_versions())[:-1], strict)
    with pytest.raises(Exception):
        FileShare.create(target, S.RG, S.ACCOUNT, S.SHARE, location=S.LOCATION)
    assert "sent properties.description (string), which the expected request does not have" in transport.mismatches[0]


def test_a_request_nobody_expected_is_refused(target: Target, transport: ReplayTransport) -> None:
    with pytest.raises(Exception):
        Workspace.get(target, S.RG, S.WS)
    assert "no more requests were expected" in transport.mismatches[0]


def test_an_expected_request_never_sent_fails_verify(transport: ReplayTransport) -> None:
    transport.add(*S.workspace_get())
    with pytest.raises(AssertionError, match="expected requests never sent"):
        transport.verify()


def test_shapes_compare_kinds_and_fields() -> None:
    assert shape_differences({"a": 1, "b": {"c": "x"}}, {"a": 2, "b": {"c": "y"}}) == []
    assert shape_differences({"a": "1"}, {"a": 2}) == ["sent a as string, expected number"]
    assert shape_differences({}, {"a": 2}) == ["did not send a (number)"]
    assert shape_differences({"a": None}, {"a": 2}) == []  # null matches any kind
    assert shape_differences({"m": {"mine": 1}}, {"m": {"theirs": 2}}, free_form=("m",)) == []
    assert shape_differences({"l": [{"x": 1}]}, {"l": [{"y": 1}]}) == [
        "sent l[].x (number), which the expected request does not have", "did not send l[].y (number)"]


def test_a_request_that_leaves_the_transport_fails_the_test(no_network: list[str]) -> None:
    """The guard every test here has: a client built without the target's transport (as
    azure-ai-ml's own blob upload was) is stopped at its first name lookup or connection."""
    from azure.storage.blob import BlobClient
    client = BlobClient.from_blob_url("https://someaccount.blob.core.windows.net/c/b", retry_total=0)
    with pytest.raises(Exception):
        client.get_blob_properties()
    assert no_network and "someaccount.blob.core.windows.net" in no_network[0]
    no_network.clear()  # the attempt was this test's point; any other still fails it
