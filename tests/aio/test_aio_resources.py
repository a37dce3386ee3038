"""horovod_batchai.aio against the real local service over HTTPS: workspaces, experiments and
clusters through Microsoft's aio clients, their AsyncLROPollers, and closing."""
from __future__ import annotations

import asyncio
import pickle
from pathlib import Path
from typing import Any

import pytest
from azure.core.pipeline.policies import SansIOHTTPPolicy
from azure.core.polling import AsyncLROPoller

from horovod_batchai import (AllocationState, ClusterStatus, HorovodJob, InvalidSpecError, NotFoundError,
                             TargetError, WaitTimeoutError)
from horovod_batchai.aio import Experiment, FileShare, GpuCluster, Job, Target, Workspace
from horovod_batchai.local import ServiceInfo

from aio_support import (ACCOUNT, RG, SSH_KEY, cancel_after, forget_earlier_polling_threads, other_tasks,
                         polling_threads, run)


class CountRequests(SansIOHTTPPolicy):  # type: ignore[type-arg]
    def __init__(self) -> None:
        self.sent: list[str] = []

    def on_request(self, request: Any) -> None:
        self.sent.append(f"{request.http_request.method} {request.http_request.url.split('?')[0]}")


def test_workspaces_and_experiments_create_get_list_delete(service: Any) -> None:
    async def scenario(target: Target) -> None:
        poller = await Workspace.begin_create(target, RG, "batchaidev", location="eastus")
        assert isinstance(poller, AsyncLROPoller)
        ws = await poller.result(timeout=60)
        assert isinstance(ws, Workspace) and ws.location == "eastus" and poller.done()
        assert await Workspace.create(target, RG, "batchaidev") == ws  # get-or-create
        assert (await Workspace.get(target, RG, "batchaidev")).location == "eastus"
        assert await Workspace.list(target, RG) == [ws] and ws in await Workspace.list(target)

        experiment = await ws.create_experiment("cifar")
        assert isinstance(experiment, Experiment) and experiment.id.endswith("/experiments/cifar")
        assert await ws.get_experiment("cifar") == experiment
        assert await ws.list_experiments() == [experiment]
        await experiment.delete(timeout=60)
        with pytest.raises(NotFoundError):
            await ws.get_experiment("cifar")

        deleting = await ws.begin_delete(delete_resource_group=True)
        token = deleting.continuation_token()
        # the token resumes the same operation in another poller (here: in the same process)
        await (await ws.begin_delete(delete_resource_group=True, continuation_token=token)).result(60)
        await deleting.result(60)
        with pytest.raises(NotFoundError):
            await Workspace.get(target, RG, "batchaidev")
        await ws.delete(timeout=60)  # already gone: succeeds

    run(service, scenario)


def test_clusters_create_wait_resize_and_delete(service: Any) -> None:
    forget_earlier_polling_threads()

    async def scenario(target: Target) -> None:
        ws = await Workspace.create(target, RG, "batchaidev", location="eastus")
        poller = await ws.begin_create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=1,
                                               admin_user_name="demo", ssh_public_key=SSH_KEY)
        assert isinstance(poller, AsyncLROPoller)
        cluster = await poller.result(60)
        assert isinstance(cluster, GpuCluster) and cluster.vm_size == "Standard_NC6"
        seen: list[ClusterStatus] = []
        ready = await cluster.wait_until_ready(timeout=120, on_status=seen.append)
        assert ready.is_ready and ready.node_state_counts.idle == 1 and seen[-1] == ready
        assert await ws.list_clusters() == [cluster] and (await ws.get_cluster("nc6cluster")).maximum_node_count == 1
        assert [login.port for login in await cluster.remote_login_info()] != []

        # A resize poller: its timeout raises and stops polling; result() again resumes it.
        resizing = await cluster.begin_resize(2)
        with pytest.raises(WaitTimeoutError):
            await resizing.result(timeout=0.01)
        assert not resizing.done() and not other_tasks() and not polling_threads()
        status = await resizing.result(timeout=120)
        assert status.allocation_state is AllocationState.STEADY and status.node_state_counts.idle == 2
        assert (await cluster.auto_scale(0, 2, timeout=120)).auto_scale == (0, 2)
        assert (await cluster.resize(0, timeout=120)).current_node_count == 0
        await cluster.delete(timeout=60)
        with pytest.raises(NotFoundError):
            await cluster.refresh()

    run(service, scenario)


def test_async_with_closes_every_client(service: Any) -> None:
    async def scenario() -> Any:
        async with Target.local(service=service) as target:
            ws = await Workspace.create(target, RG, "batchaidev", location="eastus")
            await ws.create_experiment("cifar")
            clients = list(target._connection._clients.values())
            session = target._connection._session  # the one aiohttp session the target's clients share
            assert clients and session is not None and not session.closed
            # a generated client holds its pipeline client; the Batch AI JSON pipeline is one
            assert all(getattr(c, "_client", c)._pipeline._transport.session is session for c in clients)
            assert any(not hasattr(c, "_client") for c in clients)  # the JSON pipeline was among them
        assert target._connection._clients == {} and target._connection._session is None
        return session
    assert asyncio.run(scenario()).closed  # closed on leaving the block


def test_a_share_opens_a_new_client_after_its_target_was_closed(service: Any, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"x" * 100)

    async def scenario() -> None:
        target = Target.local(service=service)
        share = await FileShare.create(target, RG, "storageacct1", "myshare", location="eastus")
        await share.upload_file(tmp_path / "a.txt", "a.txt", progress=False)
        first = share._service
        await target.close()  # closes the share's client too; the target may be used again
        assert [i.name for i in await share.list()] == ["a.txt"]
        assert share._service is not first and share._service is not None
        await target.close()

    asyncio.run(scenario())


def test_polling_false_and_a_share_deleted_through_its_poller(service: Any) -> None:
    async def scenario(target: Target) -> None:
        ws = await Workspace.create(target, RG, "batchaidev", location="eastus")
        accepted = await ws.begin_create_cluster("quick", vm_size="Standard_NC6", target_node_count=1,
                                                 admin_user_name="demo", ssh_public_key=SSH_KEY, polling=False)
        assert accepted.done() and (await accepted.result(0)).name == "quick"
        resumed = await ws.begin_create_cluster("quick", continuation_token=accepted.continuation_token(),
                                                polling_interval=0.1)
        assert (await resumed.result(60)).vm_size == "Standard_NC6"
        with pytest.raises(InvalidSpecError) as caught:
            await ws.begin_create_experiment("cifar", polling_interval=0)
        assert caught.value.field == "polling_interval"

        share = await FileShare.create(target, RG, ACCOUNT, "goner", location="eastus")
        deleting = await share.begin_delete()
        assert deleting.done() and await deleting.result(0) is None
        with pytest.raises(NotFoundError):
            await FileShare.get(target, RG, ACCOUNT, "goner")

    run(service, scenario)


def test_cancelling_a_poller_stops_its_requests(service: Any) -> None:
    forget_earlier_polling_threads()
    counter = CountRequests()

    async def scenario() -> None:
        async with Target.local(service=service, per_call_policies=[counter]) as target:
            ws = await Workspace.create(target, RG, "batchaidev", location="eastus")
            cluster = await ws.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=0,
                                              admin_user_name="demo", ssh_public_key=SSH_KEY)
            resizing = await cluster.begin_resize(2)
            await cancel_after(0.3, resizing.result(), counter.sent, quiet_s=1.0)  # four poll intervals
            assert not other_tasks() and not polling_threads()
            assert (await resizing.result(120)).node_state_counts.idle == 2  # and it can be resumed

    asyncio.run(scenario())


def test_bad_input_is_refused_before_any_request(tmp_path: Path) -> None:
    offline = ServiceInfo("https://127.0.0.1:9", tmp_path / "none.pem", tmp_path, 0)

    async def scenario() -> None:
        async with Target.local(service=offline) as target:
            with pytest.raises(InvalidSpecError, match="workspace"):
                await Workspace.create(target, RG, "bad name!")
            with pytest.raises(InvalidSpecError, match="timeout"):
                await Workspace.create(target, RG, "batchaidev", timeout=-1)
            ws = Workspace(target, RG, "batchaidev")
            with pytest.raises(InvalidSpecError, match="target_node_count"):
                await GpuCluster(ws, "c").begin_resize(-1)
            with pytest.raises(InvalidSpecError, match="spec"):
                await ws.begin_create_cluster("c", spec="nc6")  # type: ignore[arg-type]
            share = FileShare(target, RG, "mystorageaccount", "myshare")
            (tmp_path / "x.py").write_text("print(1)")
            with pytest.raises(InvalidSpecError, match="max_concurrency"):
                await share.upload_file(tmp_path / "x.py", "x.py", max_concurrency=0)
            with pytest.raises(InvalidSpecError, match="max_concurrency"):
                await share.download_directory("tree", tmp_path / "out", max_concurrency="4")  # type: ignore[arg-type]
            for made in (target, ws, share, Job(Experiment(ws, "exp"), "job")):
                with pytest.raises(TargetError, match="aio Target .* is not pickled"):
                    pickle.dumps(made)

    asyncio.run(scenario())


def test_from_id_gives_back_each_resource(service: Any, tmp_path: Path) -> None:
    async def scenario(target: Target) -> None:
        ws = await Workspace.create(target, RG, "batchaidev", location="eastus")
        cluster = await ws.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=1,
                                          admin_user_name="demo", ssh_public_key=SSH_KEY)
        experiment = await ws.create_experiment("cifar")
        share = await FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
        (tmp_path / "hello.py").write_text("print('hello')\n")
        await share.upload_file(tmp_path / "hello.py", "scripts/hello.py", progress=False)
        spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/hello.py", mounts=[await share.mount()])
        job = await experiment.submit("hello", spec, cluster=cluster)

        again = await Workspace.from_id(target, ws.id)
        assert isinstance(again, Workspace) and again == ws and again.location == "eastus"  # fetched
        found = await GpuCluster.from_id(target, cluster.id.replace("/clusters/", "/Clusters/"))
        assert isinstance(found, GpuCluster) and found == cluster and found.vm_size == "Standard_NC6"
        assert await Experiment.from_id(target, experiment.id) == experiment
        assert (await FileShare.from_id(target, share.id)).share_name == "myshare"
        rebuilt = await Job.from_id(target, job.id)
        assert isinstance(rebuilt, Job) and rebuilt == job and rebuilt.experiment == experiment
        assert rebuilt.spec.script == spec.script  # fetched
        assert isinstance(rebuilt.experiment.workspace, Workspace)  # its parents are aio ones too
        with pytest.raises(NotFoundError):
            await Job.from_id(target, job.id.replace("/jobs/hello", "/jobs/gone"))
        await job.wait(timeout=120)

    run(service, scenario)


_SUB = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/"


@pytest.mark.parametrize("kind, bad, problem", [
    (Job, "cifar_distributed", "is not the id of a job on a local target"),
    (Job, _SUB + "Microsoft.BatchAI/workspaces/ws/clusters/c", "is not the id of a job"),
    (GpuCluster, _SUB + "Microsoft.MachineLearningServices/workspaces/ws/computes/c",
     "where the form has 'Microsoft.BatchAI'"),
    (Workspace, _SUB.replace("00000000-0000-0000-0000-000000000000", "11111111-2222-3333-4444-555555555555")
     + "Microsoft.BatchAI/workspaces/ws", "is in subscription '11111111-2222-3333-4444-555555555555'"),
    (Experiment, _SUB + "Microsoft.BatchAI/workspaces/ws/experiments/bad name!", "names the experiment 'bad name!'"),
    (FileShare, _SUB + "Microsoft.Storage/storageAccounts/acct123/fileServices/default/shares/",
     "is not the id of a file share"),
    (Job, 42, "42 is not a resource id"),
])
def test_a_bad_id_is_refused_as_the_sync_api_refuses_it(tmp_path: Path, kind: Any, bad: Any, problem: str) -> None:
    import horovod_batchai
    offline = ServiceInfo("https://127.0.0.1:9", tmp_path / "none.pem", tmp_path, 0)  # refuses connections

    async def refused() -> InvalidSpecError:
        async with Target.local(service=offline) as target:
            with pytest.raises(InvalidSpecError) as caught:
                await kind.from_id(target, bad)
            return caught.value
    error = asyncio.run(refused())
    assert error.field == "id" and problem in error.problem
    with horovod_batchai.Target.local(service=offline) as sync_target:
        with pytest.raises(InvalidSpecError) as caught:
            getattr(horovod_batchai, kind.__name__).from_id(sync_target, bad)
    assert str(caught.value) == str(error)  # the same words as the sync API's


@pytest.mark.parametrize("name", ["Workspace", "Experiment", "GpuCluster", "FileShare", "Job"])
def test_from_id_refuses_the_other_sides_target(tmp_path: Path, name: str) -> None:
    import horovod_batchai
    offline = ServiceInfo("https://127.0.0.1:9", tmp_path / "none.pem", tmp_path, 0)
    some_id = _SUB + "Microsoft.BatchAI/workspaces/ws"

    async def scenario() -> None:
        async with Target.local(service=offline) as target:
            with pytest.raises(InvalidSpecError) as caught:
                getattr(horovod_batchai, name).from_id(target, some_id)  # an aio target to a sync class
            assert caught.value.field == "target"
            assert "a horovod_batchai.aio.Target is not a horovod_batchai.Target" in caught.value.problem
            with horovod_batchai.Target.local(service=offline) as sync_target:
                with pytest.raises(InvalidSpecError) as caught:
                    await getattr(horovod_batchai.aio, name).from_id(sync_target, some_id)
            assert "a horovod_batchai.Target is not a horovod_batchai.aio.Target" in caught.value.problem
            assert caught.value.valid_form.startswith("a horovod_batchai.aio.Target (")
            with pytest.raises(InvalidSpecError, match="str 'local' is not a horovod_batchai.aio.Target"):
                await getattr(horovod_batchai.aio, name).from_id("local", some_id)

    asyncio.run(scenario())


#: the classes horovod_batchai.aio mirrors (Target is built another way: it wraps a sync one)
MIRRORED = ("Workspace", "Experiment", "GpuCluster", "FileShare", "Job", "Sweep", "TensorBoard")

#: public members of the sync classes that the aio ones leave out by design
LEFT_OUT = {
    # deprecated doors, kept for compatibility in the sync API only: aio has the one door of each
    "Experiment.create", "Experiment.get", "Experiment.list",
    "GpuCluster.get", "GpuCluster.list",
    "Job.get", "Job.list",
    # a notebook's display, which holds the cell until the job ends (docs/service.rst says why)
    "Job.watch", "Sweep.watch",
}

#: aio methods that are not coroutines: a stream is iterated with ``async for``; resume() makes no request
NOT_COROUTINES = {"Job.stream", "Sweep.resume", "ClientSweep.resume"}


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_async_classes_have_every_public_member_of_the_sync_ones() -> None:
    import inspect

    import horovod_batchai
    from horovod_batchai import aio
    missing, not_awaited = [], []
    for name in MIRRORED:
        sync_class, async_class = getattr(horovod_batchai, name), getattr(aio, name)
        missing += sorted(f"{name}.{member}" for member in _public(sync_class) - _public(async_class)
                          if f"{name}.{member}" not in LEFT_OUT)
        for member in _public(async_class):
            found = inspect.getattr_static(async_class, member)
            function = found.__func__ if isinstance(found, (classmethod, staticmethod)) else found
            if (inspect.isfunction(function) and not inspect.iscoroutinefunction(function)
                    and f"{name}.{member}" not in NOT_COROUTINES):
                not_awaited.append(f"{name}.{member}")
    assert not missing, f"public members of horovod_batchai missing from horovod_batchai.aio: {missing}"
    assert not not_awaited, f"aio methods that are not coroutines: {not_awaited}"
    # the list of what is left out names only what the sync API has
    assert {m for m in LEFT_OUT if not hasattr(getattr(horovod_batchai, m.split(".")[0]), m.split(".")[1])} == set()


def test_the_async_methods_take_the_sync_ones_arguments() -> None:
    """The same names, kinds and defaults, but for what differs by design: ``stop`` (an async
    wait is cancelled instead), a wait's fake clock, and ``terminate_on_cancel``; and the same
    options still taken by position for one release (with a DeprecationWarning)."""
    import inspect

    import horovod_batchai
    from horovod_batchai import aio
    by_design = {"stop", "clock", "sleep", "terminate_on_cancel"}
    differ = []
    for name in MIRRORED:
        sync_class, async_class = getattr(horovod_batchai, name), getattr(aio, name)
        for method in sorted(_public(sync_class) & _public(async_class)):
            members = [getattr(c, method) for c in (sync_class, async_class)]
            if not all(callable(m) for m in members):
                continue
            shapes = [[(p.name, p.kind, p.default) for p in inspect.signature(m).parameters.values()
                       if p.name not in by_design] for m in members]
            deprecated = [getattr(m, "_positional_options", ()) for m in members]
            if shapes[0] != shapes[1] or deprecated[0] != deprecated[1]:
                differ.append(f"{name}.{method}")
    assert not differ, f"arguments differ between horovod_batchai and horovod_batchai.aio: {differ}"


def test_without_aiohttp_the_first_call_says_which_extra_to_install(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``import horovod_batchai.aio`` needs no aiohttp; its first request does, and says so before
    anything starts (no local service is started for a request that cannot be sent)."""
    import sys

    from horovod_batchai import MissingDependencyError
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # as if the aio extra were not installed

    async def scenario() -> None:
        async with Target.local(state_dir=tmp_path / "state") as target:
            with pytest.raises(MissingDependencyError, match=r"pip install 'horovod-batchai\[aio\]'"):
                await Workspace.create(target, RG, "batchaidev", location="eastus")
            with pytest.raises(MissingDependencyError, match="aiohttp"):
                await FileShare.get(target, RG, ACCOUNT, "myshare")
    asyncio.run(scenario())
    assert not (tmp_path / "state").exists()


def test_creating_an_existing_cluster_at_another_scale_sets_it_from_the_loop_too(service: Any) -> None:
    """The same operation as the sync API's (its second request runs when the poller's result is
    awaited)."""
    async def scenario(target: Target) -> None:
        ws = await Workspace.create(target, RG, "batchaidev", location="eastus")
        cluster = await ws.create_cluster("again", vm_size="Standard_NC6", target_node_count=0,
                                          admin_user_name="demo", ssh_public_key=SSH_KEY)
        assert cluster.maximum_node_count == 0
        again = await ws.create_cluster("again", vm_size="Standard_NC6", target_node_count=1,
                                        admin_user_name="demo", ssh_public_key=SSH_KEY)
        assert again.maximum_node_count == 1 and (await again.status()).target_node_count == 1

    run(service, scenario)
