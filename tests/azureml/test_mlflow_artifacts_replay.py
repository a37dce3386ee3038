"""A job's MLflow artifacts on Azure ML, listed and downloaded through the same door as its metrics:
the workspace's host, the caller's credential, the target's transport (replayed; every request
checked, none may leave the transport).

No recording of this traffic exists in ``shared/reference`` (its README: no recording has calls to
``.../history/v1.0/...``), so the exchanges are built, and the tests assume:

- the run's ``artifact_uri`` (MLflow ``runs/get``, as ``test_mlflow_replay.py`` assumes it) is
  ``azureml://experiments/<experiment>/runs/<run>/artifacts``, and the experiment and run the
  artifact service is asked about are the ``<experiment>/runs/<run>`` of that root -- what the
  ``azureml-mlflow`` 1.62.0.post6 plugin's artifact repository does
  (``azureml/mlflow/_store/artifact/utils.py`` parses the root; ``artifact_repo.py`` lists and
  downloads through ``_client/artifact/run_artifact_client.py``);
- that plugin's generated run-artifact client (``azureml/mlflow/_restclient/run_artifact``) has the
  requests and JSON: ``GET https://<tracking host>/history/v1.0/subscriptions/<sub>/resourceGroups/
  <rg>/providers/Microsoft.MachineLearningServices/workspaces/<ws>/experiments/<experiment>/runs/
  <run>/artifacts`` (no api-version; ``continuationToken`` query for the next page) answers
  ``PaginatedArtifactList`` ``{"value": [Artifact{"artifactId", "origin", "container", "path",
  ...}], "continuationToken", "nextLink"}`` -- every file of the run, flat, without sizes (the
  plugin reports size -1 and makes directories from the paths); ``GET .../artifacts/contentinfo?
  path=<path>`` answers ``ArtifactContentInformation`` ``{"contentUri", "origin", "container",
  "path"}``, 404 for a missing one; errors are ``{"error": {"code", "message"}}``;
- the ``contentUri`` is a SAS link to the file's blob, read without any other credential (the
  plugin reads it with ``BlobClient.from_blob_url``); its blob name (``ExperimentRun/dcid.<run>/
  <path>`` in the workspace's ``azureml`` container) is the convention of the logs'
  links in ``scenario.py``, and nothing here depends on it;
- both services take a bearer token of the caller's credential for ``https://ml.azure.com/.default``
  (the scope the metrics' pipeline asks for; the plugin asks for the ARM scope,
  ``https://management.azure.com/.default``, on the same host);
- MLflow's own ``artifacts/list`` (REST API 2.0) is not used: the plugin never calls it for an
  ``azureml:`` root, and whether the workspace's MLflow endpoint answers it is not known.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qs, urlparse

import pytest

from horovod_batchai import (HorovodJob, InvalidSpecError, Job, NotFoundError, ResourceError, Target, TargetError,
                             Workspace)
from horovod_batchai._places.azureml.run_artifacts import ArtifactRoot, artifact_root, history_base

import scenario as S
from replay import FakeCredential, ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"

ARTIFACTS = f"/history/v1.0{S.WS_PATH}/experiments/{S.EXPERIMENT}/runs/{S.JOB}/artifacts"
WHY = ("built: no recording has artifact-service traffic; shapes of azureml-mlflow 1.62.0.post6's "
       "run_artifact client (PaginatedArtifactList, ArtifactContentInformation) -- UNVERIFIED")
BLOB_HOST = S.LOG_HOST
SIGNATURE = "YXJ0aWZhY3Qtc2lnbmF0dXJl"
FILES = {"model/model.h5": b"h5 weights", "model/checkpoints/epoch_1.ckpt": b"ckpt one",
         "notes.txt": b"hello", "tensorboard/events.out.tfevents.1": b"events"}


def _submitted() -> S.SubmittedJob:
    from horovod_batchai._places.azureml.conversions import SPEC_PROPERTY, spec_property
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT,
                                     "properties": {SPEC_PROPERTY: spec_property(spec)}}}
    return submitted


def _job(target: Target, transport: ReplayTransport) -> Job:
    from horovod_batchai._experiment import Experiment
    transport.add(S.job_get(_submitted(), "Completed"))
    return Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT).get_job(S.JOB)


def _blob_path(path: str, prefix: str = "") -> str:
    return f"/azureml/ExperimentRun/dcid.{S.JOB}/" + "/".join(p for p in (prefix, path) if p)


def _link(path: str, prefix: str = "") -> str:
    return (f"https://{BLOB_HOST}{_blob_path(path, prefix)}?sv=2019-07-07&sr=b&sp=r"
            f"&se=2099-01-01T00%3A00%3A00Z&sig={SIGNATURE}")


def _exact_query(expected: dict[str, str]) -> Any:
    """The request's query is ``expected``, nothing more (and the caller's token signs it)."""
    def check(request: Any, body: Any) -> Optional[str]:
        sent = {k: v[0] for k, v in parse_qs(urlparse(request.url).query).items()}
        if sent != expected:
            return f"query {sent}, expected {expected}"
        return S._bearer(request, body)
    return check


def run_get(artifact_uri: str = f"azureml://experiments/{S.EXPERIMENT}/runs/{S.JOB}/artifacts") -> S.Exchange:
    exchange = S.mlflow_run_get()
    exchange.response["run"]["info"]["artifact_uri"] = artifact_uri
    return exchange


def listing(paths: list[str], *, token: Optional[str] = None, next_token: Optional[str] = None,
            next_link: Optional[str] = None) -> S.Exchange:
    """One page of the run's artifact list: ``paths`` (as the service names them), asked for with
    ``token``, followed by ``next_token`` and/or ``next_link``."""
    value = [{"artifactId": f"ExperimentRun/dcid.{S.JOB}/{p}", "origin": "ExperimentRun",
              "container": f"dcid.{S.JOB}", "path": p, "etag": '"0x8D1"',
              "createdTime": "2026-11-28T06:00:00.000Z", "dataPath": None, "tags": {}} for p in paths]
    page: dict[str, Any] = {"value": value}
    if next_token:
        page["continuationToken"] = next_token
    if next_link:
        page["nextLink"] = next_link
    query = {"continuationToken": token} if token else {}
    return S.Exchange("GET", ARTIFACTS, f"{WHY} (RunArtifacts_ListInContainer)", host=S.MLFLOW_HOST,
                      query=query, check=_exact_query(query), response=page)


def content_info(path: str, prefix: str = "") -> S.Exchange:
    service_path = "/".join(p for p in (prefix, path) if p)
    return S.Exchange("GET", f"{ARTIFACTS}/contentinfo", f"{WHY} (RunArtifacts_GetContentInformation)",
                      host=S.MLFLOW_HOST, query={"path": service_path}, check=_exact_query({"path": service_path}),
                      response={"contentUri": _link(path, prefix), "origin": "ExperimentRun",
                                "container": f"dcid.{S.JOB}", "path": service_path})


def content_missing(path: str) -> S.Exchange:
    return S.Exchange("GET", f"{ARTIFACTS}/contentinfo", f"{WHY} (404)", host=S.MLFLOW_HOST, status=404,
                      query={"path": path}, check=_exact_query({"path": path}),
                      response={"error": {"code": "UserError", "message": f"Artifact {path} was not found"}})


def blob(path: str, data: bytes, prefix: str = "") -> S.Exchange:
    """Get Blob through the SAS link: azure-storage-blob asks for its first chunk as a range."""
    def check(request: Any, body: Any) -> Optional[str]:
        sent = request.headers.get("x-ms-range") or ""
        return S._no_credential_but_sas(request, body) or (None if sent.startswith("bytes=0-") else f"range {sent!r}")

    return S.Exchange("GET", _blob_path(path, prefix), f"{WHY} (Get Blob through the contentUri)", host=BLOB_HOST,
                      status=206, content=data, check=check,
                      headers={"Content-Range": f"bytes 0-{len(data) - 1}/{len(data)}", "x-ms-blob-type": "BlockBlob",
                               "ETag": '"0x8D1"', "x-ms-version": "2025-01-05"})


def blob_refused(path: str) -> S.Exchange:
    """The SAS no longer valid: Blob storage's 403 AuthenticationFailed (its XML error)."""
    body = (b'<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthenticationFailed</Code><Message>Server failed '
            b"to authenticate the request.</Message></Error>")
    return S.Exchange("GET", _blob_path(path), f"{WHY} (Get Blob, 403)", host=BLOB_HOST, status=403, content=body,
                      check=S._no_credential_but_sas,
                      headers={"Content-Type": "application/xml", "x-ms-error-code": "AuthenticationFailed"})


def _no_secret_logged(caplog: pytest.LogCaptureFixture) -> None:
    leaked = [r.getMessage() for r in caplog.records if SIGNATURE in r.getMessage()]
    assert not leaked, leaked
    # the blob requests were logged (azure-core's HTTP logging): the check above looked at them
    assert any(BLOB_HOST in r.getMessage() for r in caplog.records)


# -- listing -----------------------------------------------------------------------------------------------
def test_the_root_a_directory_and_a_nested_one_are_listed_from_every_page(target: Target,
                                                                          transport: ReplayTransport) -> None:
    job = _job(target, transport)
    paths = sorted(FILES)
    here = f"https://{S.MLFLOW_HOST}{ARTIFACTS}"  # the list's own URL, as a next link names it
    transport.add(*S.mlflow_workspace_get(), run_get(),
                  # three pages: a token (with its next link), then a next link only, then the last
                  listing(paths[:1], next_token="p2", next_link=f"{here}?continuationToken=p2"),
                  listing(paths[1:2], token="p2", next_link=f"{here}?continuationToken=p3"),
                  listing(paths[2:], token="p3"),
                  listing(paths), listing(paths), listing(paths))
    assert [(a.path, a.is_directory, a.size) for a in job.list_artifacts()] == [
        ("model", True, None), ("notes.txt", False, None), ("tensorboard", True, None)]
    assert job.mlflow_run_id == S.JOB
    # the run's artifact root is read once: the later calls list at once
    assert [(a.path, a.is_directory) for a in job.list_artifacts("model")] == [
        ("model/checkpoints", True), ("model/model.h5", False)]
    assert [a.name for a in job.list_artifacts("/model/checkpoints/")] == ["epoch_1.ckpt"]
    assert job.list_artifacts("notes.txt") == []  # a file has nothing in it, as MLflow's artifacts/list answers
    transport.verify()


def test_a_next_page_on_another_host_is_not_followed(target: Target, transport: ReplayTransport) -> None:
    """The caller's token goes to the workspace's host only: a next link elsewhere is refused."""
    job = _job(target, transport)
    transport.add(*S.mlflow_workspace_get(), run_get(),
                  listing(["notes.txt"], next_link=f"https://elsewhere.example.com{ARTIFACTS}?continuationToken=p2"))
    with pytest.raises(TargetError, match="next page is on another host .'elsewhere.example.com'."):
        job.list_artifacts()
    transport.verify()  # and no request after the page that named it


def test_an_artifact_root_with_a_prefix_lists_and_reads_under_it(target: Target, transport: ReplayTransport,
                                                                 tmp_path: Path) -> None:
    job = _job(target, transport)
    transport.add(*S.mlflow_workspace_get(),
                  run_get(f"azureml://{S.MLFLOW_HOST}/mlflow/v2.0{S.WS_PATH}/experiments/{S.EXPERIMENT}/runs/{S.JOB}"
                          "/artifacts/mlflow"),
                  listing(["mlflow/notes.txt", "outputs/other.txt"]), listing(["mlflow/notes.txt"]),
                  content_info("notes.txt", prefix="mlflow"), blob("notes.txt", b"hello", prefix="mlflow"))
    assert [a.path for a in job.list_artifacts()] == ["notes.txt"]  # outputs/ is not the run's MLflow artifacts
    assert job.download_artifacts("notes.txt", tmp_path / "n.txt").read_bytes() == b"hello"
    transport.verify()


# -- downloading -------------------------------------------------------------------------------------------
def test_a_file_and_a_directory_are_downloaded_without_the_sas_leaking(target: Target, transport: ReplayTransport,
                                                                       tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    job = _job(target, transport)
    paths = sorted(FILES)
    transport.add(*S.mlflow_workspace_get(), run_get(),
                  listing(paths), content_info("model/model.h5"), blob("model/model.h5", FILES["model/model.h5"]),
                  # "model", recursively: its parent's listing, its own, then each file (a listing of its
                  # directory to find it, its content link, its blob), the nested directory likewise
                  listing(paths), listing(paths),
                  listing(paths), listing(paths),
                  listing(paths), content_info("model/checkpoints/epoch_1.ckpt"),
                  blob("model/checkpoints/epoch_1.ckpt", FILES["model/checkpoints/epoch_1.ckpt"]),
                  listing(paths), content_info("model/model.h5"), blob("model/model.h5", FILES["model/model.h5"]))
    written = job.download_artifacts("model/model.h5", f"{tmp_path}/one/")  # a directory to put it in
    assert written == tmp_path / "one" / "model.h5" and written.read_bytes() == b"h5 weights"
    folder = job.download_artifacts("model", tmp_path / "all")
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "checkpoints/epoch_1.ckpt", "model.h5"]
    assert (folder / "checkpoints" / "epoch_1.ckpt").read_bytes() == b"ckpt one"
    assert not list(tmp_path.rglob("*.partial"))
    transport.verify()
    _no_secret_logged(caplog)


def test_network_traces_the_caller_turned_on_keep_the_link_out(transport: ReplayTransport, tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """With ``logging_enable=True`` azure-core logs response bodies: not the one holding the link."""
    caplog.set_level(logging.DEBUG)
    with Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport,
                        logging_enable=True) as target:
        job = _job(target, transport)
        transport.add(*S.mlflow_workspace_get(), run_get(), listing(sorted(FILES)), content_info("notes.txt"),
                      blob("notes.txt", b"hello"))
        assert job.download_artifacts("notes.txt", tmp_path / "n.txt").read_bytes() == b"hello"
    transport.verify()
    # the traces were on: the listing's body was logged, the content link's was not
    assert any("tensorboard/events.out.tfevents.1" in r.getMessage() for r in caplog.records)
    _no_secret_logged(caplog)


def test_a_missing_artifact_or_a_path_out_of_the_run_is_refused_before_any_write(
        target: Target, transport: ReplayTransport, tmp_path: Path) -> None:
    job = _job(target, transport)
    before = transport.mark()
    for bad in ("../x", "model/../../x", "./notes.txt"):
        with pytest.raises(InvalidSpecError, match="not an artifact path") as caught:
            job.download_artifacts(bad, tmp_path / "dest")
        assert caught.value.field == "path" and repr(bad) in str(caught.value)
    with pytest.raises(InvalidSpecError, match="not an artifact path"):
        job.list_artifacts("../x")
    assert transport.mark() == before  # refused before any request
    transport.add(*S.mlflow_workspace_get(), run_get(), listing(sorted(FILES)), listing(sorted(FILES)))
    with pytest.raises(InvalidSpecError, match="'model/nothere.h5' is not among the artifacts") as caught:
        job.download_artifacts("model/nothere.h5", tmp_path / "dest")
    assert caught.value.field == "path"
    with pytest.raises(InvalidSpecError, match="'nothing' is not among the artifacts"):
        job.download_artifacts("nothing", tmp_path / "dest")
    assert not (tmp_path / "dest").exists()
    transport.verify()


def test_an_artifact_gone_between_listing_and_reading_is_not_found(target: Target, transport: ReplayTransport,
                                                                   tmp_path: Path) -> None:
    job = _job(target, transport)
    transport.add(*S.mlflow_workspace_get(), run_get(), listing(sorted(FILES)), content_missing("notes.txt"))
    with pytest.raises(NotFoundError, match="notes.txt") as caught:
        job.download_artifacts("notes.txt", tmp_path / "n.txt")
    assert "Artifact notes.txt was not found" in str(caught.value)
    assert not list(tmp_path.iterdir())
    transport.verify()


def test_a_refused_blob_says_so_without_its_link(target: Target, transport: ReplayTransport, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    job = _job(target, transport)
    transport.add(*S.mlflow_workspace_get(), run_get(), listing(sorted(FILES)), content_info("notes.txt"),
                  blob_refused("notes.txt"))
    with pytest.raises(ResourceError, match="HTTP 403") as caught:
        job.download_artifacts("notes.txt", tmp_path / "n.txt")
    for text in (str(caught.value), repr(caught.value), repr(caught.value.args)):
        assert SIGNATURE not in text
    assert not list(tmp_path.iterdir())
    transport.verify()
    _no_secret_logged(caplog)


def test_a_content_link_that_is_not_https_is_refused(target: Target, transport: ReplayTransport,
                                                     tmp_path: Path) -> None:
    job = _job(target, transport)
    plain = content_info("notes.txt")
    plain.response = {**plain.response, "contentUri": _link("notes.txt").replace("https://", "http://")}
    transport.add(*S.mlflow_workspace_get(), run_get(), listing(sorted(FILES)), plain)
    with pytest.raises(TargetError, match="must be an https URL") as caught:
        job.download_artifacts("notes.txt", tmp_path / "n.txt")
    assert SIGNATURE not in str(caught.value)
    assert not list(tmp_path.iterdir())
    transport.verify()


def test_the_aio_target_lists_and_downloads_the_same_way(transport: ReplayTransport, tmp_path: Path) -> None:
    from horovod_batchai import aio
    paths = sorted(FILES)
    transport.add(S.job_get(_submitted(), "Completed"), *S.mlflow_workspace_get(), run_get(),
                  listing(paths[:2], next_token="p2"), listing(paths[2:], token="p2"),
                  listing(paths), content_info("notes.txt"), blob("notes.txt", b"hello"))

    async def scenario() -> None:
        async with aio.Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport) as target:
            job = await aio.Experiment(aio.Workspace(target, S.RG, S.WS), S.EXPERIMENT).get_job(S.JOB)
            assert [a.path for a in await job.list_artifacts()] == ["model", "notes.txt", "tensorboard"]
            written = await job.download_artifacts("notes.txt", tmp_path / "aio.txt")
            assert written.read_bytes() == b"hello"
            with pytest.raises(InvalidSpecError, match="not an artifact path"):
                await job.download_artifacts("../x", tmp_path)
    asyncio.run(scenario())
    transport.verify()


# -- what is read from the URIs, without a request -----------------------------------------------------------
def test_artifact_roots_and_the_history_service_come_from_the_uris() -> None:
    assert artifact_root(f"azureml://experiments/{S.EXPERIMENT}/runs/{S.JOB}/artifacts") == ArtifactRoot(
        S.EXPERIMENT, S.JOB, "")
    long_form = (f"azureml://{S.MLFLOW_HOST}/mlflow/v2.0{S.WS_PATH}/experiments/6b3f0a8e/runs/{S.JOB}"
                 "/artifacts/a/b/")
    assert artifact_root(long_form) == ArtifactRoot("6b3f0a8e", S.JOB, "a/b")
    for other in ("mlflow-artifacts:/1/abc/artifacts", "wasbs://c@a.blob.core.windows.net/x", "azureml://datastores/x"):
        with pytest.raises(TargetError, match="is not an Azure ML run's"):
            artifact_root(other)
    assert history_base(S.TRACKING_URI) == f"https://{S.MLFLOW_HOST}/history/v1.0{S.WS_PATH}"
    with pytest.raises(TargetError, match="names no Azure ML workspace"):
        history_base(f"azureml://{S.MLFLOW_HOST}/mlflow/v1.0")
