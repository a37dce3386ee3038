"""horovod_batchai.aio jobs against the local service: submit, wait, stream, output files,
failure, termination -- and cancelling a wait or a stream, which stops polling at once and
terminates the job only when asked."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from horovod_batchai import ExecutionState, HorovodJob, JobFailedError
from horovod_batchai.aio import Job, Target

from aio_support import forget_earlier_polling_threads, other_tasks, polling_threads, run, setup_jobs
from test_aio_resources import CountRequests

pytestmark = pytest.mark.slow

STREAMER = """\
import time
for i in range(12):
    # multi-byte characters so that some reads end in the middle of one
    print(f"{i:03d} héllo wörld ✓ 日本語", flush=True)
    time.sleep(0.25)
"""

FAILER = """\
import sys
print("about to fail", flush=True)
print("Traceback (most recent call last):\\nValueError: the data set is missing", file=sys.stderr, flush=True)
sys.exit(3)
"""

SLEEPER = """\
import time
print("sleeping", flush=True)
time.sleep(300)
"""


def _spec(script: str, mount: Any) -> HorovodJob:
    return HorovodJob(script=f"$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/{script}", mounts=[mount])


def test_submit_stream_wait_download(service: Any, tmp_path: Path) -> None:
    async def scenario(target: Target) -> None:
        ws, cluster, share = await setup_jobs(target, tmp_path, {"streamer.py": STREAMER, "failer.py": FAILER})
        experiment = await ws.create_experiment("cifar")
        spec = _spec("streamer.py", await share.mount())
        poller = await experiment.begin_submit("streamer", spec, cluster=cluster)
        job = await poller.result(60)
        assert isinstance(job, Job) and job.execution_state in (ExecutionState.QUEUED, ExecutionState.RUNNING)
        assert await experiment.submit("streamer", spec, cluster="nc6cluster") == job  # same job again

        stream = job.stream("stdout.txt")
        pieces = [text async for text in stream]
        assert "".join(pieces) == "".join(f"{i:03d} héllo wörld ✓ 日本語\n" for i in range(12))
        states: list[ExecutionState] = []
        status = await job.wait(timeout=120, on_state=states.append)
        assert status.execution_state is ExecutionState.SUCCEEDED and states == [ExecutionState.SUCCEEDED]
        names = {f.name for f in await job.list_output_files()}
        assert {"stdout.txt", "stderr.txt"} <= names
        downloaded = await job.download("stdout.txt", tmp_path / "out/")
        assert downloaded.read_text(encoding="utf-8") == "".join(pieces)
        assert await experiment.list_jobs() == [job] and await experiment.get_job("streamer") == job

        failing = await experiment.submit("failer", _spec("failer.py", await share.mount()), cluster=cluster)
        with pytest.raises(JobFailedError) as failed:
            await failing.wait(timeout=120)
        assert failed.value.exit_code != 0 and "the data set is missing" in failed.value.stderr_tail
        assert "the data set is missing" in await failing.stderr_tail()
        # the same keyword-only options as the sync classes, positional for one release with a warning
        with pytest.warns(DeprecationWarning, match=r"Job.stderr_tail\(\) by position .* use max_bytes="):
            assert "the data set is missing" in await failing.stderr_tail(8192)
        with pytest.warns(DeprecationWarning, match=r"Job.stdout_tail\(\) by position .* use max_bytes="):
            assert await failing.stdout_tail(8192) == await failing.stdout_tail(max_bytes=8192)
        with pytest.warns(DeprecationWarning, match=r"Job.list_output_files\(\) by position"):
            assert {f.name for f in await job.list_output_files("stdouterr")} == names
        with pytest.warns(DeprecationWarning, match=r"FileShare.mount\(\) by position .* use relative_mount_path="):
            assert await share.mount("data") == await share.mount(relative_mount_path="data")
        await failing.delete(timeout=60)
        assert await experiment.list_jobs() == [job]

    run(service, scenario)


@pytest.mark.serial
def test_cancelling_a_wait_stops_polling_and_leaves_the_job_running(service: Any, tmp_path: Path) -> None:
    forget_earlier_polling_threads()
    counter = CountRequests()

    async def scenario() -> None:
        async with Target.local(service=service, per_call_policies=[counter]) as target:
            ws, cluster, share = await setup_jobs(target, tmp_path, {"sleeper.py": SLEEPER})
            experiment = await ws.create_experiment("cifar")
            job = await experiment.submit("sleeper", _spec("sleeper.py", await share.mount()), cluster=cluster)

            started = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(job.wait(), 3)
            assert time.monotonic() - started < 3 + 1.0  # returned at the deadline, not after the job
            sent = len(counter.sent)
            await asyncio.sleep(1.0)  # four poll intervals: nothing polls any more
            assert len(counter.sent) == sent, counter.sent[sent:]
            assert not other_tasks() and not polling_threads()
            assert (await job.refresh()).execution_state is ExecutionState.RUNNING  # not terminated

            # A stream left early stops as well.
            async for text in job.stream("stdout.txt"):
                assert text == "sleeping\n"
                break
            sent = len(counter.sent)
            await asyncio.sleep(1.0)
            assert len(counter.sent) == sent and not other_tasks()

            # Asked for, a cancelled wait terminates the job.
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(job.wait(terminate_on_cancel=True), 1)
            with pytest.raises(JobFailedError):  # a terminated job ends failed, as on Batch AI
                await job.wait(timeout=60)

    asyncio.run(scenario())
    assert any(line.startswith("POST") and line.endswith("/jobs/sleeper/terminate") for line in counter.sent)


def test_terminate(service: Any, tmp_path: Path) -> None:
    async def scenario(target: Target) -> None:
        ws, cluster, share = await setup_jobs(target, tmp_path, {"sleeper.py": SLEEPER})
        experiment = await ws.create_experiment("cifar")
        job = await experiment.submit("sleeper", _spec("sleeper.py", await share.mount()), cluster=cluster)
        status = await job.terminate(timeout=60)
        assert status.execution_state in (ExecutionState.TERMINATING, ExecutionState.FAILED)

    run(service, scenario)
