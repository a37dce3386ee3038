"""Helpers of the aio tests: each test runs its scenario with ``asyncio.run``, on an aio
``Target`` built inside the loop against the test's own local service."""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

import pytest

from horovod_batchai.aio import FileShare, GpuCluster, Target, Workspace

RG = "batchai.horovod"
ACCOUNT = "mystorageaccount"
SSH_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 test@example"

T = TypeVar("T")


def run(service: Any, scenario: Callable[[Target], Awaitable[T]]) -> T:
    """``scenario(target)`` on a fresh event loop, the target closed afterwards."""
    async def main() -> T:
        async with Target.local(service=service) as target:
            return await scenario(target)
    return asyncio.run(main())


async def setup_jobs(target: Target, tmp_path: Path, scripts: dict[str, str], *,
                     nodes: int = 1) -> tuple[Workspace, GpuCluster, FileShare]:
    """A workspace, a ready cluster of ``nodes`` nodes and the share ``myshare`` holding
    ``scripts`` (name -> text) under ``scripts/``."""
    ws = await Workspace.create(target, RG, "batchaidev", location="eastus")
    cluster = await ws.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=nodes,
                                      admin_user_name="demo", ssh_public_key=SSH_KEY)
    share = await FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
    for name, text in scripts.items():
        (tmp_path / name).write_text(text)
        await share.upload_file(tmp_path / name, f"scripts/{name}", progress=False)
    await cluster.wait_until_ready(timeout=120)
    return ws, cluster, share


#: poller threads some earlier test of the same process left (a sync ``--no-wait`` of the CLI's
#: polls on, in its own thread, until its operation ends): only the ones started since count
_EARLIER: set[threading.Thread] = set()


def forget_earlier_polling_threads() -> None:
    _EARLIER.clear()
    _EARLIER.update(t for t in threading.enumerate() if t.name.startswith("LROPoller"))


def polling_threads() -> list[str]:
    """azure-core's poller threads alive (a sync poller polls on one), but those alive before the
    test began. The loop's executor threads are not counted: they idle between calls (aiohttp
    resolves names there); whether anything still polls is seen in the requests the service gets
    (the tests count them)."""
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("LROPoller") and t not in _EARLIER)


def other_tasks() -> set["asyncio.Task[Any]"]:
    """Tasks of the running loop other than the one asking."""
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()}


async def cancel_after(seconds: float, awaitable: Awaitable[Any], sent: list[str], *, quiet_s: float = 1.0) -> None:
    """Await ``awaitable`` in a task, cancel it after ``seconds``, and check that no request
    (``sent``: a request counter's list) goes out in the ``quiet_s`` seconds after the
    cancellation reached the caller: the polling stopped at once."""
    task = asyncio.ensure_future(awaitable)
    await asyncio.sleep(seconds)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    count = len(sent)
    await asyncio.sleep(quiet_s)
    assert len(sent) == count, sent[count:]
