"""Batch AI answers read as JSON (no generated model) must read as azure-mgmt-batchai's own
deserialiser reads them. A job's status: Checked on the REST spec's job
examples and on answers with Azure's seven-digit fractions, UTC offsets, errors and no execution
info, against ``azure.mgmt.batchai.models.Job.deserialize``; ``listOutputFiles``' files (the spec's
example, a directory without properties) against ``models.File``. A cluster's errors, read from
its generated model through the same JSON reading, keep every field."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from azure.mgmt.batchai import models

from horovod_batchai._places.batchai.conversions import (cluster_status_from_rest, job_status_from_json,
                                                         output_files_from_json)

EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "reference" / "batchai-api-2018-05-01" / "examples"


def _spec_jobs() -> list[dict[str, Any]]:
    if not EXAMPLES.is_dir():
        return []
    get = json.loads((EXAMPLES / "GetJob.json").read_text())["responses"]["200"]["body"]
    listed = json.loads((EXAMPLES / "ListJobByExperiment.json").read_text())["responses"]["200"]["body"]["value"]
    return [get, *listed]


def _failed_job() -> dict[str, Any]:
    job = copy.deepcopy(_spec_jobs()[0]) if _spec_jobs() else {"id": "/jobs/demo_job", "name": "demo_job",
                                                                "properties": {}}
    job["properties"].update(
        executionState="failed", creationTime="2018-06-12T10:25:21.1230000Z",
        executionInfo={"startTime": "2018-06-12T10:25:30.5Z", "endTime": "2018-06-12T12:25:30+00:00",
                       "exitCode": 137,
                       "errors": [{"code": "JobTerminated", "message": "terminated by the user",
                                   "details": [{"name": "reason", "value": "UserRequest"}, {"name": "note"}]}]})
    return job


def _queued_job() -> dict[str, Any]:
    return {"id": "/jobs/fresh", "name": "fresh", "properties": {"executionState": "queued",
                                                                 "creationTime": "2026-11-28T19:55:42Z"}}


def _what_msrest_reads(doc: dict[str, Any]) -> tuple[Any, ...]:
    job = models.Job.deserialize(copy.deepcopy(doc))
    info = job.execution_info
    errors = tuple((e.code or "", e.message or "", [(d.name or "", d.value or "") for d in e.details or []])
                   for e in (info.errors if info else None) or [])
    return (job.name or "", job.execution_state or "queued", info.exit_code if info else None, errors,
            job.creation_time, info.start_time if info else None, info.end_time if info else None,
            job.job_output_directory_path_segment)


def _what_we_read(doc: dict[str, Any]) -> tuple[Any, ...]:
    status = job_status_from_json(doc)
    return (status.name, status.execution_state.value, status.exit_code,
            tuple((e.code, e.message, list(e.details)) for e in status.errors), status.creation_time,
            status.start_time, status.end_time, status.output_directory_path_segment)


@pytest.mark.parametrize("doc", [*_spec_jobs(), _failed_job(), _queued_job()],
                         ids=lambda d: str(d.get("name")))
def test_a_job_read_from_json_is_what_the_generated_model_reads(doc: dict[str, Any]) -> None:
    ours, theirs = _what_we_read(doc), _what_msrest_reads(doc)
    assert ours == theirs
    # and a model a generated client returned (a poller's result, a list's item) reads the same
    assert _what_we_read(models.Job.deserialize(copy.deepcopy(doc)).serialize(keep_readonly=True)) == theirs


def test_the_comparison_sees_the_fields() -> None:
    """Not vacuous: the failed job's fields are there, read, and compared with their time zone."""
    status = job_status_from_json(_failed_job())
    assert status.exit_code == 137 and status.errors[0].code == "JobTerminated"
    assert status.errors[0].details == [("reason", "UserRequest"), ("note", "")]
    assert status.creation_time is not None and status.creation_time.microsecond == 123000
    assert status.end_time is not None and status.end_time.utcoffset() is not None


def test_a_clusters_errors_keep_their_fields() -> None:
    """The service's errors are read-only fields of the model: serialised with them, not dropped."""
    cluster = models.Cluster.deserialize({"name": "broken", "properties": {
        "vmSize": "STANDARD_NC6", "allocationState": "steady", "currentNodeCount": 1,
        "errors": [{"code": "SetupTaskFailed", "message": "the setup task exited with 7",
                    "details": [{"name": "exitCode", "value": "7"}]}]}})
    status = cluster_status_from_rest(cluster, resource_group="rg", workspace="ws")
    assert [(e.code, e.message, list(e.details)) for e in status.errors] == [
        ("SetupTaskFailed", "the setup task exited with 7", [("exitCode", "7")])]


def _spec_files() -> list[dict[str, Any]]:
    directory = {"name": "saved_models", "fileType": "directory"}
    if not EXAMPLES.is_dir():
        return [directory]
    return [*json.loads((EXAMPLES / "ListOutputFiles.json").read_text())["responses"]["200"]["body"]["value"],
            directory]


def test_output_files_read_from_json_are_what_the_generated_model_reads() -> None:
    files = _spec_files()
    ours = [(f.name, f.is_directory, f.size, f.last_modified, f.download_url) for f in output_files_from_json(files)]
    theirs = []
    for doc in files:
        model = models.File.deserialize(copy.deepcopy(doc))
        theirs.append((model.name, str(model.file_type) == "directory" or getattr(model.file_type, "value", "") ==
                       "directory", model.content_length, model.last_modified, model.download_url))
    assert ours == theirs
    assert ours[-1] == ("saved_models", True, None, None, None)
    assert len(ours) > 1 or not EXAMPLES.is_dir()
