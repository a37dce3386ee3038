"""Request validation for Microsoft.BatchAI 2018-05-01: names, bodies and query parameters.

Bodies are checked against a declarative copy of the spec's definitions (BatchAI.json: required
properties, types, enums) written as :class:`Obj` / :class:`Arr` / :class:`Str` / :class:`Int`
nodes, then against the rules the service applied on top (exactly one toolkit per job, one of
manual/autoScale, node counts within the cluster, known VM sizes...). The first problem found is
raised as a 400 :class:`ArmError` whose message names the property by its JSON path
(``properties.nodeSetup.mountVolumes.azureFileShares[0].accountName``) and states the valid form.

Checking returns a cleaned copy that holds only properties the spec defines, in the spec's order,
with the service's defaults filled in. An unknown name inside a resource's ``properties`` (a typo
such as ``nodeCountt``) is refused with a 400, as Batch AI refused it; outside them it is dropped,
as ARM does. Secrets are split
off here too (:func:`split_secrets`) so that nothing secret ever reaches a stored body.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

from ..storage import accounts
from ..core.durations import format_duration, parse_duration
from ..core.arm_errors import ArmError, InvalidParameter, InvalidRequestContent, MissingRequiredProperty
from .errors import UnsupportedToolkit
from ..runner.output_dirs import STDOUTERR
from ..runner.vm_sizes import VmSize, cluster_size_problem, lookup_vm_size

__all__ = ["Str", "Int", "Obj", "Arr", "StrMap", "check", "check_name", "check_resource_group_name",
           "WORKSPACE_CREATE", "WORKSPACE_UPDATE", "CLUSTER_CREATE", "CLUSTER_UPDATE", "JOB_CREATE",
           "FILE_SERVER_CREATE", "TOOLKITS", "RUNNABLE_TOOLKITS", "Parsed", "parse_workspace_create",
           "parse_workspace_update", "parse_cluster_create", "parse_cluster_update", "parse_job_create",
           "parse_file_server_create", "split_secrets", "check_int_query",
           "max_node_count", "check_job_node_count", "NAME_PATTERN", "MAX_NODES"]

NAME_PATTERN = re.compile(r"^[-\w_]+\Z")
_RG_PATTERN = re.compile(r"^[-\w\._\(\)]+\Z")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_DIR_ID = re.compile(r"^[A-Za-z0-9_]+\Z")


def _bad(error: type[ArmError], path: str, message: str) -> ArmError:
    return error(message, target=path or None)


# -- declarative schema nodes --------------------------------------------------------------------

@dataclass(frozen=True)
class Str:
    enum: tuple[str, ...] = ()
    nonempty: bool = False
    default: Optional[str] = None
    #: most UTF-8 bytes the value may have, and why (said when a value exceeds it)
    max_bytes: Optional[int] = None
    why: str = ""
    #: one line (a path): no control characters
    line: bool = False
    #: a grammar the value must follow (a function answering whether it does) and its description
    grammar: Optional[Callable[[str], bool]] = None
    grammar_form: str = ""

    def form(self) -> str:
        if self.enum:
            return "one of " + ", ".join(repr(e) for e in self.enum)
        if self.grammar is not None:
            return self.grammar_form
        return "a non-empty string" if self.nonempty else "a string"


@dataclass(frozen=True)
class Int:
    minimum: Optional[int] = None
    maximum: Optional[int] = None
    default: Optional[int] = None
    #: why the maximum is what it is, when that is not obvious (said when a value exceeds it).
    why: str = ""

    def form(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return f"an integer between {self.minimum} and {self.maximum}"
        if self.minimum is not None:
            return f"an integer >= {self.minimum}"
        return "an integer"


@dataclass(frozen=True)
class Obj:
    fields: dict[str, Any]
    required: tuple[str, ...] = ()
    default: Optional[dict[str, Any]] = None
    #: names accepted and dropped (the spec's own examples use them)
    ignored: tuple[str, ...] = ()

    def form(self) -> str:
        need = f" with {', '.join(self.required)}" if self.required else ""
        return f"a JSON object{need}"


@dataclass(frozen=True)
class Arr:
    item: Any
    default: None = None

    def form(self) -> str:
        return "a JSON array"


@dataclass(frozen=True)
class StrMap:
    """An object of string values (resource tags)."""
    max_entries: int = 50
    default: None = None

    def form(self) -> str:
        return f"a JSON object of at most {self.max_entries} string values"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def check(value: Any, node: Any, path: str = "") -> Any:
    """Check ``value`` against ``node``; returns the cleaned value or raises a 400 ArmError."""
    where = path or "the request body"
    if isinstance(node, Str):
        if not isinstance(value, str):
            raise _bad(InvalidRequestContent, path, f"The property '{where}' must be {node.form()}; got {_kind(value, path)}.")
        # Every string may reach a process (argument, variable, path) or the store: neither takes a NUL or
        # half a UTF-16 pair. Positions are said, never the text (it may be a secret).
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as err:
            raise _bad(InvalidParameter, path, f"The property '{where}' holds an unpaired surrogate at character "
                                               f"{err.start}; it must be Unicode text.") from None
        for i, char in enumerate(value):
            if char == "\0" or (node.line and (ord(char) < 32 or ord(char) == 127)):
                what = "a NUL character" if char == "\0" else "a control character"
                raise _bad(InvalidParameter, path, f"The property '{where}' holds {what} at character {i}; "
                                                   f"no {'path' if node.line else 'process argument or variable'} "
                                                   "can hold one.")
        if node.max_bytes is not None and size > node.max_bytes:
            why = f" ({node.why})" if node.why else ""
            raise _bad(InvalidParameter, path, f"The property '{where}' must be at most {node.max_bytes} bytes"
                                               f"{why}; got {size}.")
        if node.enum:
            match = next((e for e in node.enum if e.lower() == value.lower()), None)
            if match is None:
                raise _bad(InvalidParameter, path, f"The property '{where}' must be {node.form()}; got {value!r}.")
            return match
        if node.nonempty and not value.strip():
            raise _bad(InvalidParameter, path, f"The property '{where}' must be {node.form()}.")
        if node.grammar is not None and not node.grammar(value):
            raise _bad(InvalidParameter, path, f"The property '{where}' must be {node.form()}; got {value[:200]!r}.")
        return value
    if isinstance(node, Int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(InvalidRequestContent, path, f"The property '{where}' must be {node.form()}; got {_kind(value, path)}.")
        if (node.minimum is not None and value < node.minimum) or (node.maximum is not None and value > node.maximum):
            why = f" ({node.why})" if node.why and node.maximum is not None and value > node.maximum else ""
            raise _bad(InvalidParameter, path, f"The property '{where}' must be {node.form()}; got {value}{why}.")
        return value
    if isinstance(node, Arr):
        if not isinstance(value, list):
            raise _bad(InvalidRequestContent, path, f"The property '{where}' must be {node.form()}; got {_kind(value, path)}.")
        return [check(item, node.item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(node, StrMap):
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise _bad(InvalidRequestContent, path, f"The property '{where}' must be {node.form()}.")
        if len(value) > node.max_entries:
            raise _bad(InvalidParameter, path, f"The property '{where}' must be {node.form()}; got {len(value)}.")
        return dict(value)
    if isinstance(node, Obj):
        if not isinstance(value, dict):
            raise _bad(InvalidRequestContent, path, f"The property '{where}' must be {node.form()}; got {_kind(value, path)}.")
        for name in node.required:
            if value.get(name) is None:
                sub = node.fields[name]
                raise _bad(MissingRequiredProperty, _join(path, name),
                           f"The property '{_join(path, name)}' is required and must be {sub.form()}.")
        if path.startswith("properties"):
            # Within a resource's properties an unknown name is a mistake (a typo), refused as Azure
            # refused it; outside them (location, tags, $schema...) it is left alone, as ARM does.
            unknown = sorted(name for name in value if name not in node.fields and name not in node.ignored)
            if unknown:
                valid = ", ".join(node.fields)
                raise _bad(InvalidRequestContent, _join(path, unknown[0]),
                           f"The property '{_join(path, unknown[0])}' is not known; {where} takes {valid}.")
        out: dict[str, Any] = {}
        for name, sub in node.fields.items():
            given = value.get(name)
            if given is None:
                if getattr(sub, "default", None) is not None:
                    out[name] = sub.default if not isinstance(sub.default, dict) else dict(sub.default)
                continue
            out[name] = check(given, sub, _join(path, name))
        return out
    raise TypeError(f"unknown schema node {node!r}")


#: properties whose values are secrets: an error about them names their type, never their value.
_SECRET_PATH = re.compile(r"(?:\.(?:accountKey|adminUserPassword|password|instrumentationKey)|secrets\[\d+\]\.value)\Z")


def _kind(value: Any, path: str = "") -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    secret = bool(_SECRET_PATH.search(path))
    if isinstance(value, (int, float)):
        return "a number" if secret else f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) <= 40 and not secret else "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


# -- the spec's definitions, as nodes (facts from BatchAI.json 2018-05-01) -----------------------

#: Linux refuses one process argument or NAME=value variable longer than 131072 bytes (MAX_ARG_STRLEN),
#: and all of them together beyond ARG_MAX (2 MiB by default). The runner passes a job's command to
#: /bin/bash -c as one argument, so a command line gets half of one (the launcher and paths share it).
MAX_ARGUMENT_BYTES = 131072
_ONE_ARGUMENT = f"the node runs it as one process argument, which Linux caps at {MAX_ARGUMENT_BYTES} bytes"
MAX_ENVIRONMENT_BYTES = 1024 * 1024
COMMAND = Str(nonempty=True, max_bytes=65536, why=_ONE_ARGUMENT)
PATH = Str(nonempty=True, max_bytes=4096, line=True, why="Linux's PATH_MAX")
OPTIONAL_PATH = Str(max_bytes=4096, line=True, why="Linux's PATH_MAX")
RESOURCE_ID = Obj({"id": Str(nonempty=True)}, ("id",))
KEY_VAULT_REF = Obj({"sourceVault": RESOURCE_ID, "secretUrl": Str(nonempty=True)}, ("sourceVault", "secretUrl"))
ENV_VAR = Obj({"name": Str(nonempty=True), "value": Str()}, ("name", "value"))
SECRET_VAR = Obj({"name": Str(nonempty=True), "value": Str(), "valueSecretReference": KEY_VAULT_REF}, ("name",))
STORAGE_CREDENTIALS = Obj({"accountKey": Str(), "accountKeySecretReference": KEY_VAULT_REF})
AZURE_FILE_SHARE = Obj({"accountName": Str(nonempty=True), "azureFileUrl": Str(nonempty=True),
                        "credentials": STORAGE_CREDENTIALS, "relativeMountPath": PATH,
                        "fileMode": Str(default="0777"), "directoryMode": Str(default="0777")},
                       ("accountName", "azureFileUrl", "credentials", "relativeMountPath"))
AZURE_BLOB_FS = Obj({"accountName": Str(nonempty=True), "containerName": Str(nonempty=True),
                     "credentials": STORAGE_CREDENTIALS, "relativeMountPath": PATH,
                     "mountOptions": Str()},
                    ("accountName", "containerName", "credentials", "relativeMountPath"))
FILE_SERVER_REF = Obj({"fileServer": RESOURCE_ID, "sourceDirectory": OPTIONAL_PATH, "relativeMountPath": PATH,
                       "mountOptions": Str()}, ("fileServer", "relativeMountPath"))
UNMANAGED_FS = Obj({"mountCommand": COMMAND, "relativeMountPath": PATH}, ("mountCommand", "relativeMountPath"))
MOUNT_VOLUMES = Obj({"azureFileShares": Arr(AZURE_FILE_SHARE), "azureBlobFileSystems": Arr(AZURE_BLOB_FS),
                     "fileServers": Arr(FILE_SERVER_REF), "unmanagedFileSystems": Arr(UNMANAGED_FS)})
IMAGE_REFERENCE = Obj({"publisher": Str(nonempty=True), "offer": Str(nonempty=True), "sku": Str(nonempty=True),
                       "version": Str(default="latest"), "virtualMachineImageId": Str()},
                      ("publisher", "offer", "sku"))
DEFAULT_IMAGE = {"publisher": "Canonical", "offer": "UbuntuServer", "sku": "16.04-LTS", "version": "latest"}
VM_CONFIGURATION = Obj({"imageReference": IMAGE_REFERENCE})
DEALLOCATION_OPTIONS = ("requeue", "terminate", "waitforjobcompletion")
#: most nodes a local cluster may have: every node is a slot on this one machine, and a mistyped
#: count (10**12) must be refused rather than provisioned row by row.
MAX_NODES = 100
_NODE_LIMIT = f"a local cluster's nodes all run on this machine; at most {MAX_NODES}"
MANUAL_SCALE = Obj({"targetNodeCount": Int(minimum=0, maximum=MAX_NODES, why=_NODE_LIMIT),
                    "nodeDeallocationOption": Str(DEALLOCATION_OPTIONS, default="requeue")},
                   ("targetNodeCount",))
AUTO_SCALE = Obj({"minimumNodeCount": Int(minimum=0, maximum=MAX_NODES, why=_NODE_LIMIT),
                  "maximumNodeCount": Int(minimum=1, maximum=MAX_NODES, why=_NODE_LIMIT),
                  "initialNodeCount": Int(minimum=0, maximum=MAX_NODES, default=0, why=_NODE_LIMIT)},
                 ("minimumNodeCount", "maximumNodeCount"))
SCALE_SETTINGS = Obj({"manual": MANUAL_SCALE, "autoScale": AUTO_SCALE})
USER_ACCOUNT = Obj({"adminUserName": Str(nonempty=True), "adminUserSshPublicKey": Str(), "adminUserPassword": Str()},
                   ("adminUserName",))
SETUP_TASK = Obj({"commandLine": COMMAND, "environmentVariables": Arr(ENV_VAR), "secrets": Arr(SECRET_VAR),
                  "stdOutErrPathPrefix": PATH}, ("commandLine", "stdOutErrPathPrefix"))
APP_INSIGHTS = Obj({"component": RESOURCE_ID, "instrumentationKey": Str(),
                    "instrumentationKeySecretReference": KEY_VAULT_REF}, ("component",))
PERFORMANCE_COUNTERS = Obj({"appInsightsReference": APP_INSIGHTS}, ("appInsightsReference",))
NODE_SETUP = Obj({"setupTask": SETUP_TASK, "mountVolumes": MOUNT_VOLUMES, "performanceCountersSettings": PERFORMANCE_COUNTERS})
CLUSTER_PROPERTIES = Obj({"vmSize": Str(nonempty=True), "vmPriority": Str(("dedicated", "lowpriority"), default="dedicated"),
                          "scaleSettings": SCALE_SETTINGS, "virtualMachineConfiguration": VM_CONFIGURATION,
                          "userAccountSettings": USER_ACCOUNT, "nodeSetup": NODE_SETUP, "subnet": RESOURCE_ID},
                         ("vmSize", "userAccountSettings"))
CLUSTER_CREATE = Obj({"properties": CLUSTER_PROPERTIES}, ("properties",))
CLUSTER_UPDATE = Obj({"properties": Obj({"scaleSettings": SCALE_SETTINGS})})

REGISTRY_CREDENTIALS = Obj({"username": Str(nonempty=True), "password": Str(), "passwordSecretReference": KEY_VAULT_REF},
                           ("username",))
# docker's --shm-size (a number, an optional unit) and a registry's address (a host, an optional
# scheme and port), as the SDK checks them before sending
_SHM_SIZE = re.compile(r"^(\d+(?:\.\d+)?) ?([kKmMgGtTpP])?[iI]?[bB]?\Z", re.ASCII)
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")


def _is_shm_size(value: str) -> bool:
    match = _SHM_SIZE.match(value)
    return match is not None and float(match.group(1)) > 0


def _is_registry_url(value: str) -> bool:
    parts = urlsplit(value if "://" in value else "https://" + value)
    try:
        parts.port
    except ValueError:
        return False
    return (parts.scheme in ("https", "http") and "@" not in parts.netloc and not parts.query and not parts.fragment
            and not any(c.isspace() for c in value)
            and all(_HOST_LABEL.match(label) for label in (parts.hostname or "").split(".")))


CONTAINER_SETTINGS = Obj({"imageSourceRegistry": Obj({
    "serverUrl": Str(grammar=_is_registry_url, grammar_form="a registry address like 'https://myregistry.azurecr.io' "
                                                            "or 'myregistry.azurecr.io:5000'"),
    "image": Str(nonempty=True), "credentials": REGISTRY_CREDENTIALS}, ("image",)),
    "shmSize": Str(grammar=_is_shm_size, grammar_form="a size docker accepts for --shm-size, like '2g', '512m' or "
                                                      "'1073741824' (bytes)")}, ("imageSourceRegistry",))
_PY = {"pythonScriptFilePath": PATH, "pythonInterpreterPath": OPTIONAL_PATH,
       "commandLineArgs": Str(max_bytes=65536, why=_ONE_ARGUMENT)}
TOOLKITS: dict[str, tuple[str, Obj]] = {
    # settings property -> (toolType the service reports, schema)
    "cntkSettings": ("cntk", Obj({"languageType": Str(), "configFilePath": Str(), "pythonScriptFilePath": Str(),
                                  "pythonInterpreterPath": Str(), "commandLineArgs": Str(), "processCount": Int(minimum=1)})),
    "pyTorchSettings": ("pytorch", Obj({**_PY, "processCount": Int(minimum=1), "communicationBackend": Str()},
                                       ("pythonScriptFilePath",))),
    "tensorFlowSettings": ("tensorflow", Obj({"pythonScriptFilePath": Str(nonempty=True), "pythonInterpreterPath": Str(),
                                              "masterCommandLineArgs": Str(), "workerCommandLineArgs": Str(),
                                              "parameterServerCommandLineArgs": Str(), "workerCount": Int(minimum=1),
                                              "parameterServerCount": Int(minimum=1)}, ("pythonScriptFilePath",))),
    "caffeSettings": ("caffe", Obj({"configFilePath": Str(), "pythonScriptFilePath": Str(), "pythonInterpreterPath": Str(),
                                    "commandLineArgs": Str(), "processCount": Int(minimum=1)})),
    "caffe2Settings": ("caffe2", Obj(dict(_PY), ("pythonScriptFilePath",))),
    "chainerSettings": ("chainer", Obj({**_PY, "processCount": Int(minimum=1)}, ("pythonScriptFilePath",))),
    "customToolkitSettings": ("custom", Obj({"commandLine": Str(max_bytes=65536, why=_ONE_ARGUMENT)})),
    "customMpiSettings": ("mpi", Obj({"commandLine": COMMAND, "processCount": Int(minimum=1)}, ("commandLine",))),
    "horovodSettings": ("horovod", Obj({**_PY, "processCount": Int(minimum=1)}, ("pythonScriptFilePath",))),
}
#: toolkits the local service can run (the others are refused at creation).
RUNNABLE_TOOLKITS = ("horovodSettings", "customMpiSettings", "customToolkitSettings")

JOB_PROPERTIES = Obj({
    "schedulingPriority": Str(("low", "normal", "high"), default="normal"),
    "cluster": RESOURCE_ID,
    "mountVolumes": MOUNT_VOLUMES,
    "nodeCount": Int(minimum=1),  # at most the cluster's size (check_job_node_count), so at most MAX_NODES
    "containerSettings": CONTAINER_SETTINGS,
    **{name: schema for name, (_, schema) in TOOLKITS.items()},
    "jobPreparation": Obj({"commandLine": COMMAND}, ("commandLine",)),
    "stdOutErrPathPrefix": PATH,
    "inputDirectories": Arr(Obj({"id": Str(nonempty=True), "path": PATH}, ("id", "path"))),
    "outputDirectories": Arr(Obj({"id": Str(nonempty=True), "pathPrefix": PATH, "pathSuffix": OPTIONAL_PATH},
                                 ("id", "pathPrefix"))),
    "environmentVariables": Arr(ENV_VAR),
    "secrets": Arr(SECRET_VAR),
    "constraints": Obj({"maxWallClockTime": Str(nonempty=True)}),
}, ("cluster", "nodeCount", "stdOutErrPathPrefix"), ignored=("priority",))  # PutJob.json's name of schedulingPriority
JOB_CREATE = Obj({"properties": JOB_PROPERTIES}, ("properties",))

DATA_DISKS = Obj({"diskSizeInGB": Int(minimum=1, maximum=4095), "cachingType": Str(("none", "readonly", "readwrite"), default="none"),
                  "diskCount": Int(minimum=1, maximum=64), "storageAccountType": Str(("Standard_LRS", "Premium_LRS"))},
                 ("diskSizeInGB", "diskCount", "storageAccountType"))
SSH_CONFIGURATION = Obj({"publicIPsToAllow": Arr(Str(nonempty=True)), "userAccountSettings": USER_ACCOUNT},
                        ("userAccountSettings",))
FILE_SERVER_PROPERTIES = Obj({"vmSize": Str(nonempty=True), "sshConfiguration": SSH_CONFIGURATION,
                              "dataDisks": DATA_DISKS, "subnet": RESOURCE_ID},
                             ("vmSize", "sshConfiguration", "dataDisks"))
FILE_SERVER_CREATE = Obj({"properties": FILE_SERVER_PROPERTIES}, ("properties",))

WORKSPACE_CREATE = Obj({"location": Str(nonempty=True), "tags": StrMap()}, ("location",))
WORKSPACE_UPDATE = Obj({"tags": StrMap()})


# -- names and query parameters -------------------------------------------------------------------

def check_name(value: str, what: str, param: str) -> None:
    """A workspace/experiment/cluster/job/file server name: 1-64 of letters, digits, '-' and '_'."""
    if not 1 <= len(value) <= 64 or not NAME_PATTERN.match(value):
        raise _bad(InvalidParameter, param,
                   f"The {what} name '{value[:80]}' is invalid: {what} names (parameter '{param}') must be 1 to 64 "
                   "characters long and contain only letters, digits, hyphens (-) and underscores (_).")


def check_resource_group_name(value: str) -> None:
    """ARM's rule: 1-90 of letters, digits, '_', '-', '.', '(', ')', not ending in '.'."""
    if not 1 <= len(value) <= 90 or not _RG_PATTERN.match(value) or value.endswith("."):
        raise _bad(InvalidParameter, "resourceGroupName",
                   f"The resource group name '{value[:100]}' is invalid: it must be 1 to 90 characters of letters, "
                   "digits, underscores, hyphens, periods and parentheses, and must not end with a period.")


def check_int_query(raw: Optional[str], name: str, *, minimum: int, maximum: int, default: int) -> int:
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None  # type: ignore[assignment]
    if value is None or not minimum <= value <= maximum:
        raise _bad(InvalidParameter, name,
                   f"The query parameter '{name}' must be an integer between {minimum} and {maximum}; got {raw[:40]!r}.")
    return value


# -- durations (constraints.maxWallClockTime) ------------------------------------------------------

# -- parsed requests -------------------------------------------------------------------------------

@dataclass
class Parsed:
    """A checked request: the properties to store and answer, and the secrets kept apart."""
    properties: dict[str, Any]
    private: dict[str, Any] = field(default_factory=dict)
    vm_size: Optional[VmSize] = None


def split_secrets(properties: dict[str, Any]) -> dict[str, Any]:
    """Move every secret out of ``properties`` (in place) into the private layout the store keeps (never answered):
    ``{"mountKeys": {"<account>/<share or container>": key}, "secrets": {NAME: value},
    "adminUserPassword": ..., "setupTaskSecrets": {...}, "registryPassword": ..., "instrumentationKey": ...}``.
    Bodies keep ``"credentials": {}`` and secret names, as the service answered them."""
    private: dict[str, Any] = {}
    volume_sets = [properties.get("mountVolumes"), (properties.get("nodeSetup") or {}).get("mountVolumes")]
    for volumes in volume_sets:
        if not volumes:
            continue
        for share in volumes.get("azureFileShares", []):
            key = share.get("credentials", {}).pop("accountKey", None)
            if key is not None:
                private.setdefault("mountKeys", {})[f"{share['accountName']}/{_share_name(share['azureFileUrl'])}"] = key
        for container in volumes.get("azureBlobFileSystems", []):
            key = container.get("credentials", {}).pop("accountKey", None)
            if key is not None:
                private.setdefault("mountKeys", {})[f"{container['accountName']}/{container['containerName']}"] = key
    user = properties.get("userAccountSettings")
    if user and "adminUserPassword" in user:
        private["adminUserPassword"] = user.pop("adminUserPassword")
    for item in properties.get("secrets", []):
        if "value" in item:
            private.setdefault("secrets", {})[item["name"]] = item.pop("value")
    setup = (properties.get("nodeSetup") or {}).get("setupTask")
    if setup:
        for item in setup.get("secrets", []):
            if "value" in item:
                private.setdefault("setupTaskSecrets", {})[item["name"]] = item.pop("value")
    perf = ((properties.get("nodeSetup") or {}).get("performanceCountersSettings") or {}).get("appInsightsReference")
    if perf and "instrumentationKey" in perf:
        private["instrumentationKey"] = perf.pop("instrumentationKey")
    registry = ((properties.get("containerSettings") or {}).get("imageSourceRegistry") or {}).get("credentials")
    if registry and "password" in registry:
        private["registryPassword"] = registry.pop("password")
    return private


def _share_name(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def _no_key_vault(value: Any, path: str) -> None:
    """The local service has no Key Vault to resolve secret references from."""
    if isinstance(value, dict):
        for key, sub in value.items():
            here = _join(path, key)
            if key.endswith("SecretReference"):
                raise _bad(InvalidParameter, here,
                           f"The property '{here}' refers to Azure Key Vault, which the local service does not have; "
                           "give the secret value itself instead.")
            _no_key_vault(sub, here)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _no_key_vault(sub, f"{path}[{i}]")


def _check_mount_volumes(volumes: Optional[dict[str, Any]], path: str) -> None:
    if not volumes:
        return
    seen: dict[str, str] = {}
    for kind in ("azureFileShares", "azureBlobFileSystems", "fileServers", "unmanagedFileSystems"):
        for i, volume in enumerate(volumes.get(kind, [])):
            here = f"{path}.{kind}[{i}]"
            rel = volume["relativeMountPath"]
            if rel.startswith("/") or ".." in rel.split("/"):
                raise _bad(InvalidParameter, f"{here}.relativeMountPath",
                           f"The property '{here}.relativeMountPath' must be a relative path inside the mount root "
                           f"(no leading '/', no '..'); got {rel!r}.")
            if rel in seen:
                raise _bad(InvalidParameter, f"{here}.relativeMountPath",
                           f"The property '{here}.relativeMountPath' repeats the mount path {rel!r} of {seen[rel]}; "
                           "each volume needs its own relativeMountPath.")
            seen[rel] = here
            if kind in ("azureFileShares", "azureBlobFileSystems") and "accountKey" not in volume["credentials"]:
                raise _bad(MissingRequiredProperty, f"{here}.credentials.accountKey",
                           f"The property '{here}.credentials.accountKey' is required: the storage account key used "
                           "to mount the volume.")
            if kind == "azureFileShares":
                url = volume["azureFileUrl"]
                try:
                    accounts.parse_share_url(url)
                except ValueError:
                    raise _bad(InvalidParameter, f"{here}.azureFileUrl",
                               f"The property '{here}.azureFileUrl' must be the share's URL, "
                               f"{accounts.SHARE_URL_FORMS}; got {url[:200]!r}.") from None


def _check_env(items: list[dict[str, Any]], path: str, taken: dict[str, str]) -> None:
    """Names valid and distinct (``taken`` across calls); each NAME=value within one process variable."""
    for i, item in enumerate(items):
        name = item["name"]
        here = f"{path}[{i}].name"
        if not _ENV_NAME.match(name):
            raise _bad(InvalidParameter, here,
                       f"The property '{here}' must be an environment variable name (letters, digits and '_', "
                       f"not starting with a digit); got {name[:80]!r}.")
        if name in taken:
            raise _bad(InvalidParameter, here, f"The property '{here}' repeats the variable {name!r} of {taken[name]}.")
        taken[name] = f"{path}[{i}]"
        size = len(name) + 2 + len((item.get("value") or "").encode("utf-8"))
        if size > MAX_ARGUMENT_BYTES:
            raise _bad(InvalidParameter, f"{path}[{i}]",
                       f"The property '{path}[{i}]' must fit in one process variable, at most {MAX_ARGUMENT_BYTES} "
                       f"bytes of NAME=value (Linux's MAX_ARG_STRLEN); got {size}.")


def parse_workspace_create(body: Any) -> dict[str, Any]:
    return check(body, WORKSPACE_CREATE)


def parse_workspace_update(body: Any) -> dict[str, Any]:
    return check(body, WORKSPACE_UPDATE)


def _check_scale_settings(scale: dict[str, Any], path: str) -> None:
    if ("manual" in scale) == ("autoScale" in scale):
        raise _bad(InvalidParameter, path,
                   f"The property '{path}' must have exactly one of 'manual' or 'autoScale'.")
    auto = scale.get("autoScale")
    if auto:
        lo, hi, first = auto["minimumNodeCount"], auto["maximumNodeCount"], auto["initialNodeCount"]
        if lo > hi:
            raise _bad(InvalidParameter, f"{path}.autoScale.minimumNodeCount",
                       f"The property '{path}.autoScale.minimumNodeCount' must not exceed maximumNodeCount ({hi}); got {lo}.")
        if first > hi:
            raise _bad(InvalidParameter, f"{path}.autoScale.initialNodeCount",
                       f"The property '{path}.autoScale.initialNodeCount' must be between 0 and maximumNodeCount ({hi}); got {first}.")


def parse_cluster_create(body: Any) -> Parsed:
    props = check(body, CLUSTER_CREATE)["properties"]
    size = lookup_vm_size(props["vmSize"])
    if size is None:
        raise _bad(InvalidParameter, "properties.vmSize",
                   f"The property 'properties.vmSize' must be a known Azure VM size such as Standard_NC6, "
                   f"Standard_NC12, Standard_D1 or Standard_D2_v2; got {props['vmSize'][:80]!r}.")
    problem = cluster_size_problem(size)
    if problem:
        raise _bad(InvalidParameter, "properties.vmSize", f"The property 'properties.vmSize' is not allowed: {problem}.")
    props.setdefault("scaleSettings", {"manual": {"targetNodeCount": 0, "nodeDeallocationOption": "requeue"}})
    _check_scale_settings(props["scaleSettings"], "properties.scaleSettings")
    props.setdefault("virtualMachineConfiguration", {"imageReference": dict(DEFAULT_IMAGE)})
    props["virtualMachineConfiguration"].setdefault("imageReference", dict(DEFAULT_IMAGE))
    user = props["userAccountSettings"]
    if not user.get("adminUserPassword") and not user.get("adminUserSshPublicKey"):
        raise _bad(MissingRequiredProperty, "properties.userAccountSettings",
                   "The property 'properties.userAccountSettings' must give adminUserPassword or adminUserSshPublicKey "
                   "(or both) for the administrator account.")
    _no_key_vault(props, "properties")
    node_setup = props.get("nodeSetup") or {}
    _check_mount_volumes(node_setup.get("mountVolumes"), "properties.nodeSetup.mountVolumes")
    setup = node_setup.get("setupTask")
    if setup:
        taken: dict[str, str] = {}
        _check_env(setup.get("environmentVariables", []), "properties.nodeSetup.setupTask.environmentVariables", taken)
        _check_env(setup.get("secrets", []), "properties.nodeSetup.setupTask.secrets", taken)
        variables = setup.get("environmentVariables", []) + setup.get("secrets", [])
        total = sum(len(v["name"]) + 2 + len((v.get("value") or "").encode("utf-8")) for v in variables)
        if total > MAX_ENVIRONMENT_BYTES:
            raise _bad(InvalidParameter, "properties.nodeSetup.setupTask.secrets",
                       "The properties 'properties.nodeSetup.setupTask.environmentVariables' and "
                       f"'properties.nodeSetup.setupTask.secrets' must hold at most {MAX_ENVIRONMENT_BYTES} bytes of "
                       f"NAME=value together (half of Linux's ARG_MAX); got {total}.")
        _require_secret_values(setup.get("secrets", []), "properties.nodeSetup.setupTask.secrets")
    private = split_secrets(props)
    return Parsed(props, private, size)


def parse_cluster_update(body: Any) -> Optional[dict[str, Any]]:
    """The new scaleSettings of a PATCH, or None if it asks for no change."""
    props = check(body, CLUSTER_UPDATE).get("properties") or {}
    scale = props.get("scaleSettings")
    if scale is None:
        return None
    _check_scale_settings(scale, "properties.scaleSettings")
    return scale


def _require_secret_values(items: list[dict[str, Any]], path: str) -> None:
    for i, item in enumerate(items):
        if item.get("value") is None:
            raise _bad(MissingRequiredProperty, f"{path}[{i}].value",
                       f"The property '{path}[{i}].value' is required (the local service has no Key Vault to read "
                       "valueSecretReference from).")


def max_node_count(cluster_properties: dict[str, Any]) -> int:
    """The most nodes a job may ask of a cluster: the manual target, or the auto-scale maximum."""
    scale = cluster_properties.get("scaleSettings") or {}
    if "autoScale" in scale:
        return int(scale["autoScale"]["maximumNodeCount"])
    return int((scale.get("manual") or {}).get("targetNodeCount", 0))


def check_job_node_count(node_count: int, cluster_name: str, cluster_properties: dict[str, Any]) -> None:
    most = max_node_count(cluster_properties)
    if node_count > most:
        if most == 0:
            raise _bad(InvalidParameter, "properties.nodeCount",
                       f"The property 'properties.nodeCount' asks for {node_count} node(s) but cluster '{cluster_name}' "
                       "is scaled to 0 nodes; resize the cluster (PATCH scaleSettings) before submitting jobs to it.")
        raise _bad(InvalidParameter, "properties.nodeCount",
                   f"The property 'properties.nodeCount' must be an integer between 1 and {most} (the maximum node count "
                   f"of cluster '{cluster_name}'); got {node_count}.")


def parse_job_create(body: Any) -> Parsed:
    """Check a job request (without the cluster; see :func:`check_job_node_count`) and fill defaults:
    ``toolType``, ``processCount`` = nodeCount, ``constraints.maxWallClockTime`` = P7D."""
    props = check(body, JOB_CREATE)["properties"]
    given = [name for name in TOOLKITS if name in props]
    if len(given) != 1:
        found = "none" if not given else ", ".join(given)
        raise _bad(InvalidParameter if given else MissingRequiredProperty, "properties",
                   "The property 'properties' must have exactly one toolkit setting among "
                   f"{', '.join(TOOLKITS)}; found {found}.")
    toolkit = given[0]
    if toolkit not in RUNNABLE_TOOLKITS:
        raise _bad(UnsupportedToolkit, f"properties.{toolkit}",
                   f"The property 'properties.{toolkit}' names a toolkit the local service cannot run: it has runners "
                   f"only for {', '.join(RUNNABLE_TOOLKITS)}. Use horovodSettings, or customMpiSettings / "
                   "customToolkitSettings with your own command line.")
    _no_key_vault(props, "properties")
    settings = props[toolkit]
    if toolkit in ("horovodSettings", "customMpiSettings"):
        settings.setdefault("processCount", props["nodeCount"])
    props["toolType"] = TOOLKITS[toolkit][0]
    _check_mount_volumes(props.get("mountVolumes"), "properties.mountVolumes")
    taken: dict[str, str] = {}
    _check_env(props.get("environmentVariables", []), "properties.environmentVariables", taken)
    _check_env(props.get("secrets", []), "properties.secrets", taken)
    variables = props.get("environmentVariables", []) + props.get("secrets", [])
    total = sum(len(v["name"]) + 2 + len((v.get("value") or "").encode("utf-8")) for v in variables)
    if total > MAX_ENVIRONMENT_BYTES:
        # half of ARG_MAX: the rest is the command line's and the service's own variables'
        raise _bad(InvalidParameter, "properties.secrets",
                   "The properties 'properties.environmentVariables' and 'properties.secrets' must hold at most "
                   f"{MAX_ENVIRONMENT_BYTES} bytes of NAME=value together (half of Linux's ARG_MAX); got {total}.")
    _require_secret_values(props.get("secrets", []), "properties.secrets")
    for kind, reserved in (("inputDirectories", ()), ("outputDirectories", (STDOUTERR,))):
        ids: set[str] = set()
        for i, directory in enumerate(props.get(kind, [])):
            here = f"properties.{kind}[{i}].id"
            ident = directory["id"]
            if not _DIR_ID.match(ident):
                raise _bad(InvalidParameter, here,
                           f"The property '{here}' must contain only letters, digits and '_' (it names the variable "
                           f"AZ_BATCHAI_{'INPUT' if kind == 'inputDirectories' else 'OUTPUT'}_<id>); got {ident[:80]!r}.")
            if ident.upper() in ids or ident.lower() in reserved:
                why = "is reserved for the job's standard output and error" if ident.lower() in reserved else "is not unique"
                raise _bad(InvalidParameter, here, f"The property '{here}' {why}: {ident!r}.")
            ids.add(ident.upper())
    constraints = props.setdefault("constraints", {})
    wall = constraints.get("maxWallClockTime", "P7D")
    seconds = parse_duration(wall)
    if seconds is None or seconds <= 0:
        raise _bad(InvalidParameter, "properties.constraints.maxWallClockTime",
                   "The property 'properties.constraints.maxWallClockTime' must be a positive ISO 8601 duration "
                   f"such as 'P7D' or 'PT2H30M'; got {wall[:40]!r}.")
    constraints["maxWallClockTime"] = format_duration(seconds)
    private = split_secrets(props)
    return Parsed(props, private)


def parse_file_server_create(body: Any) -> Parsed:
    props = check(body, FILE_SERVER_CREATE)["properties"]
    size = lookup_vm_size(props["vmSize"])
    if size is None:
        raise _bad(InvalidParameter, "properties.vmSize",
                   "The property 'properties.vmSize' must be a known Azure VM size such as Standard_D2_v2, "
                   f"Standard_DS2_v2 or Standard_NC6; got {props['vmSize'][:80]!r}.")
    user = props["sshConfiguration"]["userAccountSettings"]
    if not user.get("adminUserPassword") and not user.get("adminUserSshPublicKey"):
        raise _bad(MissingRequiredProperty, "properties.sshConfiguration.userAccountSettings",
                   "The property 'properties.sshConfiguration.userAccountSettings' must give adminUserPassword or "
                   "adminUserSshPublicKey (or both).")
    private: dict[str, Any] = {}
    if "adminUserPassword" in user:
        private["adminUserPassword"] = user.pop("adminUserPassword")
    return Parsed(props, private, size)
