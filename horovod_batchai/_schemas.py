"""Validation of job.json documents against the official Batch AI 2018-05-01 schemas.

The schemas ship inside the package (``horovod_batchai/schemas``); the document's ``$schema``
picks one. Their single external reference, the ARM template expression of
``deploymentTemplate.json``, is supplied here so that validation works offline.
"""
from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlparse

from jsonschema import Draft4Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import best_match  # type: ignore[import-untyped]
from referencing import Registry
from referencing.jsonschema import DRAFT4

from ._errors import InvalidSpecError
from ._mounts import ACCOUNT_PLACEHOLDER, KEY_PLACEHOLDER

__all__ = ["validate_job_document", "schema_names", "JOB_SCHEMA_URL", "SCHEMA_DIR"]

SCHEMA_DIR = Path(__file__).with_name("schemas")
SCHEMA_BASE = "https://raw.githubusercontent.com/Azure/BatchAI/master/schemas/2018-05-01/"
JOB_SCHEMA_URL = SCHEMA_BASE + "job.json"
_DEPLOYMENT_TEMPLATE = "https://schema.management.azure.com/schemas/2015-01-01/deploymentTemplate.json"
# An ARM template expression is a string wrapped in square brackets, e.g. "[parameters('n')]".
_EXPRESSION = {"definitions": {"expression": {"type": "string", "pattern": "^\\[(.|\\n)*\\]$"}}}
_JOB_SCHEMAS = ("job", "horovod")
_TOOLKIT_KEYS = ("cntkSettings", "pyTorchSettings", "tensorFlowSettings", "caffeSettings", "caffe2Settings",
                 "chainerSettings", "customToolkitSettings", "customMpiSettings")
_SECRET_KEYS = {"credentials", "secrets", "accountKey", "password", "adminUserPassword", "value"}


def schema_names() -> list[str]:
    return sorted(p.stem for p in SCHEMA_DIR.glob("*.json"))


@functools.lru_cache(maxsize=None)
def _validator(name: str) -> Draft4Validator:
    schema = json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))
    registry: Registry = Registry().with_resource(_DEPLOYMENT_TEMPLATE, DRAFT4.create_resource(_EXPRESSION))
    return Draft4Validator(schema, registry=registry)


def _schema_name(document: Mapping[str, Any], source: str) -> str:
    url = document.get("$schema")
    if url is None:
        return "job"
    parsed = urlparse(str(url))
    parts = [p for p in parsed.path.split("/") if p]
    name = parts[-1][:-5] if parts and parts[-1].endswith(".json") else ""
    if len(parts) < 2 or parts[-2] != "2018-05-01" or name not in schema_names():
        raise InvalidSpecError(f"{source}: $schema", f"{url!r} is not a Batch AI 2018-05-01 schema",
                               SCHEMA_BASE + "job.json (or horovod.json)")
    if name not in _JOB_SCHEMAS:
        raise InvalidSpecError(f"{source}: $schema", f"{name}.json describes a {name} document, not a Horovod job",
                               SCHEMA_BASE + "job.json or horovod.json")
    return name


def _as_schema_sees_it(properties: dict[str, Any]) -> dict[str, Any]:
    """A copy with what ``az batchai job create --storage-account-name`` fills in (account name,
    credentials) present, so that a tutorial job.json validates before storage is known."""
    doc = copy.deepcopy(properties)
    volumes = doc.get("mountVolumes")
    if isinstance(volumes, dict):
        for key in ("azureFileShares", "azureBlobFileSystems"):
            for entry in volumes.get(key) or []:
                if isinstance(entry, dict):
                    entry.setdefault("accountName", ACCOUNT_PLACEHOLDER)
                    entry.setdefault("credentials", {"accountKey": KEY_PLACEHOLDER})
    return doc


def validate_job_document(document: Mapping[str, Any], *, source: str = "job document") -> dict[str, Any]:
    """Validate a job.json document; return its ``properties``. Raises :class:`InvalidSpecError`
    naming the failing field (as a JSON path) and what the schema accepts there."""
    if "properties" in document and isinstance(document.get("properties"), dict):
        properties = dict(document["properties"])
        extra = sorted(set(document) - {"$schema", "properties"})
        if extra:
            raise InvalidSpecError(f"{source}: {extra[0]}", "is not a job.json key", '"$schema" and "properties"')
    elif "$schema" in document:
        raise InvalidSpecError(f"{source}: properties", "is missing", '{"$schema": ..., "properties": {...}}')
    else:
        properties = dict(document)
    name = _schema_name(document, source)
    error = best_match(_validator(name).iter_errors({"properties": _as_schema_sees_it(properties)}))
    if error is not None:
        path = ".".join(str(p) for p in error.absolute_path) or "properties"
        sensitive = _SECRET_KEYS.intersection(str(p) for p in error.absolute_path)
        problem = "is not valid" if sensitive else error.message
        expected = error.schema.get("description", "") if isinstance(error.schema, dict) else ""
        raise InvalidSpecError(f"{source}: {path}", problem, expected or f"see {SCHEMA_BASE}{name}.json")
    others = [k for k in _TOOLKIT_KEYS if k in properties]
    if "horovodSettings" not in properties or others:
        raise InvalidSpecError(f"{source}: properties.horovodSettings",
                               "a Horovod job needs horovodSettings" + (f" and no {others[0]}" if others else ""),
                               '"horovodSettings": {"pythonScriptFilePath": ..., "commandLineArgs": ...}')
    return properties
