"""Every target passes the caller's azure-core client options to every Microsoft client it
builds, and Target.azureml / from_env choose Azure ML."""
from __future__ import annotations

from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.core.pipeline.policies import SansIOHTTPPolicy
from azure.core.pipeline.transport import RequestsTransport

from horovod_batchai import FileShare, Target, TargetError, Workspace
from horovod_batchai.local import LocalService

from sdk_support import ACCOUNT, RG


class FakeCredential:
    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        raise AssertionError("no request is sent in these tests")


class CountingTransport(RequestsTransport):
    """azure-core's own transport, counting what goes through it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sent: list[str] = []

    def send(self, request: Any, **kwargs: Any) -> Any:
        self.sent.append(f"{request.method} {request.url.split('?')[0]}")
        return super().send(request, **kwargs)


def test_the_local_target_sends_through_the_callers_transport(service: LocalService) -> None:
    transport = CountingTransport(connection_verify=str(service.info.ca_cert))
    with Target.local(service=service, transport=transport, retry_total=2) as target:
        Workspace.create(target, RG, "batchaidev", location="eastus")
        share = FileShare.create(target, RG, ACCOUNT, "myshare")
        share.create_directory("cifar")
        assert target.client_options["retry_total"] == 2
    hosts = " ".join(transport.sent)
    assert "/providers/Microsoft.BatchAI/workspaces/batchaidev" in hosts  # azure-mgmt-batchai
    assert "/resourcegroups/" in hosts.lower()                            # azure-mgmt-resource
    assert "/providers/Microsoft.Storage/storageAccounts/" in hosts        # azure-mgmt-storage
    assert f"/{ACCOUNT}/myshare/cifar" in hosts                            # azure-storage-file-share


def test_the_callers_policy_lists_are_theirs_and_every_request_carries_its_ids(service: LocalService) -> None:
    """azure-mgmt-core's ARM client appends to the per-call list it is given: each client gets a
    copy, so the caller's list stays as it was and no client's pipeline grows another's policies
    (a policy there ran before the request id and user agent were set, and the deletion's
    continuation token then lacked its request id)."""
    seen: list[Any] = []

    class Seen(SansIOHTTPPolicy):
        def on_request(self, request: Any) -> None:
            seen.append(request.http_request)

    mine: list[Any] = [Seen()]
    with Target.local(service=service, per_call_policies=mine) as target:
        ws = Workspace.create(target, RG, "batchaidev", location="eastus")
        Workspace.list(target)
        ws.begin_delete(delete_resource_group=True).result(120)
    assert len(mine) == 1 and isinstance(mine[0], Seen)
    assert len(seen) > 3
    # Seen runs before the request id is set; the same request object carries it when it leaves
    assert all("x-ms-client-request-id" in r.headers and "User-Agent" in r.headers for r in seen)


def test_client_options_cannot_replace_the_targets_own_arguments() -> None:
    with pytest.raises(TargetError, match="base_url is not a client option"):
        Target.azure("00000000-0000-0000-0000-000000000001", credential=FakeCredential(), base_url="https://x")


def test_azureml_from_env() -> None:
    env = {"HOROVOD_BATCHAI_TARGET": "azureml", "AZURE_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000001"}
    with pytest.raises(TargetError, match="AZURE_RESOURCE_GROUP and AZUREML_WORKSPACE_NAME"):
        Target.from_env(env)
    target = Target.from_env({**env, "AZURE_RESOURCE_GROUP": "mlgroup", "AZUREML_WORKSPACE_NAME": "mlws"},
                             credential=FakeCredential())  # type: ignore[arg-type]
    assert (target.kind, target.resource_group, target.workspace) == ("azureml", "mlgroup", "mlws")
    assert "mlws" in repr(target) and "credential" not in repr(target).lower()


def test_a_state_dir_that_is_a_file_is_refused_naming_it(tmp_path) -> None:
    from horovod_batchai import InvalidSpecError, Target
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(InvalidSpecError, match=r"state_dir: '.*/file' is a file, not a directory \(valid: a directory"):
        Target.local(state_dir=a_file)
    with pytest.raises(InvalidSpecError, match=r"state_dir: '.*/file/below' cannot be made: '.*/file' is a file"):
        Target.local(state_dir=a_file / "below")
    with pytest.raises(InvalidSpecError, match="HOROVOD_BATCHAI_STATE_DIR: "):
        Target.from_env({"HOROVOD_BATCHAI_STATE_DIR": str(a_file)})


@pytest.mark.parametrize("state_dir", [123, "", "  ", b"/tmp/state"])
def test_a_state_dir_that_is_not_a_path_is_refused_naming_it(state_dir: object) -> None:
    """Not a TypeError, and an empty one is not taken as the default directory (nor the current one)."""
    from horovod_batchai import InvalidSpecError, Target
    with pytest.raises(InvalidSpecError, match=r"state_dir: .* is not a path") as caught:
        Target.local(state_dir=state_dir)  # type: ignore[arg-type]
    assert caught.value.field == "state_dir"
