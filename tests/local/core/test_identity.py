"""The managed-identity token endpoint, driven by the two clients that speak its protocol:
azure-identity's ManagedIdentityCredential and MSAL's ManagedIdentityClient (what `az login
--identity` uses). Its tokens open the management plane; a wrong header, a resource it does not
serve or a user-assigned identity are refused with a message naming what to fix."""
from __future__ import annotations

import stat

import pytest
import requests
from azure.core.exceptions import ClientAuthenticationError

from horovod_batchai.local import LocalService
from horovod_batchai.local.core.identity import TOKEN_PATH, ensure_identity_header
from horovod_batchai.local.core.jwt_tokens import TENANT_ID, verify_token

from service_support import SUBSCRIPTION, client_kwargs

ARM = "https://management.core.windows.net/"


@pytest.fixture
def identity_env(service: LocalService, monkeypatch: pytest.MonkeyPatch) -> str:
    header = ensure_identity_header(service.state_dir).read_text()
    monkeypatch.setenv("IDENTITY_ENDPOINT", service.endpoint + TOKEN_PATH)
    monkeypatch.setenv("IDENTITY_HEADER", header)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(service.info.ca_cert))
    for name in ("IDENTITY_SERVER_THUMBPRINT", "IMDS_ENDPOINT", "MSI_ENDPOINT", "MSI_SECRET", "AZURE_CLIENT_ID"):
        monkeypatch.delenv(name, raising=False)
    return header


def test_the_identity_header_is_private_and_stable(service: LocalService):
    path = ensure_identity_header(service.state_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(path.read_text()) == 64 and ensure_identity_header(service.state_dir).read_text() == path.read_text()


def test_azure_identity_gets_a_token_that_opens_the_management_plane(service: LocalService, identity_env: str):
    from azure.identity import ManagedIdentityCredential
    from azure.mgmt.resource.resources import ResourceManagementClient
    credential = ManagedIdentityCredential()
    token = credential.get_token("https://management.azure.com/.default")
    claims = verify_token(service.context.token_secret, token.token)
    assert claims is not None and claims["tid"] == TENANT_ID and claims["aud"] == "https://management.azure.com/"
    with ResourceManagementClient(credential, SUBSCRIPTION, **client_kwargs(service)) as resources:
        resources.resource_groups.create_or_update("mi-rg", {"location": "eastus"})
        assert [g.name for g in resources.resource_groups.list()] == ["mi-rg"]


def test_msal_gets_a_token_as_az_login_identity_does(service: LocalService, identity_env: str):
    import msal
    client = msal.ManagedIdentityClient(msal.SystemAssignedManagedIdentity(), http_client=requests.Session())
    result = client.acquire_token_for_client(resource=ARM)
    assert "access_token" in result, result
    assert verify_token(service.context.token_secret, result["access_token"])["aud"] == ARM


def _ask(service: LocalService, *, header: str, **params: str) -> requests.Response:
    query = {"api-version": "2019-08-01", "resource": ARM, **params}
    return requests.get(service.endpoint + TOKEN_PATH, params=query, headers={"X-IDENTITY-HEADER": header},
                        verify=str(service.info.ca_cert), timeout=30)


def test_refusals_name_what_to_fix(service: LocalService):
    header = ensure_identity_header(service.state_dir).read_text()
    assert _ask(service, header=header).status_code == 200
    wrong = _ask(service, header="0" * 64)
    assert wrong.status_code == 401 and "X-IDENTITY-HEADER" in wrong.json()["message"]
    assert _ask(service, header="").status_code == 401
    other = _ask(service, header=header, resource="https://storage.azure.com/")
    assert other.status_code == 400 and "https://management.core.windows.net/" in other.json()["message"]
    version = _ask(service, header=header, **{"api-version": "2017-09-01"})
    assert version.status_code == 400 and "2019-08-01" in version.json()["message"]
    user = _ask(service, header=header, client_id="11111111-1111-1111-1111-111111111111")
    assert user.status_code == 400 and "client_id" in user.json()["message"]
    posted = requests.post(service.endpoint + TOKEN_PATH, params={"api-version": "2019-08-01"},
                           headers={"X-IDENTITY-HEADER": header}, verify=str(service.info.ca_cert), timeout=30)
    assert posted.status_code == 405


def test_a_wrong_header_reaches_azure_identity_as_an_authentication_error(service: LocalService, identity_env: str,
                                                                          monkeypatch: pytest.MonkeyPatch):
    from azure.identity import ManagedIdentityCredential
    monkeypatch.setenv("IDENTITY_HEADER", "not-the-header")
    with pytest.raises(ClientAuthenticationError):
        ManagedIdentityCredential().get_token("https://management.azure.com/.default")


def test_the_header_and_token_never_reach_the_log(service: LocalService, identity_env: str,
                                                  caplog: pytest.LogCaptureFixture):
    caplog.set_level("DEBUG")
    response = _ask(service, header=identity_env)
    token = response.json()["access_token"]
    assert identity_env not in caplog.text and token not in caplog.text
