"""GET /metadata/endpoints: unauthenticated, in the shape of the api-version asked for, naming the
service as its own ARM endpoint and token authority."""
from __future__ import annotations

import pytest
import requests

from horovod_batchai.local import LocalService
from horovod_batchai.local.resources.cloud_metadata import API_VERSIONS, CLOUD_NAME


def _get(service: LocalService, version: str, path: str = "/metadata/endpoints") -> requests.Response:
    return requests.get(service.endpoint + path, params={"api-version": version}, verify=str(service.info.ca_cert),
                        timeout=30)


def test_azure_cli_reads_one_cloud(service: LocalService):
    body = _get(service, "2022-09-01").json()
    assert body["name"] == CLOUD_NAME
    assert body["resourceManager"] == service.endpoint + "/"
    assert body["authentication"]["audiences"][0] == "https://management.core.windows.net/"
    # az joins the endpoint it was given and the path: a trailing slash makes '//metadata'.
    assert _get(service, "2022-09-01", "//metadata/endpoints").json() == body


@pytest.mark.parametrize("version", ["2019-05-01", "2019-10-01", "2020-06-01"])
def test_later_tools_read_a_list_of_clouds(service: LocalService, version: str):
    assert _get(service, version).json() == [_get(service, "2022-09-01").json()]


@pytest.mark.parametrize("version", ["1.0", "2015-01-01"])
def test_azure_stack_tools_read_the_flat_form(service: LocalService, version: str):
    body = _get(service, version).json()
    assert body["authentication"]["loginEndpoint"] == service.endpoint + "/"
    assert {"galleryEndpoint", "graphEndpoint", "portalEndpoint"} <= set(body)


def test_an_unknown_version_is_refused_listing_the_known_ones(service: LocalService):
    response = _get(service, "2023-11-01")
    assert response.status_code == 400
    assert all(v in response.json()["error"]["message"] for v in API_VERSIONS)
