"""Reading and validating job.json documents (Batch AI 2018-05-01).

A job.json is checked three ways before a spec is built from it, each error naming the property
path as the user wrote it (``properties.mountVolumes.azureFileShares[0].azureFileUrl``), the file,
and the valid form:

1. as JSON text (:func:`read_job_file`): UTF-8 without a byte order mark, no duplicate keys (the
   last would silently win), no ``NaN``/``Infinity``, within ARM's 4 MiB request limit;
2. property by property (:func:`validate_job_document`): every property a Horovod job may have in
   the official schema and nothing else, of the right type, never ``null``; what the schema's
   ``JobBaseProperties`` requires is required; values are checked by the same rules as
   :class:`HorovodJob`'s Python arguments (``_names``);
3. against the official schema the document names in ``$schema`` (shipped in
   ``horovod_batchai/_models/schemas``; its single external reference, the ARM template expression of
   ``deploymentTemplate.json``, is supplied here so that validation works offline).

Two required properties may be absent, because the SDK supplies them as ``az batchai job create``
did: ``cluster`` (the cluster given to ``submit``) and a mount's ``accountName`` / ``credentials``
(filled from the storage account, ``HorovodJob.with_storage``).
"""
from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping
from urllib.parse import urlparse

from .constants import JOB_SCHEMA_URL, SCHEMA_BASE
from .errors import InvalidSpecError
from .mounts import ACCOUNT_PLACEHOLDER, KEY_PLACEHOLDER, share_url_parts
from .names import (MAX_INT32, check_cluster_id, check_command_text, check_container_image, check_container_name,
                    check_count, check_directory_id, check_env_name, check_env_value, check_environment_size,
                    check_node_path, check_registry_url, check_relative_mount_path, check_shm_size,
                    check_storage_account, check_text, describe_value)

if TYPE_CHECKING:
    from jsonschema import Draft4Validator  # type: ignore[import-untyped]

__all__ = ["read_job_file", "validate_job_document", "schema_names", "JOB_SCHEMA_URL", "SCHEMA_DIR",
           "MAX_DOCUMENT_BYTES"]

SCHEMA_DIR = Path(__file__).with_name("schemas")
_DEPLOYMENT_TEMPLATE = "https://schema.management.azure.com/schemas/2015-01-01/deploymentTemplate.json"
# An ARM template expression is a string wrapped in square brackets, e.g. "[parameters('n')]".
_EXPRESSION = {"definitions": {"expression": {"type": "string", "pattern": "^\\[(.|\\n)*\\]$"}}}
_JOB_SCHEMAS = ("job", "horovod")
_SECRET_KEYS = {"credentials", "secrets", "accountKey", "password", "adminUserPassword", "value"}
#: ARM refuses a request body over 4 MiB, and a job.json is sent as one.
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
_PLAIN_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*\Z")
_DOCUMENT_FORM = '{"$schema": "' + JOB_SCHEMA_URL + '", "properties": {...}}'


def schema_names() -> list[str]:
    return sorted(p.stem for p in SCHEMA_DIR.glob("*.json"))


# -- 1. the JSON text ------------------------------------------------------------------------------
class _Object(dict):  # type: ignore[type-arg]
    """A JSON object that remembers the keys it held more than once."""

    repeated: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        keys = [k for k, _ in pairs]
        obj.repeated = tuple(k for i, k in enumerate(keys) if k in keys[:i])
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str) -> Any:
    """``json.loads`` that keeps track of repeated keys and refuses NaN/Infinity (not JSON)."""
    return json.loads(text, object_pairs_hook=_object, parse_constant=_no_constant)


def read_job_file(path: Path) -> Any:
    """The parsed JSON of the file ``path``; :class:`InvalidSpecError` naming the file otherwise."""
    source = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise InvalidSpecError("the document", f"is {size} bytes long", f"at most {MAX_DOCUMENT_BYTES} bytes "
                                   "(ARM refuses larger requests)", source=source)
        data = path.read_bytes()
    except FileNotFoundError:
        raise InvalidSpecError("path", f"{source!r} does not exist", "the path of a job.json file") from None
    except OSError as err:  # a directory, no permission
        raise InvalidSpecError("path", f"{source!r} cannot be read ({err.strerror or type(err).__name__})",
                               "the path of a readable job.json file") from None
    if data.startswith(b"\xef\xbb\xbf"):
        raise InvalidSpecError("the document", "starts with a UTF-8 byte order mark",
                               "UTF-8 text without one (JSON texts must not begin with a BOM, RFC 8259 section 8.1; "
                               "save the file as 'UTF-8' rather than 'UTF-8 with BOM')", source=source)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InvalidSpecError("the document", "is UTF-16 text", "UTF-8 text (RFC 8259 section 8.1)", source=source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidSpecError("the document", f"is not UTF-8 text (byte {err.start})", "UTF-8 text",
                               source=source) from None
    try:
        return parse_json(text)
    except json.JSONDecodeError as err:
        raise InvalidSpecError("the document", f"is not valid JSON: {err.msg} at line {err.lineno} column "
                               f"{err.colno}", _DOCUMENT_FORM, source=source) from None
    except ValueError as err:  # NaN / Infinity
        raise InvalidSpecError("the document", f"is not valid JSON: {err}", "numbers such as 4 or 0.5",
                               source=source) from None
    except RecursionError:
        raise InvalidSpecError("the document", "is nested too deeply to read", _DOCUMENT_FORM, source=source) from None


# -- 2. property by property -----------------------------------------------------------------------
Check = Callable[[Any, str], Any]


@dataclass(frozen=True)
class _Str:
    """A string property whose value ``check(value, path)`` accepts."""

    check: Check
    form: str = "a string"


@dataclass(frozen=True)
class _Int:
    """A count: an integer from 1 to int32's largest."""

    form: str = f"an integer from 1 to {MAX_INT32}, e.g. 4"

    def check(self, value: Any, path: str) -> None:
        check_count(value, path, valid_form=self.form)


@dataclass(frozen=True)
class _Obj:
    what: str
    fields: Mapping[str, Any]
    required: tuple[str, ...] = ()
    example: str = ""
    #: properties the schema knows but a Horovod job cannot take, with the reason
    refused: Mapping[str, str] = field(default_factory=dict)

    @property
    def form(self) -> str:
        return self.example or f"a JSON object ({self.what})"


@dataclass(frozen=True)
class _Arr:
    item: Any
    example: str

    @property
    def form(self) -> str:
        return f"a JSON array, e.g. {self.example}"


def _text(form: str, *, max_bytes: int = 1024, secret: bool = False, nonempty: bool = True) -> _Str:
    def check(value: Any, path: str) -> None:
        check_text(value, path, valid_form=form, max_bytes=max_bytes, secret=secret, nonempty=nonempty)
    return _Str(check, form)


def _path(form: str) -> _Str:
    return _Str(lambda v, p: check_node_path(v, p, form), form)


def _choice(values: tuple[str, ...]) -> _Str:
    form = " | ".join(values)

    def check(value: Any, path: str) -> None:
        if value not in values:
            raise InvalidSpecError(path, f"{describe_value(value)} is not an allowed value", form)
    return _Str(check, form)


def _account_name(value: Any, path: str) -> None:
    if value != ACCOUNT_PLACEHOLDER:
        check_storage_account(value, path)


def _account_key(value: Any, path: str) -> None:
    check_text(value, path, valid_form=f"the storage account key, or {KEY_PLACEHOLDER!r} to have it filled in",
               max_bytes=1024, secret=True)


def _file_mode(value: Any, path: str) -> None:
    if not (isinstance(value, str) and len(value) == 4 and set(value) <= set("01234567")):
        raise InvalidSpecError(path, f"{describe_value(value)} is not a file mode", "four octal digits like '0777'")


def _share_url(value: Any, path: str) -> None:
    share_url_parts(value, path)


def _env_value(value: Any, path: str) -> None:
    check_env_value("", value, path)


def _secret_value(value: Any, path: str) -> None:
    check_env_value("", value, path, secret=True)


def _duration(value: Any, path: str) -> None:
    """The schema types a duration as a plain string; the service reads ISO 8601 (as msrest does)."""
    from msrest.exceptions import DeserializationError
    from msrest.serialization import Deserializer  # what JobCreateParameters.deserialize parses it with
    form = "a positive ISO 8601 duration like 'PT2H' (two hours) or 'P7D' (seven days)"
    check_text(value, path, valid_form=form, max_bytes=64)
    try:
        duration = Deserializer.deserialize_duration(value)
    except (DeserializationError, OverflowError, ValueError):
        raise InvalidSpecError(path, f"{value!r} is not an ISO 8601 duration", form) from None
    if not isinstance(duration, timedelta):  # isodate gives years and months as a calendar Duration
        raise InvalidSpecError(path, f"{value!r} counts years or months, which have no fixed length",
                               form + " (in days, hours, minutes and seconds)")
    if duration <= timedelta(0):
        raise InvalidSpecError(path, f"{value!r} is not a positive duration", form)


def _relative_path(value: Any, path: str) -> None:
    form = "a relative path like 'models' (no leading '/', no '..')"
    check_node_path(value, path, form)
    if value.startswith("/") or ".." in value.split("/"):
        raise InvalidSpecError(path, f"{value[:200]!r} is not a relative path inside the output directory", form)


def _resource_id(kind: str) -> _Obj:
    return _Obj(f"a {kind} reference", {"id": _text(f"a {kind} resource id", max_bytes=2048)}, ("id",),
                '{"id": "/subscriptions/.../' + kind + 's/<name>"}')


_KEY_VAULT = ("refers to Azure Key Vault, which a HorovodJob cannot carry", "the value itself")
_NAME = _Str(lambda v, p: check_env_name(v, p), "a variable name of letters, digits and '_', not starting with "
                 "a digit")
_MOUNT_PATH = _Str(lambda v, p: check_relative_mount_path(v, p), "a relative path like 'myshare'")
_CREDENTIALS = _Obj("storage credentials", {"accountKey": _Str(_account_key, "the account key")}, ("accountKey",),
                    '{"accountKey": "<AZURE_BATCHAI_STORAGE_KEY>"}',
                    refused={"accountKeySecretReference": _KEY_VAULT[0]})
_MOUNT_OPTIONS = _text("mount options like 'vers=4,ro'", max_bytes=4096)
_AZURE_FILE_SHARE = _Obj("a file share mount", {
    "accountName": _Str(_account_name, f"3-24 lower-case letters or digits, or {ACCOUNT_PLACEHOLDER!r}"),
    "azureFileUrl": _Str(_share_url, "https://<account>.file.core.windows.net/<share>"),
    "credentials": _CREDENTIALS,
    "relativeMountPath": _MOUNT_PATH,
    "fileMode": _Str(_file_mode, "four octal digits like '0777'"),
    "directoryMode": _Str(_file_mode, "four octal digits like '0777'"),
}, ("azureFileUrl", "relativeMountPath"), '{"azureFileUrl": "https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.'
   'net/myshare", "relativeMountPath": "myshare"}')
_AZURE_BLOB = _Obj("a blob container mount", {
    "accountName": _Str(_account_name, f"3-24 lower-case letters or digits, or {ACCOUNT_PLACEHOLDER!r}"),
    "containerName": _Str(lambda v, p: check_container_name(v, p), "a blob container name"),
    "credentials": _CREDENTIALS,
    "relativeMountPath": _MOUNT_PATH,
    "mountOptions": _MOUNT_OPTIONS,
}, ("containerName", "relativeMountPath"), '{"accountName": "<AZURE_BATCHAI_STORAGE_ACCOUNT>", "containerName": '
   '"data", "relativeMountPath": "blobs"}')
_FILE_SERVER = _Obj("a file server mount", {
    "fileServer": _resource_id("fileServer"),
    "sourceDirectory": _text("a directory of the file server like '/data'", max_bytes=4096),
    "relativeMountPath": _MOUNT_PATH,
    "mountOptions": _MOUNT_OPTIONS,
}, ("fileServer", "relativeMountPath"), '{"fileServer": {"id": ".../fileServers/<name>"}, "relativeMountPath": "nfs"}')
_UNMANAGED = _Obj("an unmanaged file system mount", {
    "mountCommand": _Str(lambda v, p: check_command_text(v, p, valid_form="a mount command like 'mount -t nfs "
                                                             "10.0.0.4:/data'"), "a mount command"),
    "relativeMountPath": _MOUNT_PATH,
}, ("mountCommand", "relativeMountPath"), '{"mountCommand": "mount -t nfs 10.0.0.4:/data", "relativeMountPath": "nfs"}')
_MOUNT_VOLUMES = _Obj("the job's mounts", {
    "azureFileShares": _Arr(_AZURE_FILE_SHARE, '[{"azureFileUrl": ..., "relativeMountPath": "myshare"}]'),
    "azureBlobFileSystems": _Arr(_AZURE_BLOB, '[{"containerName": ..., "relativeMountPath": "blobs"}]'),
    "fileServers": _Arr(_FILE_SERVER, '[{"fileServer": {"id": ...}, "relativeMountPath": "nfs"}]'),
    "unmanagedFileSystems": _Arr(_UNMANAGED, '[{"mountCommand": ..., "relativeMountPath": "nfs"}]'),
}, example='{"azureFileShares": [{"azureFileUrl": ..., "relativeMountPath": "myshare"}]}')
_REGISTRY = _Obj("a container image and its registry", {
    "image": _Str(lambda v, p: check_container_image(v, p), "a docker image like 'tensorflow/tensorflow:1.8.0-gpu'"),
    "serverUrl": _Str(lambda v, p: check_registry_url(v, p), "a registry address like "
                          "'https://myregistry.azurecr.io'"),
    "credentials": _Obj("registry credentials", {
        "username": _text("the registry user name"),
        "password": _text("the registry password", secret=True),
    }, ("username",), '{"username": "...", "password": "..."}', refused={"passwordSecretReference": _KEY_VAULT[0]}),
}, ("image",), '{"image": "tensorflow/tensorflow:1.8.0-gpu"}')
_CONTAINER = _Obj("the job's container", {
    "imageSourceRegistry": _REGISTRY,
    "shmSize": _Str(lambda v, p: check_shm_size(v, p), "a size like '2g'"),
}, ("imageSourceRegistry",), '{"imageSourceRegistry": {"image": "tensorflow/tensorflow:1.8.0-gpu"}}')
_HOROVOD = _Obj("Horovod settings", {
    "pythonScriptFilePath": _path("the script's path on the node, e.g. "
                                  "'$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/train.py'"),
    "pythonInterpreterPath": _path("the interpreter's path on the node, e.g. '/usr/bin/python3'"),
    "commandLineArgs": _Str(lambda v, p: check_command_text(
        v, p, nonempty=False, valid_form="one string of arguments, e.g. '--epochs 2 --dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/"
        "myshare'"), "one string of arguments"),
    "processCount": _Int(),
}, ("pythonScriptFilePath",), '{"pythonScriptFilePath": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py"}')
_ENV = _Obj("an environment variable", {"name": _NAME, "value": _Str(_env_value)}, ("name", "value"),
            '{"name": "EPOCHS", "value": "2"}')
_SECRET = _Obj("a secret environment variable", {"name": _NAME, "value": _Str(_secret_value)}, ("name", "value"),
               '{"name": "TOKEN", "value": "..."}', refused={"valueSecretReference": _KEY_VAULT[0]})
_OTHER_TOOLKIT = "describes another toolkit's job; a Horovod job has horovodSettings only"
_READ_ONLY = "is reported by the service, not written in a job.json"
_JOB = _Obj("a Horovod job", {
    "schedulingPriority": _choice(("low", "normal", "high")),
    "cluster": _Obj("the job's cluster", {"id": _Str(lambda v, p: check_cluster_id(v, p), "a cluster resource "
                                                         "id")}, ("id",), '{"id": "/subscriptions/.../clusters/<name>"}'),
    "mountVolumes": _MOUNT_VOLUMES,
    "nodeCount": _Int(),
    "containerSettings": _CONTAINER,
    "horovodSettings": _HOROVOD,
    "jobPreparation": _Obj("the job preparation", {"commandLine": _Str(lambda v, p: check_command_text(
        v, p, valid_form="a shell command line run on each node before the script, e.g. 'pip install keras' (leave "
        "jobPreparation out for none)"), "a shell command line")}, ("commandLine",),
        '{"commandLine": "pip install keras"}'),
    "stdOutErrPathPrefix": _path("a path under a mount, e.g. '$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs'"),
    "inputDirectories": _Arr(_Obj("an input directory", {
        "id": _Str(lambda v, p: check_directory_id(v, p), "1-64 letters, digits or '_'"),
        "path": _path("a path under a mount")}, ("id", "path"), '{"id": "DATA", "path": ...}'),
        '[{"id": "DATA", "path": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/data"}]'),
    "outputDirectories": _Arr(_Obj("an output directory", {
        "id": _Str(lambda v, p: check_directory_id(v, p, kind="OUTPUT"), "1-64 letters, digits or '_'"),
        "pathPrefix": _path("a path under a mount"),
        "pathSuffix": _Str(_relative_path, "a relative path like 'models'")}, ("id", "pathPrefix"),
        '{"id": "MODEL", "pathPrefix": ...}'),
        '[{"id": "MODEL", "pathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare", "pathSuffix": "models"}]'),
    "environmentVariables": _Arr(_ENV, '[{"name": "EPOCHS", "value": "2"}]'),
    "secrets": _Arr(_SECRET, '[{"name": "TOKEN", "value": "..."}]'),
    "constraints": _Obj("the job's constraints", {"maxWallClockTime": _Str(_duration, "an ISO 8601 duration")}, (),
                        '{"maxWallClockTime": "PT2H"}'),
}, ("nodeCount", "horovodSettings", "stdOutErrPathPrefix"), refused={
    **{k: _OTHER_TOOLKIT for k in ("cntkSettings", "pyTorchSettings", "tensorFlowSettings", "caffeSettings",
                                   "caffe2Settings", "chainerSettings", "customToolkitSettings", "customMpiSettings")},
    **{k: _READ_ONLY for k in ("toolType", "experimentName", "jobOutputDirectoryPathSegment", "creationTime",
                               "provisioningState", "provisioningStateTransitionTime", "executionState",
                               "executionStateTransitionTime", "executionInfo")}})


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return describe_value(value)


def _join(path: str, key: str) -> str:
    """``path.key``; a key that is not a plain name (empty, spaces, invisible characters) is shown
    quoted, ``path["key"]``, so that the message says exactly what the file holds."""
    if not _PLAIN_KEY.match(key):
        return f"{path}[{json.dumps(key)}]"
    return f"{path}.{key}" if path else key


def _walk(value: Any, node: Any, path: str, *, required: bool) -> None:
    if value is None:
        raise InvalidSpecError(path, "is null", node.form + ("" if required else "; or leave the property out"))
    if isinstance(node, (_Str, _Int)):
        node.check(value, path)
    elif isinstance(node, _Arr):
        if not isinstance(value, list):
            raise InvalidSpecError(path, f"is {_kind(value)}, not an array", node.form)
        for i, item in enumerate(value):
            _walk(item, node.item, f"{path}[{i}]", required=True)
    elif isinstance(node, _Obj):
        if not isinstance(value, Mapping):
            raise InvalidSpecError(path, f"is {_kind(value)}, not an object", node.form)
        for key in getattr(value, "repeated", ()):
            raise InvalidSpecError(_join(path, key), "appears more than once in the object (JSON readers keep only "
                                   "one of them)", "each property once")
        for key in value:
            if key in node.refused:
                reason = node.refused[key]
                raise InvalidSpecError(_join(path, key), reason, _KEY_VAULT[1] if reason == _KEY_VAULT[0]
                                       else "horovodSettings" if reason == _OTHER_TOOLKIT else "leave it out")
            if key not in node.fields:
                import difflib
                close = difflib.get_close_matches(str(key), list(node.fields), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise InvalidSpecError(_join(path, str(key)), f"is not a property of {node.what}{hint}",
                                       "one of " + ", ".join(node.fields))
        for key, sub in node.fields.items():
            if key in value:
                _walk(value[key], sub, _join(path, key), required=key in node.required)
        for key in node.required:
            if key not in value:
                raise InvalidSpecError(_join(path, key), "is required", f'"{key}": ' + node.fields[key].form)
    else:  # pragma: no cover - the tables above hold only these nodes
        raise TypeError(node)


def _unique(items: list[tuple[str, str]], what: str, *, fold: bool = False) -> None:
    """``items`` are (path, value): refuse the second of two equal values."""
    seen: dict[str, str] = {}
    for path, value in items:
        key = value.lower() if fold else value
        if key in seen:
            raise InvalidSpecError(path, f"repeats the {what} {value!r} of {seen[key]}", f"a distinct {what}")
        seen[key] = path


def _check_together(properties: Mapping[str, Any], prefix: str) -> None:
    """Rules across properties: distinct mount paths, directory ids and variable names."""
    volumes = properties.get("mountVolumes") or {}
    _unique([(f"{prefix}mountVolumes.{kind}[{i}].relativeMountPath", item["relativeMountPath"])
             for kind in _MOUNT_VOLUMES.fields for i, item in enumerate(volumes.get(kind) or [])],
            "relativeMountPath")
    directories = [(f"{prefix}{kind}[{i}].id", item["id"]) for kind in ("inputDirectories", "outputDirectories")
                   for i, item in enumerate(properties.get(kind) or [])]
    _unique(directories, "directory id", fold=True)  # the service makes them AZ_BATCHAI_<INPUT|OUTPUT>_<ID>
    for path, ident in directories:
        if ".outputDirectories[" in "." + path and ident.lower() == "stdouterr":
            raise InvalidSpecError(path, "'stdouterr' is reserved for the job's logs", "any other id")
    variables = [(f"{prefix}{kind}[{i}]", item) for kind in ("environmentVariables", "secrets")
                 for i, item in enumerate(properties.get(kind) or [])]
    _unique([(f"{path}.name", item["name"]) for path, item in variables], "variable name")
    for path, item in variables:
        check_env_value(item["name"], item["value"], f"{path}.value", secret=".secrets[" in "." + path)
    check_environment_size({item["name"]: item["value"] for _, item in variables},
                           f"{prefix}environmentVariables and {prefix}secrets")
    for i, share in enumerate(volumes.get("azureFileShares") or []):
        url_account, _ = share_url_parts(share["azureFileUrl"], "azureFileUrl")
        named = share.get("accountName")
        if named is not None and ACCOUNT_PLACEHOLDER not in (named, url_account) and named != url_account:
            here = f"{prefix}mountVolumes.azureFileShares[{i}].accountName"
            raise InvalidSpecError(here, f"{named!r} is not the account azureFileUrl names ({url_account!r})",
                                   "the storage account of the share's URL")


# -- 3. the official schema ------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _validator(name: str) -> Draft4Validator:
    # jsonschema is imported here: reading a spec back (job show) never validates one.
    from jsonschema import Draft4Validator  # type: ignore[import-untyped]
    from referencing import Registry
    from referencing.jsonschema import DRAFT4
    schema = json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))
    registry: Registry = Registry().with_resource(_DEPLOYMENT_TEMPLATE, DRAFT4.create_resource(_EXPRESSION))
    return Draft4Validator(schema, registry=registry)


def _schema_name(document: Mapping[str, Any]) -> str:
    url = document.get("$schema")
    if url is None:
        return "job"
    form = JOB_SCHEMA_URL + " (or horovod.json)"
    if not isinstance(url, str):
        raise InvalidSpecError("$schema", f"is {_kind(url)}, not a string", form)
    parsed = urlparse(url)
    parts = [p for p in parsed.path.split("/") if p]
    name = parts[-1][:-5] if parts and parts[-1].endswith(".json") else ""
    if len(parts) < 2 or parts[-2] != "2018-05-01" or name not in schema_names() or parsed.scheme != "https":
        raise InvalidSpecError("$schema", f"{url[:200]!r} is not a Batch AI 2018-05-01 schema", form)
    if name not in _JOB_SCHEMAS:
        raise InvalidSpecError("$schema", f"{name}.json describes a {name} document, not a Horovod job",
                               SCHEMA_BASE + "job.json or horovod.json")
    return name


def _as_schema_sees_it(properties: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with what ``az batchai job create --storage-account-name`` fills in (account name,
    credentials) present, so that a tutorial job.json validates before storage is known."""
    doc = copy.deepcopy(dict(properties))
    volumes = doc.get("mountVolumes")
    if isinstance(volumes, dict):
        for key in ("azureFileShares", "azureBlobFileSystems"):
            for entry in volumes.get(key) or []:
                if isinstance(entry, dict):
                    entry.setdefault("accountName", ACCOUNT_PLACEHOLDER)
                    entry.setdefault("credentials", {"accountKey": KEY_PLACEHOLDER})
    return doc


def _check_schema(name: str, properties: Mapping[str, Any], prefix: str) -> None:
    from jsonschema.exceptions import best_match  # type: ignore[import-untyped]
    error = best_match(_validator(name).iter_errors({"properties": _as_schema_sees_it(properties)}))
    if error is not None:  # the walk above is stricter; this is the official word on what it missed
        parts = [str(p) for p in error.absolute_path][1:]
        path = prefix + ".".join(parts) if parts else prefix.rstrip(".") or "properties"
        problem = "is not valid" if _SECRET_KEYS.intersection(parts) else error.message
        expected = error.schema.get("description", "") if isinstance(error.schema, dict) else ""
        raise InvalidSpecError(path, problem, expected or f"see {SCHEMA_BASE}{name}.json")


# -- the whole document ----------------------------------------------------------------------------
def validate_job_document(document: Any, *, source: str = "job document") -> tuple[dict[str, Any], str]:
    """Validate a job.json document; return its ``properties`` and the prefix its property paths
    have as written (``"properties."``, or ``""`` for a bare properties object). Raises
    :class:`InvalidSpecError` naming the property path, ``source``, and the valid form."""
    try:
        return _validate(document)
    except InvalidSpecError as err:
        if err.source is not None:
            raise
        raise InvalidSpecError(err.field, err.problem, err.valid_form, source=source) from None
    except RecursionError:
        raise InvalidSpecError("the document", "is nested too deeply", _DOCUMENT_FORM, source=source) from None


def _validate(document: Any) -> tuple[dict[str, Any], str]:
    if not isinstance(document, Mapping):
        raise InvalidSpecError("the document", f"is {_kind(document)}, not a JSON object", _DOCUMENT_FORM)
    for key in getattr(document, "repeated", ()):
        raise InvalidSpecError(key, "appears more than once in the document", "each property once")
    if "properties" in document or "$schema" in document:
        if "properties" not in document:
            raise InvalidSpecError("properties", "is missing", _DOCUMENT_FORM)
        extra = [k for k in document if k not in ("$schema", "properties")]
        if extra:
            inner = f" (did you mean properties.{extra[0]}?)" if extra[0] in _JOB.fields else ""
            raise InvalidSpecError(str(extra[0]), f"is not a job.json key{inner}", '"$schema" and "properties"')
        name = _schema_name(document)
        properties, prefix = document["properties"], "properties."
        if not isinstance(properties, Mapping):
            raise InvalidSpecError("properties", f"is {_kind(properties)}, not an object", _DOCUMENT_FORM)
    else:
        name, properties, prefix = "job", document, ""
    # A bare properties object has paths that start at its keys: "nodeCount", not ".nodeCount".
    _walk(properties, _JOB, prefix.rstrip("."), required=True)
    _check_together(properties, prefix)
    _check_schema(name, properties, prefix)
    return dict(properties), prefix
