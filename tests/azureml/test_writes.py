"""Azure ML writes only what it must (issue 28): a blob container is read before its datastore is
registered, and a datastore registered for a job that was not created is removed; an environment
version the workspace has is read, not PUT again; azure-ai-ml's messages reach this package's
logger, not stderr.

No recording reads a blob container or one environment version: those answers are built (each
exchange's ``source`` says from what). What the tests assume there:

- the container read is Get Container Properties, ``GET https://<account>.blob.core.windows.net/
  <container>?restype=container`` (the request azure-storage-blob sends, checked by the replay:
  method, host, path, query, and how it is signed), answered as the Blob REST API documents it --
  200 with ETag, Last-Modified and the lease/immutability headers; 404 with ``x-ms-error-code:
  ContainerNotFound`` and an XML ``Error`` body; 403 ``AuthorizationPermissionMismatch`` -- not
  as recorded traffic (scenario.CONTAINER_WHY);
- a GET of an environment version answers what its PUT answered (recording 4's list GET holds
  its versions in exactly that shape, which a test checks), and a missing one answers 404 in the
  envelope recording 10 shows for a missing datastore (scenario.ENV_WHY); the request (path,
  api-version 2023-04-01-preview) is azure-ai-ml 1.35.2's own, checked by the replay.
"""
from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any, Iterator

import pytest

from horovod_batchai import AzureBlobMount, HorovodJob, InvalidSpecError, ResourceError, Target, Workspace

import scenario as S
from replay import FakeCredential, ReplayTransport, recording

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"
DATA, DATA_ACCOUNT = "cifar-data", "cifardatasets"
DATA_STORE = f"{DATA_ACCOUNT}__cifar_data"
REJECTED_FILE = "command_job__test_command_job.pyTestCommandJobtest_command_job_register_output"


def _spec(**credentials: Any) -> HorovodJob:
    """The tutorial's job (its share, mounts[0]) with a read-only blob mount of the data (mounts[1])."""
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    data = AzureBlobMount(account_name=DATA_ACCOUNT, container_name=DATA, relative_mount_path="data",
                          read_only=True, **credentials)
    return spec.replace(node_count=2, mounts=spec.mounts + (data,))


def _submit(target: Target, spec: HorovodJob) -> Any:
    return Workspace(target, S.RG, S.WS).create_experiment(S.EXPERIMENT).submit(
        S.JOB, spec, cluster=S.steady_cluster(target))


def _new_job() -> S.Exchange:
    return S.not_found(f"{S.WS_PATH}/jobs/{S.JOB}", S.JOB_GET, "UserError", "the job does not exist yet")


# -- 1. a blob container is read before its datastore is registered --------------------------------
def test_a_missing_container_is_refused_before_anything_is_registered(transport: ReplayTransport) -> None:
    """The container is read through the target's own pipeline: its transport (the replay) and
    its proxy, like every other request."""
    proxy = "http://proxy.example.com:3128"
    transport.add(S.datastore_get(), S.datastore_missing(DATA_STORE),
                  S.container_missing(DATA_ACCOUNT, DATA, signed="bearer"))
    with Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport,
                        proxies={"https": proxy}) as target:
        with pytest.raises(InvalidSpecError) as caught:
            _submit(target, _spec())
    transport.verify()
    assert len(transport.proxies) == 3 and all(p.get("https") == proxy for p in transport.proxies)
    err = caught.value
    assert err.field == "mounts[1]"
    assert f"blob container {DATA!r} does not exist in storage account {DATA_ACCOUNT!r}" in str(err)
    assert "create it first" in err.valid_form
    assert all(r.startswith("GET ") for r in transport.requests)  # nothing registered, nothing submitted


def test_a_missing_container_of_a_job_json_is_named_as_the_file_names_it(target: Target,
                                                                          transport: ReplayTransport) -> None:
    document = json.loads(JOB_JSON.read_text(encoding="utf-8"))
    document["properties"]["mountVolumes"]["azureBlobFileSystems"] = [
        {"accountName": DATA_ACCOUNT, "containerName": DATA, "relativeMountPath": "data", "mountOptions": "-o ro"}]
    spec = HorovodJob.from_dict(document, source="job.json").with_storage(account_name=S.ACCOUNT,
                                                                          account_key=S.ACCOUNT_KEY)
    transport.add(S.datastore_get(), S.datastore_missing(DATA_STORE),
                  S.container_missing(DATA_ACCOUNT, DATA, signed="bearer"))
    with pytest.raises(InvalidSpecError) as caught:
        _submit(target, spec.replace(node_count=2))
    transport.verify()
    assert caught.value.field.endswith("azureBlobFileSystems[0]") and "does not exist" in str(caught.value)


def test_a_sas_mounts_container_is_read_with_its_sas_then_registered(target: Target,
                                                                     transport: ReplayTransport) -> None:
    submitted = S.SubmittedJob()
    transport.add(S.datastore_get(), S.datastore_missing(DATA_STORE),
                  S.container_properties(DATA_ACCOUNT, DATA, signed="sas"), _new_job(),
                  _sas_datastore_put(), *S.image_environment(), S.blob_job_put(submitted, lambda r, b: None))
    _submit(target, _spec(sas_token="sv=2024-01-01&sp=rl&sig=c2lnbmF0dXJl"))
    transport.verify()
    assert "c2lnbmF0dXJl" not in json.dumps(submitted.sent)


def _sas_datastore_put() -> S.Exchange:
    exchange = S.blob_datastore_put(DATA_STORE, DATA_ACCOUNT, DATA, "None")
    exchange.body["properties"]["credentials"] = {"credentialsType": "Sas",
                                                  "secrets": {"secretsType": "Sas", "sasToken": "x"}}
    exchange.source += " (credentials: the spec's SasDatastoreCredentials shape)"
    exchange.check = lambda request, body: (None if body["properties"]["credentials"]["credentialsType"] == "Sas"
                                            else "not a SAS datastore")
    return exchange


def test_a_refused_read_of_the_container_is_logged_and_the_job_goes_ahead(
        target: Target, transport: ReplayTransport, caplog: pytest.LogCaptureFixture) -> None:
    """403: the caller's identity may not read what the job's identity can; that says nothing
    about the container's existence."""
    refused = S.container_missing(DATA_ACCOUNT, DATA, signed="bearer")
    refused.status = 403
    refused.content = (b'<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthorizationPermissionMismatch</Code>'
                       b"<Message>This request is not authorized to perform this operation using this "
                       b"permission.</Message></Error>")
    refused.headers = {**refused.headers, "x-ms-error-code": "AuthorizationPermissionMismatch"}
    refused.source = refused.source.replace("(404)", "(403 AuthorizationPermissionMismatch, as documented)")
    submitted = S.SubmittedJob()
    transport.add(S.datastore_get(), S.datastore_missing(DATA_STORE), refused, _new_job(),
                  S.blob_datastore_put(DATA_STORE, DATA_ACCOUNT, DATA, "None"), *S.image_environment(),
                  S.blob_job_put(submitted, lambda r, b: None))
    with caplog.at_level(logging.WARNING, logger="horovod_batchai"):
        _submit(target, _spec())
    transport.verify()
    assert any("refused (403, AuthorizationPermissionMismatch)" in r.getMessage() and "mounts[1]" in r.getMessage()
               for r in caplog.records)


def test_a_datastore_registered_for_a_job_the_service_refuses_is_removed(target: Target,
                                                                         transport: ReplayTransport) -> None:
    """Recording 9's 400 to the job PUT: nothing was created, so the datastore registered for it
    is deleted again (recording 10's DELETE), and the service's error is what the caller sees."""
    refused = S.blob_job_put(S.SubmittedJob(), lambda r, b: None)
    refused.status, refused.adapt = 400, None
    refused.response = recording(REJECTED_FILE)[0]["ResponseBody"]
    refused.source = f"recording:{REJECTED_FILE}#0's response, to this job's request shape"
    transport.add(S.datastore_get(), S.datastore_missing(DATA_STORE),
                  S.container_properties(DATA_ACCOUNT, DATA, signed="bearer"), _new_job(),
                  S.blob_datastore_put(DATA_STORE, DATA_ACCOUNT, DATA, "None"), *S.image_environment(), refused,
                  S.datastore_delete(DATA_STORE))
    with pytest.raises(ResourceError) as caught:
        _submit(target, _spec())
    transport.verify()
    assert "Request is invalid" in str(caught.value)
    assert transport.requests[-1].startswith(f"DELETE management.azure.com{S.WS_PATH}/datastores/{DATA_STORE}")


def test_a_job_that_exists_registers_nothing(target: Target, transport: ReplayTransport) -> None:
    """The same job submitted again from another process (a target of its own, nothing known),
    its data's datastore gone meanwhile: the container is read and the job found with these
    settings, so nothing is registered -- the datastore is for a job that is sent."""
    spec = _spec()
    submitted = S.SubmittedJob()
    transport.add(S.datastore_get(), S.datastore_missing(DATA_STORE),
                  S.container_properties(DATA_ACCOUNT, DATA, signed="bearer"), _new_job(),
                  S.blob_datastore_put(DATA_STORE, DATA_ACCOUNT, DATA, "None"), *S.image_environment(),
                  S.blob_job_put(submitted, lambda r, b: None))
    _submit(target, spec)
    transport.verify()
    first = len(transport.requests)
    transport.add(S.datastore_get(), S.datastore_missing(DATA_STORE),
                  S.container_properties(DATA_ACCOUNT, DATA, signed="bearer"), S.job_get(submitted, "Running"))
    with Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport) as other:
        _submit(other, spec)
    transport.verify()
    assert [r.split(" ")[0] for r in transport.requests[first:]] == ["GET"] * 4


# -- 2. an environment version the workspace has is read, not written -------------------------------
def test_the_images_environment_is_read_not_put_again(target: Target, transport: ReplayTransport) -> None:
    submitted = S.SubmittedJob()
    found = S.environment_image_get()
    transport.add(S.datastore_get(), _new_job(), found, S.job_put(submitted))
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    _submit(target, spec.replace(node_count=2))
    transport.verify()
    assert [r.split(" ")[0] for r in transport.requests] == ["GET", "GET", "GET", "PUT"]
    assert submitted.sent is not None and submitted.sent["properties"]["environmentId"] == found.path


def test_a_recorded_read_of_an_environment_version_has_the_shape_the_replay_answers_with() -> None:
    """What the found-version answers rest on: recording 4 reads its versions back (its list GET,
    #14) in exactly the shape of its PUT's answer (#0); the answers served here for a GET have
    that shape (the build context's: with ``build`` in place of ``image``)."""
    from replay import shape, shape_differences
    entries = recording(S.CANCEL_FILE)
    read_back = entries[14]["ResponseBody"]["value"][0]
    assert shape(entries[0]["ResponseBody"]) == shape(read_back)
    # null where an anonymous image environment has no description or conda file
    assert shape_differences(S.environment_image_get().response, read_back) == []
    build = shape(S.environment_build_get("1", "https://a.blob.core.windows.net/c/LocalUpload/h/x/").response)
    differences = set(build.items()) ^ set(shape(read_back).items())
    assert {path for path, _ in differences} == {"properties.image", "properties.build", "properties.build.contextUri",
                                                 "properties.build.dockerfilePath", "properties.tags.test"}


def _package_spec() -> HorovodJob:
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    return spec.replace(node_count=2, container_image=None, job_preparation=None)


def _package_version() -> tuple[str, str]:
    from horovod_batchai._places.azureml.environment import ENVIRONMENT_VERSION_LENGTH, content_hash, context_files
    digest = content_hash(context_files())
    return digest, digest[:ENVIRONMENT_VERSION_LENGTH]


def test_the_package_environment_is_read_and_its_context_not_uploaded_again(target: Target,
                                                                            transport: ReplayTransport) -> None:
    """The workspace has this package's environment version (its version is the content's hash,
    its context the upload of that content): no datastore, blob or environment request follows."""
    digest, version = _package_version()
    uri = f"https://{S.CONTEXT_HOST}/{S.CONTEXT_CONTAINER}/LocalUpload/{digest}/horovod-batchai-environment/"
    submitted = S.SubmittedJob()
    found = S.environment_build_get(version, uri)
    transport.add(S.datastore_get(), _new_job(), found, S.job_put(submitted))
    _submit(target, _package_spec())
    transport.verify()
    assert not [r for r in transport.requests if "blob.core" in r or "workspaceblobstore" in r]
    assert submitted.sent is not None and submitted.sent["properties"]["environmentId"] == found.path


def test_a_package_environment_version_that_differs_is_put(target: Target, transport: ReplayTransport) -> None:
    """The version exists but names another Dockerfile: the context is uploaded (found complete
    here, recording 8) and the version PUT with this package's definition."""
    digest, version = _package_version()
    uri = f"https://{S.CONTEXT_HOST}/{S.CONTEXT_CONTAINER}/LocalUpload/{digest}/horovod-batchai-environment/"
    uploaded = S.context_already_uploaded()
    container = uploaded[2].path.split("/")[1]
    context_uri = f"https://Sanitized.blob.core.windows.net/{container}/LocalUpload/{digest}/horovod-batchai-environment/"
    submitted = S.SubmittedJob()
    transport.add(S.datastore_get(), _new_job(), S.environment_build_get(version, uri, dockerfile="Other.Dockerfile"),
                  *uploaded, S.environment_build_put(lambda: context_uri), S.job_put(submitted))
    _submit(target, _package_spec())
    transport.verify()
    assert [r.split(" ")[0] for r in transport.requests].count("PUT") == 2  # the environment and the job


# -- 4. azure-ai-ml's messages: this package's logger, not stderr -----------------------------------
@pytest.fixture
def azure_ai_ml_handlers() -> Iterator[io.StringIO]:
    """azure-ai-ml's own handlers, writing to one buffer for the test (their stream is whatever
    sys.stderr was when azure.ai.ml was first imported, which capfd may not see)."""
    import azure.ai.ml  # noqa: F401
    buffer = io.StringIO()
    handlers = [h for h in logging.getLogger("azure.ai.ml").handlers if isinstance(h, logging.StreamHandler)]
    assert handlers, "azure-ai-ml no longer adds a stderr handler: this test and library_log need a look"
    streams = [h.setStream(buffer) for h in handlers]  # type: ignore[func-returns-value]
    yield buffer
    for handler, stream in zip(handlers, streams):
        handler.setStream(stream)


def test_a_build_context_submit_prints_nothing(target: Target, transport: ReplayTransport,
                                               capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
                                               azure_ai_ml_handlers: io.StringIO) -> None:
    from test_tutorial_replay import _context_files
    submitted, upload = S.SubmittedJob(), S.ContextUpload()
    transport.add(S.datastore_get(), *S.job_submit_built(submitted, upload, list(_context_files())))
    with caplog.at_level(logging.INFO, logger="horovod_batchai"):
        _submit(target, _package_spec())
    transport.verify()
    out, err = capfd.readouterr()
    assert (out, err) == ("", "") and azure_ai_ml_handlers.getvalue() == ""
    routed = [r for r in caplog.records if "will not be used for anonymous registration" in r.getMessage()]
    assert routed and all(r.name == "horovod_batchai._places.azureml.library_log" and r.levelno == logging.INFO
                          for r in routed)
    # the buffer does see what azure-ai-ml logs outside this package's calls: the check above can fail
    logging.getLogger("azure.ai.ml._schema.assets.environment").warning("the caller's own message")
    assert "the caller's own message" in azure_ai_ml_handlers.getvalue()


SUBMIT_IN_A_FRESH_PROCESS = '''
import logging, socket, sys
def refused(*args, **kwargs):
    raise AssertionError("a request left the replay transport")
socket.getaddrinfo = socket.create_connection = refused
if "--log" in sys.argv:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("LOG %(name)s %(levelname)s %(message)s"))
    logging.getLogger("horovod_batchai").addHandler(handler)
    logging.getLogger("horovod_batchai").setLevel(logging.INFO)
import scenario as S
from replay import FakeCredential, ReplayTransport
from horovod_batchai import Target, Workspace
from test_writes import _package_spec
from test_tutorial_replay import _context_files
transport = ReplayTransport()
submitted, upload = S.SubmittedJob(), S.ContextUpload()
transport.add(S.datastore_get(), *S.job_submit_built(submitted, upload, list(_context_files())))
with Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport) as target:
    Workspace(target, S.RG, S.WS).create_experiment(S.EXPERIMENT).submit(
        S.JOB, _package_spec(), cluster=S.steady_cluster(target))
transport.verify()
print("SUBMITTED")
'''


@pytest.mark.parametrize("logged", [False, True], ids=["no-logging-configured", "package-logger-on-stdout"])
def test_a_build_context_submit_in_a_fresh_process_writes_nothing_to_stderr(logged: bool) -> None:
    """A process of its own, where azure-ai-ml is first imported and its schemas first loaded by
    the submit, and no test harness holds a handler: stderr stays empty (with no logging
    configured, Python itself would print a WARNING there), and azure-ai-ml's messages (the
    anonymous-registration warning twice, its experimental-class notes) reach this package's
    logger at INFO."""
    import os
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(Path(__file__).parent)])}
    done = subprocess.run([sys.executable, "-c", SUBMIT_IN_A_FRESH_PROCESS, *(["--log"] if logged else [])],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "SUBMITTED" in done.stdout, done.stderr
    assert done.stderr == ""
    if not logged:
        return
    anonymous = [line for line in done.stdout.splitlines() if "will not be used for anonymous registration" in line]
    assert len(anonymous) == 2 and all(
        line.startswith("LOG horovod_batchai._places.azureml.library_log INFO azure-ai-ml: Warning: the provided "
                        "asset name 'horovod-batchai-environment'") for line in anonymous), done.stdout
