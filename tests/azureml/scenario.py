"""The exchanges of the tutorial on Azure ML, step by step, for the replay transport.

Each builder returns the requests azure-ai-ml 1.35.2 (and azure-mgmt-*/azure-storage-*) send
for one step of the tutorial, with the responses they get. Responses come from the recordings
where they have the exchange, else from the REST spec's examples, else are built here; the
``source`` of each says which, and what was changed in it (names, and fields that must reflect
what this test asked for, such as the scale settings).
"""
from __future__ import annotations

import copy
from typing import Any, Optional

from replay import (ANY_SEGMENT, JOB_MAPS, Exchange, MANAGEMENT_HOST, patched, recorded, recording, renamed,
                    spec_example)

SUB = "00000000-0000-0000-0000-000000000000"
RG = "batchai.horovod"
WS = "batchaidev"
CLUSTER = "nc6cluster"
ACCOUNT = "mystorageaccount"
SHARE = "myshare"
DATASTORE = "mystorageaccount_myshare"
EXPERIMENT = "cifar"
JOB = "cifar_distributed"
LOCATION = "eastus"
#: the admin user's public key the tutorial's cluster is created with
SSH_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDWm/4TTHMZdzZVJcob2aFRWDmIyJLxk028 tutorial@example"
WS_PATH = f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.MachineLearningServices/workspaces/{WS}"
COMPUTE_PATH = f"{WS_PATH}/computes/{CLUSTER}"

# azure-ai-ml 1.35.2's api-version per operation group
COMPUTES = "2023-08-01-preview"
WORKSPACES = DATASTORES = "2024-10-01-preview"
JOB_CREATE = "2025-01-01-preview"
JOB_GET = "2024-01-01-preview"
JOB_CANCEL = JOB_DELETE = ENVIRONMENTS = "2023-04-01-preview"
JOB_LIST = "2024-01-01-preview"

#: recorded names -> this test's names (recordings sanitise the scope to 000...0 / 00000)
SCOPE = {"00000000-0000-0000-0000-000000000": SUB, "/resourceGroups/00000": f"/resourceGroups/{RG}",
         "/workspaces/00000": f"/workspaces/{WS}", "Sanitized.azure.com": MANAGEMENT_HOST}
SPEC_SCOPE = {"00000000-1111-2222-3333-444444444444": SUB, "34adfa4f-cedf-4dc0-ba29-b6d1a69ab345": SUB,
              "workspace-1234": RG, "testrg123": RG, "testworkspace": WS, "workspaces123": WS,
              "compute123": CLUSTER}

COMPUTE_FILE = "compute__test_compute"
DATASTORE_FILE = "datastore__test_datastore.pyTestDatastoretest_file_store"
JOB_FILE = "command_job__test_command_job.pyTestCommandJobtest_command_job_with_dataset"
CANCEL_FILE = "command_job__test_command_job.pyTestCommandJobtest_command_job_dependency_label_resolution"
MPI_FILE = "command_job__test_command_job.pyTestCommandJobtest_command_job_builder"


def not_found(path: str, api_version: Optional[str], code: str, source: str) -> Exchange:
    """ARM's 404, in its error envelope (the recordings' tests never read a missing resource)."""
    return Exchange("GET", path, f"built:{source}", api_version=api_version, status=404,
                    response={"error": {"code": code, "message": f"{path.rsplit('/', 1)[-1]} was not found"}})


# -- workspace -------------------------------------------------------------------------------------
DISCOVERY_HOST = f"{LOCATION}.api.azureml.ms"


def workspace_get(api_version: str = WORKSPACES, why: str = "") -> list[Exchange]:
    example = spec_example("Workspace/get.json")
    body = renamed(example["responses"]["200"]["body"], SPEC_SCOPE)
    body = patched(body, {"location": LOCATION, "properties.discoveryUrl": f"https://{DISCOVERY_HOST}/discovery"})
    return [Exchange("GET", WS_PATH, "spec:Workspace/get.json (names, location and an https discoveryUrl set)"
                     + (f"; {why}" if why else ""), api_version=api_version, response=body)]


# -- cluster ---------------------------------------------------------------------------------------
RECORDED_COMPUTE = "test49208482942"
COMPUTE_NAMES = {**SCOPE, RECORDED_COMPUTE: CLUSTER}
VM_SIZE = "Standard_NC6s_v3"


def compute_get(index: int = 3) -> Exchange:
    """A compute GET of recording 1, as recorded: ``Standard_DS2_v2``, steady, auto-scaling 0..2,
    no nodes (the recorded test's compute, whatever this test asked for)."""
    entries = recording(COMPUTE_FILE)
    return recorded(entries, index, COMPUTE_FILE, names=COMPUTE_NAMES, api_version=COMPUTES)


def compute_get_resizing() -> Exchange:
    """The spec's compute GET example, as written: ``STANDARD_NC6`` upper-case, Resizing toward
    one node, no node counted yet."""
    body = renamed(spec_example("Compute/get/AmlCompute.json")["responses"]["200"]["body"], SPEC_SCOPE)
    return Exchange("GET", COMPUTE_PATH, "spec:Compute/get/AmlCompute.json (names only)", api_version=COMPUTES,
                    response=body)


def compute_get_creating() -> Exchange:
    """The compute while it is being created, as the service described it in recording 1's PUT
    response (``STANDARD_DS2_V2``, provisioningState Creating, null counts and allocation
    state), answering a GET."""
    entries = recording(COMPUTE_FILE)
    exchange = recorded(entries, 0, COMPUTE_FILE, names=COMPUTE_NAMES, api_version=COMPUTES)
    exchange.method, exchange.body, exchange.status, exchange.headers = "GET", None, 200, {}
    exchange.source += " (its response body, for a GET while Creating)"
    return exchange


#: what this test's PUT has that the recorded one lacked, and the other way round
COMPUTE_PUT_DIFFERENCES = dict(
    # The recording's compute had a description, a password and osType/enableNodePublicIp set by its test.
    missing_ok=("properties.description", "properties.properties.userAccountCredentials.adminUserPassword",
                "properties.properties.osType", "properties.properties.enableNodePublicIp",
                "properties.disableLocalAuth"),
    extra_ok=())


def cluster_create() -> list[Exchange]:
    entries = recording(COMPUTE_FILE)
    put = recorded(entries, 0, COMPUTE_FILE, names=COMPUTE_NAMES, api_version=COMPUTES, check=_fixed_size(2),
                   **COMPUTE_PUT_DIFFERENCES)
    return [
        not_found(COMPUTE_PATH, COMPUTES, "ResourceNotFound", "the compute does not exist yet"),
        *workspace_get(COMPUTES, "azure-ai-ml reads the workspace's location for a compute given none"),
        put,
        recorded(entries, 1, COMPUTE_FILE, names=COMPUTE_NAMES, api_version=COMPUTES,
                 query={"service": "new"}),
        recorded(entries, 2, COMPUTE_FILE, names=COMPUTE_NAMES, api_version=COMPUTES),
        compute_get(3),
        compute_get(4),
    ]


def _fixed_size(nodes: int) -> Any:
    def check(request: Any, body: Any) -> Optional[str]:
        props = body["properties"]["properties"]
        scale = props["scaleSettings"]
        if (scale["minNodeCount"], scale["maxNodeCount"]) != (nodes, nodes):
            return f"scaleSettings {scale}, expected min = max = {nodes}"
        if props["vmSize"] != VM_SIZE or props["vmPriority"] != "Dedicated":
            return f"vmSize/vmPriority {props['vmSize']}/{props['vmPriority']}, expected {VM_SIZE}/Dedicated"
        if not props["userAccountCredentials"]["adminUserSshPublicKey"].startswith("ssh-rsa "):
            return "no SSH public key for the admin user"
        return None
    return check


def list_nodes(*states: str) -> Exchange:
    example = spec_example("Compute/listNodes.json")["responses"]["200"]["body"]
    template = example["nodes"][0]
    nodes = [dict(template, nodeId=f"tvm-{i}", port=50000 + i, nodeState=state, runId=None)
             for i, state in enumerate(states)]
    return Exchange("POST", f"{COMPUTE_PATH}/listNodes",
                    "spec:Compute/listNodes.json (one node per state this step needs; no nextLink)",
                    api_version=COMPUTES, response={"nodes": nodes, "nextLink": None})


def cluster_ready() -> list[Exchange]:
    """Two status polls: the spec's compute, resizing; then recording 1's, steady."""
    return [compute_get_resizing(), compute_get(4)]


# -- file share ------------------------------------------------------------------------------------
RG_PATH = f"/subscriptions/{SUB}/resourcegroups/{RG}"
ACCOUNT_PATH = f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}"
FILE_HOST = f"{ACCOUNT}.file.core.windows.net"
#: the fake key of the datastore recording ("this is fake key")
ACCOUNT_KEY = "dGhpcyBpcyBmYWtlIGtleQ=="
STORAGE_WHY = ("the recordings hold no storage-account traffic; FileShare sends the same requests on "
               "every target (exercised against the local service in tests/sdk), so here they only answer")


def share_create(resources_version: str, storage_version: str) -> list[Exchange]:
    """Resource group, storage account, key and share (all built), then the datastore (recorded)."""
    group = {"id": RG_PATH, "name": RG, "location": LOCATION, "properties": {"provisioningState": "Succeeded"}}
    account = {"id": ACCOUNT_PATH, "name": ACCOUNT, "location": LOCATION, "kind": "StorageV2",
               "sku": {"name": "Standard_LRS"}, "properties": {"provisioningState": "Succeeded",
               "primaryEndpoints": {"file": f"https://{FILE_HOST}/", "blob": f"https://{ACCOUNT}.blob.core.windows.net/"}}}
    keys = {"keys": [{"keyName": "key1", "value": ACCOUNT_KEY, "permissions": "FULL"}]}
    return [
        datastore_missing(DATASTORE),
        Exchange("GET", RG_PATH, f"built:{STORAGE_WHY}", api_version=resources_version, response=group),
        Exchange("GET", ACCOUNT_PATH, f"built:{STORAGE_WHY}", api_version=storage_version, response=account),
        Exchange("POST", f"{ACCOUNT_PATH}/listKeys", f"built:{STORAGE_WHY}", api_version=storage_version,
                 response=keys),
        Exchange("PUT", f"/{SHARE}", f"built:{STORAGE_WHY}", host=FILE_HOST, query={"restype": "share"},
                 status=201, headers={"ETag": '"0x8D0"', "x-ms-version": "2025-01-05"}),
        *datastore_put(),
    ]


BLOB_STORE_FILE = "datastore__test_datastore.pyTestDatastoretest_blob_store_credential_less"
RECORDED_BLOB_STORE = "test_318669269601"


def datastore_missing(name: str) -> Exchange:
    """A datastore the workspace does not have: recording 10's GET after its DELETE (404,
    UserError "Could not find datastore", inner code NotFoundError)."""
    entries = recording(BLOB_STORE_FILE)
    return recorded(entries, 4, BLOB_STORE_FILE, names={**SCOPE, RECORDED_BLOB_STORE: name}, api_version=DATASTORES)


def datastore_put() -> list[Exchange]:
    entries = recording(DATASTORE_FILE)
    names = {**SCOPE, "test_180231763309": DATASTORE}
    # The recorded test's datastore had no description; ours says what registered it (the spec's
    # AzureFile example has one too).
    put = recorded(entries, 0, DATASTORE_FILE, names=names, api_version=DATASTORES, check=_datastore_body,
                   extra_ok=("properties.description",))
    put.response = patched(put.response, {"properties.accountName": ACCOUNT, "properties.fileShareName": SHARE})
    return [put]


def datastore_get(name: str = DATASTORE, *, storage: Optional[dict[str, str]] = None) -> Exchange:
    """A datastore as the workspace has it: recording 2's GET (an AzureFile datastore, account
    key), its sanitized account and its share renamed to this test's (``storage``: others)."""
    entries = recording(DATASTORE_FILE)
    storage = {"Sanitized": ACCOUNT, "testfileshare": SHARE} if storage is None else storage
    return recorded(entries, 1, DATASTORE_FILE, names={**SCOPE, "test_180231763309": name, **storage},
                    api_version=DATASTORES)


def blob_datastore_get(name: str, *, storage: Optional[dict[str, str]] = None) -> Exchange:
    """An AzureBlob datastore without credentials as the workspace has it (recording 10's GET);
    ``storage`` renames its sanitized account and its container."""
    entries = recording(BLOB_STORE_FILE)
    return recorded(entries, 1, BLOB_STORE_FILE, names={**SCOPE, RECORDED_BLOB_STORE: name, **(storage or {})},
                    api_version=DATASTORES)


def blob_datastore_put(name: str, account: str, container: str, credentials: str) -> Exchange:
    """Registering a blob container (recording 10's PUT, credentialsType None; with a key, the
    AccountKey credentials of recording 2's PUT)."""
    entries = recording(BLOB_STORE_FILE)
    exchange = recorded(entries, 0, BLOB_STORE_FILE,
                        names={**SCOPE, RECORDED_BLOB_STORE: name, "Sanitized": account, "testblob": container},
                        api_version=DATASTORES, query={"skipValidation": "true"}, extra_ok=("properties.description",))
    if credentials == "AccountKey":
        exchange.body["properties"]["credentials"] = recording(DATASTORE_FILE)[0]["RequestBody"]["properties"][
            "credentials"]
        exchange.source += f" (credentials: recording:{DATASTORE_FILE}#0's AccountKey)"

    def check(request: Any, body: Any) -> Optional[str]:
        props = body["properties"]
        sent = (props["datastoreType"], props["accountName"], props["containerName"],
                props["credentials"]["credentialsType"])
        return None if sent == ("AzureBlob", account, container, credentials) else f"datastore {sent}"

    exchange.check = check
    return exchange


def _datastore_body(request: Any, body: Any) -> Optional[str]:
    props = body["properties"]
    if (props["datastoreType"], props["accountName"], props["fileShareName"]) != ("AzureFile", ACCOUNT, SHARE):
        return f"datastore {props['datastoreType']} {props['accountName']}/{props['fileShareName']}"
    if props["credentials"] != {"credentialsType": "AccountKey",
                                "secrets": {"secretsType": "AccountKey", "key": ACCOUNT_KEY}}:
        return "the datastore does not carry the account's key"
    return None


def storage_api_versions() -> tuple[str, str]:
    """The api-versions the installed azure-mgmt-resource and azure-mgmt-storage send (setup.py
    allows a range of both)."""
    from azure.core.credentials import AccessToken
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient

    class _NoToken:
        def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
            raise AssertionError("no request is made")

    versions = [client(_NoToken(), SUB)._config.api_version  # type: ignore[operator]
                for client in (ResourceManagementClient, StorageManagementClient)]
    return versions[0], versions[1]


# -- job -------------------------------------------------------------------------------------------
JOB_PATH = f"{WS_PATH}/jobs/{JOB}"
RECORDED_JOB = "test_756573810826"
JOB_NAMES = {**SCOPE, RECORDED_JOB: JOB}


def environment_put() -> Exchange:
    """The anonymous environment azure-ai-ml registers for the job's image (its version is a
    hash of the definition). Recorded for a named environment with a conda file; here the image."""
    entries = recording(CANCEL_FILE)
    exchange = recorded(entries, 0, CANCEL_FILE, names=SCOPE, api_version=ENVIRONMENTS,
                        missing_ok=("properties.description", "properties.condaFile"),
                        check=_environment_image)
    exchange.path = f"{WS_PATH}/environments/CliV2AnonymousEnvironment/versions/{ANY_SEGMENT}"
    exchange.response = patched(exchange.response, {"properties.image": TUTORIAL_IMAGE, "properties.condaFile": None,
                                                    "properties.isAnonymous": True,
                                                    "properties.description": None})
    exchange.response["id"] = exchange.path
    exchange.headers = {}
    return exchange


TUTORIAL_IMAGE = "tensorflow/tensorflow:1.8.0-gpu"
ENV_WHY = ("no recording reads one environment version (recording 4 lists versions, recording 6 PUTs one "
           "twice): a GET of a version answers what its PUT answered, as ARM resources do -- recording 4's "
           "list GET holds its versions in exactly the shape of its PUT's answer")


def environment_missing(name: str, version: str = ANY_SEGMENT) -> Exchange:
    """GET of an environment version the workspace does not have: 404 in the envelope Azure ML
    answered a missing datastore with (recording 10's last GET), its message about the version."""
    exchange = datastore_missing("x")
    exchange.path = f"{WS_PATH}/environments/{name}/versions/{version}"
    exchange.api_version = ENVIRONMENTS
    exchange.response = patched(exchange.response, {"error.message": f"Could not find asset with ID {name}:{version}."})
    exchange.source = (f"built:the environment version does not exist yet ({ENV_WHY}; the 404 envelope of "
                       f"{exchange.source})")
    return exchange


def anonymous_image_version(image: str = TUTORIAL_IMAGE) -> str:
    """The version azure-ai-ml gives the anonymous environment of an image (a hash of it)."""
    from azure.ai.ml.entities import Environment
    return str(Environment(image=image).version)


def environment_image_get(image: str = TUTORIAL_IMAGE) -> Exchange:
    """GET of the anonymous environment of ``image``, which the workspace has: what
    :func:`environment_put` answers, as a GET's answer."""
    exchange = environment_put()
    version = anonymous_image_version(image)
    exchange.method, exchange.body, exchange.check, exchange.status = "GET", None, None, 200
    exchange.path = f"{WS_PATH}/environments/CliV2AnonymousEnvironment/versions/{version}"
    exchange.response = patched(exchange.response, {"properties.image": image, "name": version})
    exchange.response["id"] = exchange.path
    exchange.source = f"built:{ENV_WHY} ({exchange.source}'s answer, image {image})"
    return exchange


def environment_build_get(version: str, context_uri: str, dockerfile: str = "Dockerfile") -> Exchange:
    """GET of the package's environment version, which the workspace has: recording 6's answer
    to its PUT, at this version, naming ``context_uri`` and ``dockerfile``."""
    entries = recording(ENVIRONMENT_FILE)
    path = f"{WS_PATH}/environments/horovod-batchai-environment/versions/{version}"
    exchange = recorded(entries, 8, ENVIRONMENT_FILE, names=SCOPE, api_version=ENVIRONMENTS, body=None)
    exchange.method, exchange.path, exchange.status, exchange.headers = "GET", path, 200, {}
    exchange.response = patched(exchange.response, {"id": path, "name": version, "properties.build": {
        "contextUri": context_uri, "dockerfilePath": dockerfile}})
    exchange.source = f"built:{ENV_WHY} (recording:{ENVIRONMENT_FILE}#8's answer to its PUT)"
    return exchange


def _environment_image(request: Any, body: Any) -> Optional[str]:
    image = body["properties"].get("image")
    return None if image == TUTORIAL_IMAGE else f"environment image {image!r}, expected {TUTORIAL_IMAGE!r}"


# -- the shipped environment: a Docker build context instead of an image ----------------------------
ENVIRONMENT_FILE = "environment__test_environment"
UPLOAD_FILE = "command_job__test_command_job.pyTestCommandJobtest_command_job_with_inputs_with_datastore_param"
#: recording 6's workspace storage, where its build context went (kept as recorded)
CONTEXT_ACCOUNT = "amltest5899420437"
CONTEXT_CONTAINER = "azureml-blobstore-0bdd51b6-cd9c-4978-b870-99997b393b81"
CONTEXT_HOST = f"{CONTEXT_ACCOUNT}.blob.core.windows.net"
#: where this package's context goes: LocalUpload/<content hash>/<CONTEXT_NAME>/
CONTEXT_FOLDER = f"/{CONTEXT_CONTAINER}/LocalUpload/{ANY_SEGMENT}/horovod-batchai-environment"
LIST_SECRETS_BODY = {"expirableSecret": True, "expireAfterHours": 1}  # what 1.35.2 sends (recordings 3, 8)


class ContextUpload:
    """What the build context's upload sent: each blob's bytes by path, and where it went."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.metadata: dict[str, str] = {}
        self.folder: Optional[str] = None

    def uri(self) -> str:
        assert self.folder is not None, "the build context was never uploaded"
        return f"https://{CONTEXT_HOST}{self.folder}/"


def context_datastore() -> list[Exchange]:
    """The workspace's default blob datastore and its secret, read before the upload
    (recording 6, where the secret is the account key; 1.35.2 asks for an expirable one)."""
    entries = recording(ENVIRONMENT_FILE)
    return [recorded(entries, 0, ENVIRONMENT_FILE, names=SCOPE, api_version=DATASTORES),
            recorded(entries, 1, ENVIRONMENT_FILE, names=SCOPE, api_version=DATASTORES, body=LIST_SECRETS_BODY)]


def context_upload(upload: ContextUpload, files: list[str]) -> list[Exchange]:
    """A fresh upload (recording 6): HEAD the first file (404), PUT each file as a block blob with
    its MD5 and If-None-Match: *, then PUT the first file's metadata marking the upload complete."""
    entries = recording(ENVIRONMENT_FILE)
    first = sorted(files)[0]
    head = recorded(entries, 2, ENVIRONMENT_FILE, names={}, api_version=None, check=_account_key_signed)
    head.path = f"{CONTEXT_FOLDER}/{first}"
    puts = []
    for name in sorted(files):
        put = recorded(entries, 3, ENVIRONMENT_FILE, names={}, api_version=None, check=_blob_put(upload, name))
        put.path = f"{CONTEXT_FOLDER}/{name}"
        puts.append(put)
    done = recorded(entries, 7, ENVIRONMENT_FILE, names={}, api_version=None, query={"comp": "metadata"},
                    check=_completed(upload, first))
    done.path = f"{CONTEXT_FOLDER}/{first}"
    return [head, *puts, done]


def _account_key_signed(request: Any, body: Any) -> Optional[str]:
    auth = request.headers.get("Authorization", "")
    return None if auth.startswith(f"SharedKey {CONTEXT_ACCOUNT}:") else f"Authorization {auth[:20]!r}, expected SharedKey"


def _blob_put(upload: ContextUpload, name: str) -> Any:
    def check(request: Any, body: Any) -> Optional[str]:
        import base64
        import hashlib
        data = request.body or b""
        data = data if isinstance(data, bytes) else data.encode("utf-8") if isinstance(data, str) else b"".join(data)
        headers = request.headers
        if headers.get("x-ms-blob-type") != "BlockBlob" or headers.get("If-None-Match") != "*":
            return f"blob type {headers.get('x-ms-blob-type')}, If-None-Match {headers.get('If-None-Match')}"
        if data and headers.get("Content-MD5") != base64.b64encode(hashlib.md5(data).digest()).decode():
            return "Content-MD5 missing or wrong"
        upload.blobs[name] = data
        upload.folder = request.path_url.split("?")[0][:-len(name) - 1]
        return _account_key_signed(request, body)
    return check


def _completed(upload: ContextUpload, first: str) -> Any:
    def check(request: Any, body: Any) -> Optional[str]:
        meta = {k[len("x-ms-meta-"):]: v for k, v in request.headers.items() if k.lower().startswith("x-ms-meta-")}
        upload.metadata = meta
        if meta.get("upload_status") != "completed" or not request.path_url.split("?")[0].endswith("/" + first):
            return f"metadata {meta} on {request.path_url}"
        return None
    return check


def context_already_uploaded() -> list[Exchange]:
    """The datastore handing out a SAS, and an upload that completed earlier (recording 8:
    HEAD of the first file, 200 with upload_status=completed; HEAD of the legacy location, 404)."""
    entries = recording(UPLOAD_FILE)
    sas_only = _sas_only
    head = recorded(entries, 2, UPLOAD_FILE, names={}, api_version=None, check=sas_only)
    legacy = recorded(entries, 3, UPLOAD_FILE, names={}, api_version=None, check=sas_only)
    container = entries[2]["RequestUri"].split("/")[3]
    head.path = f"/{container}/LocalUpload/{ANY_SEGMENT}/horovod-batchai-environment/Dockerfile"
    legacy.path = f"/{container}/az-ml-artifacts/{ANY_SEGMENT}/horovod-batchai-environment/Dockerfile"
    return [recorded(entries, 0, UPLOAD_FILE, names=SCOPE, api_version=DATASTORES),
            recorded(entries, 1, UPLOAD_FILE, names=SCOPE, api_version=DATASTORES), head, legacy]


def _sas_only(request: Any, body: Any) -> Optional[str]:
    if "Authorization" in request.headers:
        return "a SAS request also carried an Authorization header"
    return None if "sig=" in (request.url or "") else "the datastore's SAS is missing from the request"


def environment_build_put(context_uri: Any) -> Exchange:
    """The environment registered for the uploaded build context, named after it and versioned by
    its content hash (recording 6's environment PUT: ``build: {contextUri, dockerfilePath}``; that
    one also had a description and tags)."""
    entries = recording(ENVIRONMENT_FILE)
    exchange = recorded(entries, 8, ENVIRONMENT_FILE, names=SCOPE, api_version=ENVIRONMENTS,
                        missing_ok=("properties.description", "properties.tags"),
                        check=lambda request, body: sent.append(request.path_url.split("?")[0]) or _environment_build(
                            body, context_uri()))
    exchange.path = f"{WS_PATH}/environments/horovod-batchai-environment/versions/{ANY_SEGMENT}"
    exchange.headers = {}
    sent: list[str] = []

    def echo(response: Any, body: Any) -> Any:  # the service echoes the definition it was given, at its path
        response["properties"]["build"] = body["properties"]["build"]
        response["id"], response["name"] = sent[-1], sent[-1].rsplit("/", 1)[-1]
        return response

    exchange.adapt = echo
    return exchange


def _environment_build(body: Any, context_uri: str) -> Optional[str]:
    props = body["properties"]
    if "image" in props:
        return f"the environment names an image ({props['image']!r}) as well as a build context"
    build = props.get("build") or {}
    if build.get("dockerfilePath") != "Dockerfile":
        return f"build.dockerfilePath {build.get('dockerfilePath')!r}, expected 'Dockerfile'"
    if build.get("contextUri") != context_uri:
        return f"build.contextUri {build.get('contextUri')!r}, expected the uploaded context {context_uri!r}"
    return None


class SubmittedJob:
    """What the job PUT sent: the service echoes the definition in every later GET of the job."""

    def __init__(self) -> None:
        self.sent: Optional[dict[str, Any]] = None

    def echo(self, response: Any, status: str) -> Any:
        assert self.sent is not None, "the job was never submitted"
        props = response["properties"]
        mine = self.sent["properties"]
        for key in ("command", "computeId", "displayName", "experimentName", "distribution", "environmentId",
                    "environmentVariables", "limits"):
            props[key] = mine.get(key)
        props["resources"] = {**(props.get("resources") or {}), **mine.get("resources", {})}
        props["properties"] = {**props.get("properties", {}), **mine.get("properties", {})}
        props["outputs"] = {**{k: dict(v, description=None, assetName=None) for k, v in mine.get("outputs", {}).items()},
                            "default": (props.get("outputs") or {}).get("default")}
        props["status"] = status
        return response


def job_put(submitted: SubmittedJob, name: str = JOB) -> Exchange:
    """The command job PUT (recording 3), expected to have the shape of that recorded request plus
    the MPI ``distribution`` and ``resources`` of recording 5's job, and one uri_folder output per
    mounted share (the shape of a recorded job output)."""
    entries = recording(JOB_FILE)
    names = {**SCOPE, RECORDED_JOB: name}
    expected = copy.deepcopy(renamed(entries[4]["RequestBody"], names))
    mpi = recording(MPI_FILE)[18]["RequestBody"]
    mpi = json_body(mpi)["properties"]
    expected["properties"]["distribution"] = mpi["distribution"]
    expected["properties"]["resources"] = mpi["resources"]
    expected["properties"]["properties"] = mpi["properties"]  # a map of strings (recording 3's was empty)
    output = {k: v for k, v in entries[4]["ResponseBody"]["properties"]["outputs"]["default"].items() if v is not None}
    expected["properties"]["outputs"] = {"share": output}
    expected["properties"]["environmentVariables"] = {}

    def adapt(response: Any, body: Any) -> Any:
        submitted.sent = body
        return submitted.echo(response, "Starting")

    exchange = recorded(entries, 4, JOB_FILE, names=names, api_version=JOB_CREATE, body=expected,
                        free_form=JOB_MAPS, adapt=adapt, check=_job_body,
                        # The recorded job read a dataset (inputs) with an AMLToken identity; this one
                        # mounts the share as an output and leaves the identity to the service.
                        # job.json sets no shmSize (recording 5's job did).
                        missing_ok=("properties.inputs", "properties.identity", "properties.resources.shmSize"))
    exchange.source += " (+ recording 5's Mpi distribution; definition echoed back as the service does)"
    return exchange


INPUTS_FILE = "command_job__test_command_job.pyTestCommandJobtest_command_job_with_inputs_with_datastore_param"


def blob_job_put(submitted: SubmittedJob, check: Any) -> Exchange:
    """A job mounting blob containers: job_put's expected shape, with its inputs shaped as
    recording 8's datastore-path input (``mode``, ``uri``, ``jobInputType``)."""
    exchange = job_put(submitted)
    recorded_input = recording(INPUTS_FILE)[4]["RequestBody"]["properties"]["inputs"]["test1"]
    exchange.body["properties"]["inputs"] = {"input": recorded_input}
    exchange.missing_ok = tuple(m for m in exchange.missing_ok if m != "properties.inputs")
    exchange.check = check
    exchange.source += f" (+ recording:{INPUTS_FILE}#4's input shape)"
    return exchange


def json_body(value: Any) -> Any:
    import json
    return json.loads(value) if isinstance(value, str) else value


def _job_body(request: Any, body: Any) -> Optional[str]:
    props = body["properties"]
    if props["distribution"] != {"distributionType": "Mpi", "processCountPerInstance": 1}:
        return f"distribution {props['distribution']}, expected Mpi with 1 process per instance"
    if props["resources"].get("instanceCount") != 2:
        return f"instanceCount {props['resources'].get('instanceCount')}, expected 2"
    if not props["computeId"].endswith(f"/computes/{CLUSTER}") or props["experimentName"] != EXPERIMENT:
        return f"computeId/experimentName {props['computeId']}/{props['experimentName']}"
    (output,) = props["outputs"].values()
    if (output["uri"], output["mode"]) != (f"azureml://datastores/{DATASTORE}/paths/", "ReadWriteMount"):
        return f"share output {output}, expected the datastore mounted read-write"
    if f"$AZ_BATCHAI_JOB_MOUNT_ROOT/{SHARE}/cifar/cifar_cnn_distributed.py" not in props["command"]:
        return "the command does not run the tutorial's script from the share"
    return None


def job_get(submitted: SubmittedJob, status: str, name: str = JOB) -> Exchange:
    entries = recording(JOB_FILE)
    exchange = recorded(entries, 5, JOB_FILE, names={**SCOPE, RECORDED_JOB: name}, api_version=JOB_GET,
                        adapt=lambda response, body: submitted.echo(response, status))
    exchange.source += f" (status {status}; definition as submitted)"
    return exchange


# -- logs: run history + blob storage (no recording has them: built from azure-ai-ml's behaviour) --
API_HOST = f"{LOCATION}.api.azureml.ms"
LOG_HOST = "wsstoragebatchaidev.blob.core.windows.net"
LOG_PATH = f"/azureml/ExperimentRun/dcid.{JOB}/user_logs/std_log_process_0.txt"
LOG_WHY = ("no recording reads logs; azure-ai-ml 1.35.2 finds the run-history service through the "
           "workspace's discoveryUrl and reads the logs' SAS links from the run's details -- UNVERIFIED")
#: a SAS link as run history hands out (expiry far ahead, so the stream never renews it here)
LOG_URL = f"https://{LOG_HOST}{LOG_PATH}?sv=2019-07-07&sr=b&sp=r&se=2099-01-01T00%3A00%3A00Z&sig=c2lnbmF0dXJl"


def discovery() -> list[Exchange]:
    """The workspace (for its discoveryUrl), then the discovery document (its 'api' host)."""
    urls = {key: f"https://{API_HOST}" for key in ("api", "catalog", "experimentation", "history", "hyperdrive",
                                                   "labeling", "modelmanagement", "pipelines")}
    return [*workspace_get(WORKSPACES, "read for its discoveryUrl"),
            Exchange("GET", "/discovery", f"built:{LOG_WHY}", host=API_HOST, response=dict(urls, studio="https://ml.azure.com"))]


def run_details(status: str, *, error: Optional[dict[str, Any]] = None) -> Exchange:
    path = (f"/history/v1.0/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.MachineLearningServices"
            f"/workspaces/{WS}/runs/{JOB}/details")
    body: dict[str, Any] = {"runId": JOB, "status": status, "target": CLUSTER,
                            "logFiles": {"user_logs/std_log_process_0.txt": LOG_URL,
                                         "user_logs/std_log_process_1.txt": LOG_URL.replace("_0.txt", "_1.txt"),
                                         "system_logs/lifecycler/execution-wrapper.log": LOG_URL.replace(
                                             "user_logs/std_log_process_0.txt", "system_logs/lifecycler/execution-wrapper.log")}}
    if error is not None:
        body["error"] = {"error": error}
    return Exchange("GET", path, f"built:{LOG_WHY} (fields of azure-ai-ml's runhistory RunDetails model)",
                    host=API_HOST, api_version="v1.0", response=body)


def blob_properties(size: int) -> Exchange:
    return Exchange("HEAD", LOG_PATH, f"built:{LOG_WHY} (Get Blob Properties)", host=LOG_HOST,
                    headers={"Content-Length": str(size), "x-ms-blob-type": "AppendBlob", "ETag": '"0x8D1"',
                             "Last-Modified": "Mon, 23 Nov 2026 06:00:00 GMT", "x-ms-version": "2025-01-05"},
                    check=_no_credential_but_sas)


def blob_range(log: bytes, start: int, end: int) -> Exchange:
    """Get Blob of bytes start..end-1 (of a log that is ``log`` long so far)."""
    wanted = f"bytes={start}-{end - 1}"

    def check(request: Any, body: Any) -> Optional[str]:
        sent = request.headers.get("x-ms-range") or request.headers.get("Range")
        return _no_credential_but_sas(request, body) or (None if sent == wanted else f"range {sent}, expected {wanted}")

    return Exchange("GET", LOG_PATH, f"built:{LOG_WHY} (Get Blob, ranged)", host=LOG_HOST, status=206,
                    content=log[start:end], check=check,
                    headers={"Content-Range": f"bytes {start}-{end - 1}/{len(log)}", "x-ms-blob-type": "AppendBlob",
                             "ETag": '"0x8D1"', "x-ms-version": "2025-01-05"})


def blob_whole(log: bytes) -> Exchange:
    """A whole-blob download: azure-storage-blob asks for its first chunk as a range."""
    def check(request: Any, body: Any) -> Optional[str]:
        sent = request.headers.get("x-ms-range") or ""
        return _no_credential_but_sas(request, body) or (None if sent.startswith("bytes=0-") else f"range {sent!r}")

    return Exchange("GET", LOG_PATH, f"built:{LOG_WHY} (Get Blob)", host=LOG_HOST, status=206, content=log,
                    check=check, headers={"Content-Range": f"bytes 0-{len(log) - 1}/{len(log)}",
                                          "x-ms-blob-type": "AppendBlob", "ETag": '"0x8D1"', "x-ms-version": "2025-01-05"})


def _no_credential_but_sas(request: Any, body: Any) -> Optional[str]:
    if "Authorization" in request.headers:
        return "a SAS link was sent with an Authorization header as well"
    return None if "sig=" in (request.url or "") else "the SAS signature is missing from the request"


# -- cancel, resize, delete ------------------------------------------------------------------------
def job_cancel(job_name: str) -> list[Exchange]:
    """POST cancel (recording 4: 202 + Location), then its operation result (202, then 200)."""
    entries = recording(CANCEL_FILE)
    names = {**SCOPE, "test_781131835858": job_name}
    return [recorded(entries, i, CANCEL_FILE, names=names, api_version=JOB_CANCEL,
                     query={} if i == 18 else {"api-version": JOB_CANCEL}) for i in (18, 19, 20)]


def job_delete(job_name: str) -> Exchange:
    return Exchange("DELETE", f"{WS_PATH}/jobs/{job_name}", "spec:Job/delete.json (200)", api_version=JOB_DELETE)


def cluster_resize(nodes: int) -> list[Exchange]:
    """GET (the compute as azure-ai-ml reads it), PUT with min = max = nodes (recording 1's second
    PUT; answered as recorded: Creating, null counts), its operation status (twice), the LRO's
    final GET, this package's GET, then the resize poller's wait for the cluster to be steady at
    its new size: one poll of the compute (all as recorded)."""
    entries = recording(COMPUTE_FILE)
    put = recorded(entries, 5, COMPUTE_FILE, names=COMPUTE_NAMES, api_version=COMPUTES,
                   check=_scale_to(nodes), missing_ok=COMPUTE_PUT_DIFFERENCES["missing_ok"],
                   # read back from the GET, azure-ai-ml sends the compute's location and the
                   # subnet/identity fields it holds, which the recorded create lacked
                   extra_ok=("properties.properties.subnet", "properties.computeLocation", "identity", "tags"))
    return [compute_get(3), put,
            recorded(entries, 6, COMPUTE_FILE, names=COMPUTE_NAMES, api_version=COMPUTES, query={"service": "new"}),
            recorded(entries, 7, COMPUTE_FILE, names=COMPUTE_NAMES, api_version=COMPUTES),
            compute_get(8), compute_get(9), compute_get(9)]


def _scale_to(nodes: int) -> Any:
    def check(request: Any, body: Any) -> Optional[str]:
        scale = body["properties"]["properties"]["scaleSettings"]
        return None if (scale["minNodeCount"], scale["maxNodeCount"]) == (nodes, nodes) else f"scaleSettings {scale}"
    return check


def cluster_delete() -> list[Exchange]:
    """DELETE (recording 1's last entry: 202 + Azure-AsyncOperation); the recording stops there,
    so its status (Succeeded) is built in the shape of the create's recorded status."""
    entries = recording(COMPUTE_FILE)
    delete = recorded(entries, 10, COMPUTE_FILE, names=COMPUTE_NAMES, api_version=COMPUTES,
                      query={"underlyingResourceAction": "Delete"})
    status_url = delete.headers["Azure-AsyncOperation"]
    from urllib.parse import urlparse
    done = Exchange("GET", urlparse(status_url).path,
                    f"built:recording:{COMPUTE_FILE}#2's shape (the delete's own status was not recorded)",
                    api_version=COMPUTES, query={"service": "new"}, response={"status": "Succeeded", "percentComplete": 100.0})
    return [delete, done]


def job_submit(submitted: SubmittedJob, name: str = JOB) -> list[Exchange]:
    """Submitting a job: is the name free (404), the image's environment, the job."""
    return [not_found(f"{WS_PATH}/jobs/{name}", JOB_GET, "UserError", "the job does not exist yet"),
            environment_missing("CliV2AnonymousEnvironment", anonymous_image_version()), environment_put(),
            job_put(submitted, name)]


def job_submit_built(submitted: SubmittedJob, upload: ContextUpload, files: list[str], name: str = JOB) -> list[Exchange]:
    """Submitting a job whose spec names no image: is the name free (404), the default datastore
    and its secret, the build context's upload, the environment built from it, the job."""
    return [not_found(f"{WS_PATH}/jobs/{name}", JOB_GET, "UserError", "the job does not exist yet"),
            environment_missing("horovod-batchai-environment"),
            *context_datastore(), *context_upload(upload, files), environment_build_put(upload.uri),
            job_put(submitted, name)]


def job_list(*jobs: tuple[str, str], api_version: str) -> Exchange:
    """GET jobs: the spec example's list envelope, holding recording 3's job (renamed, per experiment)."""
    entries = recording(JOB_FILE)
    values = []
    for name, experiment in jobs:
        job = renamed(entries[5]["ResponseBody"], {**SCOPE, RECORDED_JOB: name})
        job["properties"]["experimentName"] = experiment
        job["properties"]["status"] = "Completed"
        values.append(job)
    return Exchange("GET", f"{WS_PATH}/jobs", f"spec:Job/CommandJob/list.json (envelope, no nextLink) with "
                    f"recording:{JOB_FILE}#5's job", api_version=api_version, response={"value": values})


def steady_cluster(target: Any, nodes: int = 2) -> Any:
    """The tutorial's cluster as a create, get or wait_until_ready left it: steady with ``nodes``
    idle nodes, its record what the service said (no request is made)."""
    from horovod_batchai import AllocationState, GpuCluster, Workspace
    from horovod_batchai._models.records import ClusterRecord
    from horovod_batchai._models.states import ClusterStatus, NodeStateCounts
    status = ClusterStatus(name=CLUSTER, resource_group=RG, workspace=WS, vm_size=VM_SIZE,
                           allocation_state=AllocationState.STEADY, current_node_count=nodes,
                           node_state_counts=NodeStateCounts(idle=nodes), target_node_count=nodes,
                           auto_scale=None, provisioning_state="succeeded")
    record = ClusterRecord(name=CLUSTER, id=COMPUTE_PATH, vm_size=VM_SIZE, maximum_node_count=nodes,
                           mounts=(), status=status)
    return GpuCluster(Workspace(target, RG, WS), CLUSTER, _record=record)


# -- the job's stdouterr directory on its share: datastore (recorded) + Files data plane (built) ----
#: the tutorial job's $AZ_BATCHAI_STDOUTERR_DIR in the share: stdOutErrPathPrefix
#: $AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar, then <job>/stdouterr
STDOUTERR_PATH = f"cifar/{JOB}/stdouterr"
FILES_WHY = ("no recording reads a file share; shaped as the Files REST API answers List Directories and "
             "Files and Get File, which azure-storage-file-share parses")
#: the storage service version of Files answers (azure-storage-file-share reads none of it)
FILES_VERSION = "2025-01-05"


def datastore_secret(index: int = 2, file: str = DATASTORE_FILE) -> Exchange:
    """listSecrets of the share's datastore with ``expirableSecret``: recording 2's answer (an
    account SAS for blob and file, ``srt=co``, ``sp=rcuwdl``); ``index``/``file`` of another
    recording's answer (recording 6's: the account key, as older services answer)."""
    entries = recording(file)
    exchange = recorded(entries, index, file, names={**SCOPE, "test_180231763309": DATASTORE},
                        api_version=DATASTORES, body=LIST_SECRETS_BODY)
    exchange.path = f"{WS_PATH}/datastores/{DATASTORE}/listSecrets"
    if file != DATASTORE_FILE:
        exchange.source += f" (its answer, for datastore {DATASTORE})"
    return exchange


def recorded_sas() -> str:
    return recording(DATASTORE_FILE)[2]["ResponseBody"]["sasToken"]


def share_listing(path: str, files: dict[str, int], directories: tuple[str, ...] = (), *,
                  signed: str = "sas") -> Exchange:
    """List Directories and Files of ``path`` in the share: ``files`` (name -> size) and
    ``directories``; ``signed`` says how the request must be authorised ('sas': the datastore's SAS
    token and no Authorization header; 'key': SharedKey with the account key)."""
    from xml.sax.saxutils import escape, quoteattr
    entries = "".join(f"<File><Name>{escape(n)}</Name><Properties><Content-Length>{s}</Content-Length></Properties>"
                      "</File>" for n, s in files.items())
    entries += "".join(f"<Directory><Name>{escape(n)}</Name><Properties /></Directory>" for n in directories)
    xml = ('<?xml version="1.0" encoding="utf-8"?>'
           f'<EnumerationResults ServiceEndpoint="https://{FILE_HOST}/" ShareName={quoteattr(SHARE)} '
           f'DirectoryPath={quoteattr(path)}><Entries>{entries}</Entries><NextMarker /></EnumerationResults>')
    return Exchange("GET", _directory_path(path), f"built:{FILES_WHY} (List Directories and Files)", host=FILE_HOST,
                    query={"restype": "directory", "comp": "list"}, content=xml.encode("utf-8"),
                    headers={"Content-Type": "application/xml", "x-ms-version": FILES_VERSION},
                    check=_signed(signed))


def _directory_path(path: str) -> str:
    """azure-storage-file-share sends a directory's path as one segment, its '/' as %2F."""
    from urllib.parse import quote
    return f"/{SHARE}/{quote(path, safe='')}"


def share_directory_missing(path: str) -> Exchange:
    """List Directories and Files of a directory the job has not made yet: 404 ResourceNotFound."""
    xml = ('<?xml version="1.0" encoding="utf-8"?><Error><Code>ResourceNotFound</Code>'
           "<Message>The specified resource does not exist.</Message></Error>")
    return Exchange("GET", _directory_path(path), f"built:{FILES_WHY} (404 ResourceNotFound)", host=FILE_HOST,
                    query={"restype": "directory", "comp": "list"}, status=404, content=xml.encode("utf-8"),
                    headers={"Content-Type": "application/xml", "x-ms-error-code": "ResourceNotFound",
                             "x-ms-version": FILES_VERSION}, check=_signed("sas"))


def share_file(path: str, data: bytes, *, signed: str = "sas") -> Exchange:
    """Get File, whole: azure-storage-file-share asks for its first chunk as a range (206)."""
    def check(request: Any, body: Any) -> Optional[str]:
        sent = request.headers.get("x-ms-range") or ""
        problem = _signed(signed)(request, body)
        return problem or (None if sent.startswith("bytes=0-") else f"range {sent!r}, expected one from byte 0")

    return Exchange("GET", f"/{SHARE}/{path}", f"built:{FILES_WHY} (Get File, ranged)", host=FILE_HOST, status=206,
                    content=data, check=check,
                    headers={"Content-Range": f"bytes 0-{len(data) - 1}/{len(data)}", "x-ms-type": "File",
                             "ETag": '"0x8D2"', "Last-Modified": "Mon, 23 Nov 2026 06:00:00 GMT",
                             "x-ms-version": FILES_VERSION})


def _signed(how: str) -> Any:
    def check(request: Any, body: Any) -> Optional[str]:
        auth = request.headers.get("Authorization", "")
        if how == "key":
            return None if auth.startswith(f"SharedKey {ACCOUNT}:") else f"Authorization {auth[:20]!r}, expected SharedKey"
        if auth:
            return "a request signed with the datastore's SAS also carried an Authorization header"
        return None if "sig=000000" in (request.url or "") else "the datastore's SAS is missing from the request"
    return check


def stdouterr(files: Optional[dict[str, int]] = None, directories: tuple[str, ...] = (), *,
              directory: str = "") -> list[Exchange]:
    """The share part of a listing of the job's output files: its datastore (recording 2's GET),
    its secret (recording 2's listSecrets), then the directory (``files`` None: not made yet)."""
    path = "/".join(p for p in (STDOUTERR_PATH, directory) if p)
    listing = share_directory_missing(path) if files is None else share_listing(path, files, directories)
    return [datastore_get(), datastore_secret(), listing]


def image_environment() -> list[Exchange]:
    """The job image's anonymous environment, which the workspace does not have yet: read (404),
    then registered by azure-ai-ml with the job."""
    return [environment_missing("CliV2AnonymousEnvironment", anonymous_image_version()), environment_put()]


# -- a blob container, read before its datastore is registered (no recording has one) ---------------
CONTAINER_WHY = ("no recording reads a blob container (Azure ML registers datastores with skipValidation=true); "
                 "shaped as the Blob REST API documents Get Container Properties (GET <container>?restype=container: "
                 "200 with ETag, Last-Modified, x-ms-lease-*, x-ms-has-*; 404 with x-ms-error-code "
                 "ContainerNotFound and an XML Error body; Azurite, the local service's blob plane, answers "
                 "'ContainerNotFound', 'The specified container does not exist.' too), which azure-storage-blob "
                 "parses")
#: the storage service version of Blob answers (azure-storage-blob reads none of it)
BLOB_VERSION = "2025-01-05"


def container_properties(account: str, container: str, *, signed: str) -> Exchange:
    """Get Container Properties of a container that exists; ``signed``: how the request must be
    authorised ('bearer': the caller's token, for an identity-based mount; 'key': SharedKey with
    the account key; 'sas': the mount's SAS token and no Authorization header)."""
    return Exchange("GET", f"/{container}", f"built:{CONTAINER_WHY} (200)", host=f"{account}.blob.core.windows.net",
                    query={"restype": "container"}, check=_container_signed(account, signed),
                    headers={"ETag": '"0x8DCB1"', "Last-Modified": "Mon, 23 Nov 2026 06:00:00 GMT",
                             "x-ms-lease-status": "unlocked", "x-ms-lease-state": "available",
                             "x-ms-has-immutability-policy": "false", "x-ms-has-legal-hold": "false",
                             "x-ms-version": BLOB_VERSION})


def container_missing(account: str, container: str, *, signed: str) -> Exchange:
    """Get Container Properties of a container the account does not have: 404 ContainerNotFound."""
    xml = ('<?xml version="1.0" encoding="utf-8"?><Error><Code>ContainerNotFound</Code>'
           "<Message>The specified container does not exist.</Message></Error>")
    return Exchange("GET", f"/{container}", f"built:{CONTAINER_WHY} (404)", host=f"{account}.blob.core.windows.net",
                    query={"restype": "container"}, status=404, content=xml.encode("utf-8"),
                    check=_container_signed(account, signed),
                    headers={"Content-Type": "application/xml", "x-ms-error-code": "ContainerNotFound",
                             "x-ms-version": BLOB_VERSION})


def _container_signed(account: str, how: str) -> Any:
    def check(request: Any, body: Any) -> Optional[str]:
        auth = request.headers.get("Authorization", "")
        if how == "bearer":
            return None if auth == "Bearer replay-token" else f"Authorization {auth[:20]!r}, expected the caller's token"
        if how == "key":
            return None if auth.startswith(f"SharedKey {account}:") else f"Authorization {auth[:20]!r}, expected SharedKey"
        if auth:
            return "a request signed with the mount's SAS also carried an Authorization header"
        return None if "sig=" in (request.url or "") else "the mount's SAS is missing from the request"
    return check


def datastore_delete(name: str) -> Exchange:
    """Removing a datastore (recording 10's DELETE: 200, empty body)."""
    entries = recording(BLOB_STORE_FILE)
    return recorded(entries, 3, BLOB_STORE_FILE, names={**SCOPE, RECORDED_BLOB_STORE: name}, api_version=DATASTORES)


# -- MLflow tracking (no recording has it: built from MLflow's REST API and Azure ML's tracking URI) --
MLFLOW_HOST = f"{LOCATION}.api.azureml.ms"
#: the workspace's mlFlowTrackingUri, in the shape Azure ML documents and azure-ai-ml hands on as is
TRACKING_URI = f"azureml://{MLFLOW_HOST}/mlflow/v1.0{WS_PATH}"
#: where MLflow's REST API 2.0 is for it: the same path over https (what azureml-mlflow sends to)
MLFLOW_API = f"/mlflow/v1.0{WS_PATH}/api/2.0/mlflow"
MLFLOW_WHY = ("no recording has MLflow traffic; built from MLflow's REST API 2.0 (mlflow/protos/service.proto: "
              "runs/get, metrics/get-history and their JSON) at the https form of the workspace's mlFlowTrackingUri, "
              "the run id being the job's name -- UNVERIFIED against the real service")


def _bearer(request: Any, body: Any) -> Optional[str]:
    """The caller's credential signs it (the replay's FakeCredential)."""
    if request.headers.get("Authorization") != "Bearer replay-token":
        return "no bearer token of the caller's credential"
    return None


def mlflow_workspace_get() -> list[Exchange]:
    """The workspace, read once for its mlFlowTrackingUri (the spec's example lacks the property:
    it is set here in the shape Azure ML gives it)."""
    (exchange,) = workspace_get(WORKSPACES, "read for its mlFlowTrackingUri")
    exchange.response = patched(exchange.response, {"properties.mlFlowTrackingUri": TRACKING_URI})
    exchange.source += "; properties.mlFlowTrackingUri set (built)"
    return [exchange]


def mlflow_run_get(run_id: str = JOB, *, metrics: Optional[dict[str, float]] = None,
                   params: Optional[dict[str, str]] = None, status: str = "FINISHED") -> Exchange:
    run = {"info": {"run_id": run_id, "run_uuid": run_id, "experiment_id": "6b3f0a8e-0000-4000-8000-000000000001",
                    "run_name": run_id, "status": status, "start_time": 1764300000000,
                    "artifact_uri": f"azureml://experiments/{EXPERIMENT}/runs/{run_id}/artifacts",
                    "lifecycle_stage": "active"},
           "data": {"metrics": [{"key": k, "value": v, "timestamp": 1764300001000, "step": 0}
                                for k, v in (metrics or {}).items()],
                    "params": [{"key": k, "value": v} for k, v in (params or {}).items()],
                    "tags": [{"key": "mlflow.runName", "value": run_id}]}}
    return Exchange("GET", f"{MLFLOW_API}/runs/get", f"built:{MLFLOW_WHY} (runs/get)", host=MLFLOW_HOST,
                    query={"run_id": run_id}, response={"run": run}, check=_bearer)


def mlflow_history(key: str, points: list[tuple[int, float]], run_id: str = JOB) -> Exchange:
    """One page of a metric's history: ``points`` as (step, value)."""
    metrics = [{"key": key, "value": value, "timestamp": 1764300001000 + i, "step": step}
               for i, (step, value) in enumerate(points)]
    return Exchange("GET", f"{MLFLOW_API}/metrics/get-history", f"built:{MLFLOW_WHY} (metrics/get-history)",
                    host=MLFLOW_HOST, query={"run_id": run_id, "metric_key": key}, response={"metrics": metrics},
                    check=_bearer)
