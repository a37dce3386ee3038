"""References that cross processes: targets, workspaces, experiments, clusters, jobs, shares and
specs pickle without credentials, keys, clients or locks, and work in a freshly spawned process
against the real local service; every resource comes back from its ARM id with ``from_id``."""
from __future__ import annotations

import multiprocessing
import pickle
import sys
from dataclasses import replace
import threading
from pathlib import Path
from typing import Any

import pytest
from azure.core.pipeline.policies import SansIOHTTPPolicy

from horovod_batchai import (AzureBlobMount, AzureFileShareMount, ClusterSpec, ContainerRegistry, ExecutionState, Experiment,
                             FileShare, GpuCluster, HorovodBatchAIError, HorovodJob, InvalidSpecError, Job, SetupTask,
                             Target, TargetError, UnmanagedMount, Workspace)
from horovod_batchai.local import LocalService
from sdk_support import ACCOUNT, RG, SSH_KEY

pytestmark = pytest.mark.slow

PRINTER = """\
import sys
print("hello from", sys.argv[1], flush=True)
print("and to stderr", sys.argv[1], file=sys.stderr, flush=True)
"""
PASSWORD = "Pickle-Pa55word!"


def _in_child(payload: bytes, tmp: str) -> dict[str, Any]:
    """Runs in a spawned process: unpickle the references and use each against the service."""
    target, ws, cluster, experiment, job, share, spec = pickle.loads(payload)
    out: dict[str, Any] = {"same_target": all(o is target for o in (ws.target, cluster.workspace.target,
                                                                      job.target, share.target))}
    try:
        job.status
    except HorovodBatchAIError as err:
        out["unfetched"] = str(err)
    out["state"] = job.refresh().execution_state.value
    out["stdout_tail"] = job.stdout_tail()
    out["stderr_tail"] = job.stderr_tail()
    out["location"] = ws.refresh().location
    out["vm_size"] = cluster.refresh().vm_size
    out["jobs"] = [j.name for j in experiment.list_jobs()]
    out["script"] = share.download_file("scripts/printer.py", Path(tmp) / "printer.py", progress=False).read_text()
    # the key comes from listKeys in this process; the spec gets it from the share here
    second = experiment.submit("from_child", spec.replace(arguments="child").with_storage(share), cluster=cluster)
    out["child_job"] = "".join(second.stream("stdout.txt"))
    out["child_state"] = second.wait(timeout=300).execution_state.value
    out["child_job_id"] = second.id
    target.close()
    return out


def _child_main(payload: bytes, tmp: str, results: Any) -> None:
    try:
        results.put(("ok", _in_child(payload, tmp)))
    except BaseException as err:  # noqa: BLE001 -- handed back to the test
        results.put(("error", f"{type(err).__name__}: {err}"))


def _secrets_of(target: Target, share: FileShare, job: Job) -> dict[str, str]:
    """Every secret the parent holds that a pickle could have carried."""
    found = {f"account key {k.key_name}": k.value
             for k in target.storage().storage_accounts.list_keys(RG, ACCOUNT).keys_property}
    found["bearer token"] = target.credential().get_token("https://management.azure.com/.default").token
    for f in job.list_output_files():
        if f.download_url:
            found[f"sas of {f.name}"] = f.download_url.split("sig=", 1)[1].split("&", 1)[0]
    found["admin password"] = PASSWORD
    return found


def test_references_work_in_a_spawned_process(service: LocalService, tmp_path: Path) -> None:
    target = Target.local(service=service)
    ws = Workspace.create(target, RG, "batchaidev", location="eastus")
    cluster = ws.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=1, admin_user_name="demo",
                                admin_password=PASSWORD)
    share = FileShare.create(target, RG, ACCOUNT, "myshare")
    script = tmp_path / "printer.py"
    script.write_text(PRINTER)
    share.upload_file(script, "scripts/printer.py", progress=False)
    cluster.wait_until_ready(timeout=300)
    experiment = ws.create_experiment("handover")
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/printer.py", arguments="parent",
                      mounts=(share.mount(),), environment_variables={"MODE": "demo"})
    job = experiment.submit("from_parent", spec, cluster=cluster)
    job.wait(timeout=300)

    payload = pickle.dumps((target, ws, cluster, experiment, job, share, job.spec))
    # what the calls return pickles too -- except a SAS link
    values = (job.status, cluster.status(), share.list("scripts"), ws.usages())
    assert pickle.loads(pickle.dumps(values)) == values
    listed = job.list_output_files()
    with pytest.raises(InvalidSpecError, match="output_file.download_url: holds a secret"):
        pickle.dumps(listed)
    assert "sig=" not in str(pickle.loads(pickle.dumps([replace(f, download_url=None) for f in listed])))
    for name, secret in _secrets_of(target, share, job).items():
        assert secret.encode() not in payload, f"the {name} is in the pickle"
    assert b"sig=" not in payload and b"Bearer" not in payload

    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_child_main, args=(payload, str(tmp_path), results))
    child.start()
    try:
        status, out = results.get(timeout=600)
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    assert status == "ok", out
    assert out["same_target"]
    assert "has not been fetched yet" in out["unfetched"]
    assert out["state"] == ExecutionState.SUCCEEDED.value
    assert out["stdout_tail"] == "hello from parent"
    assert out["stderr_tail"].splitlines()[-1] == "and to stderr parent"
    assert out["location"] == "eastus" and out["vm_size"] == "Standard_NC6"
    assert out["jobs"] == ["from_parent"]
    assert out["script"] == PRINTER
    assert out["child_job"] == "hello from child\n" and out["child_state"] == ExecutionState.SUCCEEDED.value
    # what the child made is here, and it is the same job by id
    made = Job.from_id(target, out["child_job_id"])
    assert made.experiment == experiment and made.execution_state is ExecutionState.SUCCEEDED
    assert made.stdout_tail() == "hello from child"
    target.close()


def test_from_id_gives_back_each_resource(target: Target, workspace: Workspace, cluster: GpuCluster,
                                          share: FileShare) -> None:
    experiment = workspace.create_experiment("cifar")
    assert Workspace.from_id(target, workspace.id) == workspace
    assert Workspace.from_id(target, workspace.id).location == "eastus"
    assert GpuCluster.from_id(target, cluster.id).vm_size == "Standard_NC6"
    assert Experiment.from_id(target, experiment.id) == experiment
    assert FileShare.from_id(target, share.id).share_name == "myshare"
    assert share.id.endswith(f"/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}/fileServices/default/shares/myshare")
    # ARM's fixed segments are case-insensitive
    assert GpuCluster.from_id(target, cluster.id.replace("/clusters/", "/Clusters/")) == cluster


@pytest.mark.parametrize("kind, bad, problem", [
    (Job, "cifar_distributed", "is not the id of a job on a local target"),
    (Job, "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.BatchAI/"
          "workspaces/ws/clusters/c", "is not the id of a job"),
    (GpuCluster, "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/"
                 "Microsoft.MachineLearningServices/workspaces/ws/computes/c", "where the form has 'Microsoft.BatchAI'"),
    (Workspace, "/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg/providers/Microsoft.BatchAI/"
                "workspaces/ws", "is in subscription '11111111-2222-3333-4444-555555555555'"),
    (Experiment, "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.BatchAI/"
                 "workspaces/ws/experiments/bad name!", "names the experiment 'bad name!'"),
    (FileShare, "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Storage/"
                "storageAccounts/acct123/fileServices/default/shares/", "is not the id of a file share"),
    (Job, 42, "42 is not a resource id"),
])
def test_a_bad_id_is_refused_naming_it_and_the_valid_form(offline_target: Target, kind: Any, bad: Any,
                                                          problem: str) -> None:
    with pytest.raises(InvalidSpecError) as caught:
        kind.from_id(offline_target, bad)  # its service refuses connections: nothing was sent
    assert caught.value.field == "id" and problem in caught.value.problem
    assert caught.value.valid_form.startswith("/subscriptions/<subscription>/resourceGroups/<resource group>/")


def test_azureml_ids_have_their_own_form() -> None:
    target = Target.azureml("00000000-0000-0000-0000-000000000000", "rg", "ws", credential=object())  # type: ignore[arg-type]
    batchai_job = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.BatchAI/"
                   "workspaces/ws/experiments/e/jobs/j")
    with pytest.raises(InvalidSpecError) as caught:
        Job.from_id(target, batchai_job)
    assert caught.value.valid_form.endswith("/Microsoft.MachineLearningServices/workspaces/<workspace>/jobs/<job>")
    with pytest.raises(InvalidSpecError) as caught:
        GpuCluster.from_id(target, batchai_job)
    assert caught.value.valid_form.endswith("/workspaces/<workspace>/computes/<cluster>")


def test_a_fetched_spec_pickles() -> None:
    spec = HorovodJob.from_file(Path(__file__).resolve().parents[2] / "examples" / "job.json")
    spec = spec.replace(environment_variables={"A": "1"})
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and dict(again.environment_variables) == {"A": "1"}
    with pytest.raises(TypeError):
        again.environment_variables["A"] = "2"  # still read-only
    # errors about fields read from the file still name the file's properties
    with pytest.raises(InvalidSpecError, match=r"properties.mountVolumes.azureFileShares\[0\]"):
        again.check_resolved()
    cluster = ClusterSpec(vm_size="Standard_NC6", admin_user_name="demo", ssh_public_key=SSH_KEY,
                          setup_task=SetupTask(command_line="echo hi", std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/x",
                                               environment_variables={"B": "2"}))
    assert pickle.loads(pickle.dumps(cluster)) == cluster


def test_a_spec_holding_a_secret_is_not_pickled() -> None:
    key = "c2VjcmV0LWFjY291bnQta2V5"
    mount = AzureFileShareMount.for_share(ACCOUNT, "myshare", account_key=key)
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py", mounts=(mount,),
                      secrets={"API_TOKEN": "tok-123456"}, container_image="myregistry.azurecr.io/train:1",
                      container_registry=ContainerRegistry(server_url="myregistry.azurecr.io", username="me",
                                                           password="registry-pw"))
    with pytest.raises(InvalidSpecError) as caught:
        pickle.dumps(spec)
    assert caught.value.field == "container_registry.password, mounts[0].account_key, secrets (API_TOKEN)"
    assert "without_secrets()" in caught.value.valid_form
    for secret in (key, "tok-123456", "registry-pw"):
        assert secret not in str(caught.value)
    with pytest.raises(InvalidSpecError, match="mount.account_key"):
        pickle.dumps(mount)
    blob = AzureBlobMount(account_name=ACCOUNT, container_name="data", relative_mount_path="data",
                          sas_token="sv=2024&sig=c2Fz")
    with pytest.raises(InvalidSpecError, match="mount.sas_token") as caught:
        pickle.dumps(blob)
    assert "c2Fz" not in str(caught.value)
    assert pickle.loads(pickle.dumps(replace(blob, sas_token=None))).sas_token is None

    bare = spec.without_secrets()
    payload = pickle.dumps(bare)
    assert not any(s.encode() in payload for s in (key, "tok-123456", "registry-pw"))
    again = pickle.loads(payload)
    assert again == bare and again.needs_storage and again.secrets == {}
    assert again.with_storage(account_name=ACCOUNT, account_key=key).mounts[0].account_key == key

    with pytest.raises(InvalidSpecError) as caught:
        pickle.dumps(ClusterSpec(vm_size="Standard_NC6", admin_user_name="demo", admin_password=PASSWORD))
    assert caught.value.field == "admin_password"
    command = UnmanagedMount(mount_command="mount -t cifs //h/s -o password=hunter2", relative_mount_path="x")
    with pytest.raises(InvalidSpecError) as caught:
        pickle.dumps(HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/x/a.py", mounts=(command,)).without_secrets())
    assert caught.value.field == "mounts[0].mount_command"


class LockedPolicy(SansIOHTTPPolicy):  # type: ignore[type-arg]
    """A pipeline policy of the caller's that holds a lock: it cannot travel to another process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()


class CallerCredential:
    """A credential of the caller's own, holding a secret."""

    secret = "client-secret-value"

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        raise AssertionError("no request is made")


def test_a_target_pickles_without_its_credential(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AZURE_CLIENT_SECRET", "env-secret-value")
    sub = "00000000-0000-0000-0000-000000000000"
    azure = Target.azure(sub, retry_total=3)
    payload = pickle.dumps(azure)
    assert b"env-secret-value" not in payload
    again = pickle.loads(payload)
    assert (again.kind, again.subscription_id, again.client_options) == ("azure", sub, {"retry_total": 3})
    assert type(again.credential()).__name__ == "DefaultAzureCredential"
    aml = pickle.loads(pickle.dumps(Target.azureml(sub, "rg", "ws")))
    assert (aml.kind, aml.resource_group, aml.workspace) == ("azureml", "rg", "ws")

    for target in (Target.azure(sub, credential=CallerCredential()),  # type: ignore[arg-type]
                   Target.azureml(sub, "rg", "ws", credential=CallerCredential())):  # type: ignore[arg-type]
        with pytest.raises(TargetError, match="credential of the caller's is not pickled"):
            pickle.dumps(target)
        with pytest.raises(TargetError):  # nor anything that refers to it
            pickle.dumps(Workspace(target, "rg", "ws"))
    with pytest.raises(TargetError, match=r"client option proxies= holds a user name or password") as caught:
        pickle.dumps(Target.azure(sub, proxies={"https": "http://me:proxy-pw@proxy.example.com:3128"}))
    assert "proxy-pw" not in str(caught.value)
    proxied = pickle.loads(pickle.dumps(Target.azure(sub, proxies={"https": "http://proxy.example.com:3128"})))
    assert proxied.client_options == {"proxies": {"https": "http://proxy.example.com:3128"}}
    with pytest.raises(TargetError, match=r"client option per_call_policies= \(list\) cannot be pickled"):
        pickle.dumps(Target.local(state_dir=tmp_path, per_call_policies=[LockedPolicy()]))
    runtime = Path(sys.executable)
    local = pickle.loads(pickle.dumps(Target.local(state_dir=tmp_path / "state", node_runtime=runtime)))
    assert local._connection.local_state_dir() == (tmp_path / "state").absolute()
    assert local._connection.node_runtime == Target.local(node_runtime=runtime)._connection.node_runtime
    # no state directory given: the one this process would use, not the other process's default
    monkeypatch.setenv("HOROVOD_BATCHAI_STATE_DIR", str(tmp_path / "from-env"))
    payload = pickle.dumps(Target.local())
    monkeypatch.setenv("HOROVOD_BATCHAI_STATE_DIR", str(tmp_path / "elsewhere"))
    assert pickle.loads(payload)._connection.local_state_dir() == tmp_path / "from-env"


def test_errors_cross_processes_without_the_response(target: Target, workspace: Workspace) -> None:
    """A process pool hands a worker's exception back pickled: ours keep their message and
    attributes, and leave the response (and the request, with its Authorization header) behind."""
    from azure.core.exceptions import ResourceNotFoundError
    from horovod_batchai import JobFailedError, NotFoundError, ServiceErrorDetail, StoppedError
    with pytest.raises(NotFoundError) as caught:
        workspace.get_cluster("missing")
    payload = pickle.dumps(caught.value)
    token = target.credential().get_token("https://management.azure.com/.default").token
    assert token.encode() not in payload and b"Bearer" not in payload
    again = pickle.loads(payload)
    assert isinstance(again, ResourceNotFoundError) and str(again) == str(caught.value)
    assert (again.status_code, again.resource, again.response) == (404, caught.value.resource, None)
    for err in (InvalidSpecError("node_count", "0 is not a positive integer", "1 or more", source="job.json"),
                JobFailedError("j", exit_code=3, errors=[ServiceErrorDetail("Code", "text")], stderr_tail="boom"),
                StoppedError("waiting for job 'j' was stopped", last_state="running")):
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is type(err) and str(again) == str(err) and vars(again) == vars(err)
