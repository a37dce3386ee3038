"""How far one ``submit`` travels through the SDK: the files it enters, the steps between them,
and (for the aio API) how often it crosses between ``horovod_batchai.aio`` and the rest.

A sync and an aio ``Experiment.submit`` of the same job, on a local service started for the
run, are followed with ``sys.setprofile`` (every thread): a step is a call from one SDK file into
another (the local service and Microsoft's libraries are not counted, nor calls inside a file, nor a
generator or coroutine resumed: only its first entry is a call).
The figures say how many rooms one operation walks through; the ratio is aio's steps over sync's
(1.0: the aio twin walks the same path as the sync class)::

    python benchmarks/bench_call_paths.py
"""
from __future__ import annotations

import asyncio
import inspect
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import horovod_batchai
from horovod_batchai import FileShare, HorovodJob, Target, Workspace
from horovod_batchai import aio
from horovod_batchai.local import ensure_running, stop_daemon

SDK = Path(horovod_batchai.__file__).parent
RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
NOT_COUNTED = (SDK / "local", SDK / "cli")
RG = "bench.paths"


def sdk_file(filename: str) -> Optional[str]:
    path = Path(filename)
    if SDK not in path.parents or any(p in path.parents for p in NOT_COUNTED):
        return None
    return str(path.relative_to(SDK))


class Route:
    """The SDK files a call enters and the steps between them, per thread."""

    def __init__(self) -> None:
        self.files: Dict[str, int] = {}
        self.steps = 0
        #: generator and coroutine frames already entered: their resumptions are not new calls
        self._entered: set[int] = set()
        self.crossings = 0
        self._lock = threading.Lock()

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = sdk_file(frame.f_code.co_filename)
        if callee is None:
            return
        if frame.f_code.co_flags & RESUMABLE:
            if id(frame) in self._entered:
                return
            self._entered.add(id(frame))
        caller = None
        back = frame.f_back
        while back is not None and caller is None:
            caller = sdk_file(back.f_code.co_filename)
            back = back.f_back
        with self._lock:
            self.files[callee] = self.files.get(callee, 0) + 1
            if caller is not None and caller != callee:
                self.steps += 1
                if caller.startswith("aio/") != callee.startswith("aio/"):
                    self.crossings += 1

    def follow(self, call: Callable[[], Any]) -> Any:
        self.start()
        try:
            return call()
        finally:
            self.stop()

    def start(self) -> None:
        threading.setprofile(self.profile)
        sys.setprofile(self.profile)

    @staticmethod
    def stop() -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]

    def line(self, what: str) -> str:
        aio_files = sum(1 for f in self.files if f.startswith("aio/"))
        return (f"{what:<10} files {len(self.files):>3} (aio {aio_files:>2})   steps {self.steps:>4}   "
                f"aio<->rest crossings {self.crossings:>4}")


def main() -> None:
    with tempfile.TemporaryDirectory() as state:
        info = ensure_running(Path(state) / "svc")
        try:
            target = Target.local(info)
            ws = Workspace.create(target, RG, "paths")
            cluster = ws.create_cluster("c1", vm_size="Standard_D1", target_node_count=1, admin_user_name="bench",
                                        admin_password="Bench-Pa55word!")
            share = FileShare.create(target, RG, "pathsstorage", "share")
            script = Path(state) / "hello.py"
            script.write_text("print('hello')\n")
            share.upload_file(script, "paths/hello.py", progress=False)
            cluster.wait_until_ready(timeout=300)
            experiment = ws.create_experiment("paths")
            spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/paths/paths/hello.py",
                              mounts=[share.mount(relative_mount_path="paths")])

            experiment.submit("warm-up-sync", spec, cluster=cluster)  # clients built, modules imported
            sync_route = Route()
            sync_route.follow(lambda: experiment.submit("sync-submit", spec, cluster=cluster))

            async def aio_submit() -> None:
                async with aio.Target.local(info) as atarget:
                    aws = await aio.Workspace.get(atarget, RG, "paths")
                    acluster = await aws.get_cluster("c1")
                    aexperiment = await aws.get_experiment("paths")
                    await aexperiment.submit("warm-up-aio", spec, cluster=acluster)  # clients built, modules imported
                    aio_route.start()
                    try:
                        await aexperiment.submit("aio-submit", spec, cluster=acluster)
                    finally:
                        aio_route.stop()

            aio_route = Route()
            asyncio.run(aio_submit())
            target.close()
        finally:
            stop_daemon(Path(state) / "svc")
    rows: List[str] = [sync_route.line("sync"), aio_route.line("aio")]
    print("\n".join(rows))
    print(f"aio steps / sync steps: {aio_route.steps / max(sync_route.steps, 1):.2f}")


if __name__ == "__main__":
    main()
