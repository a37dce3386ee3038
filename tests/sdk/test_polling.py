"""The one polling helper behind Job.wait, GpuCluster.wait_until_ready and OutputStream, and the
pollers of long operations: arguments checked by name, fake clocks, timeouts that raise."""
from __future__ import annotations

import math
from typing import Any, Optional

import pytest

from azure.core.polling import LROPoller, NoPolling

from horovod_batchai import HorovodBatchAIError, InvalidSpecError, WaitTimeoutError
from horovod_batchai._shared.lro import DonePoller, MappedPoller, background_poller, resume_token
from horovod_batchai._shared.polling import Polling, check_seconds, poll_until


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.mark.parametrize("value, problem", [
    (math.nan, "is NaN"), (-1, "is negative"), (math.inf, "is infinite"), ("5", "is not a number"),
    (True, "is not a number"), (None, "is None"),
])
def test_bad_timeouts_name_the_argument(value: Any, problem: str) -> None:
    with pytest.raises(InvalidSpecError, match=problem) as caught:
        Polling(timeout=value, poll_interval=1.0, allow_no_timeout=False)
    assert caught.value.field == "timeout"


@pytest.mark.parametrize("value", [math.nan, -0.5, math.inf])
def test_bad_poll_intervals_name_the_argument(value: float) -> None:
    with pytest.raises(InvalidSpecError) as caught:
        Polling(timeout=10, poll_interval=value)
    assert caught.value.field == "poll_interval"


def test_no_timeout_is_allowed_only_where_it_means_wait_forever() -> None:
    assert Polling(timeout=None, poll_interval=1).remaining() == math.inf
    assert Polling(timeout=math.inf, poll_interval=1).remaining() == math.inf
    assert check_seconds(0, "t") == 0.0
    with pytest.raises(InvalidSpecError, match="is zero"):
        check_seconds(0, "t", allow_zero=False)


def test_poll_until_sleeps_between_polls_and_never_past_the_deadline() -> None:
    clock = FakeClock()
    values = iter([1, 2, 3, 4, 5])
    polling = Polling(timeout=10, poll_interval=4, clock=clock, sleep=clock.sleep)
    with pytest.raises(WaitTimeoutError, match="last 4"):
        poll_until(lambda: next(values), done=lambda v: v > 9, polling=polling,
                   on_timeout=lambda v: WaitTimeoutError(f"last {v}", last_state=v))
    assert clock.slept == [4, 4, 2]  # the last pause stops at the deadline


def test_poll_until_returns_what_was_done_and_on_each_can_stop_it() -> None:
    clock = FakeClock()
    polling = Polling(timeout=None, poll_interval=1, clock=clock, sleep=clock.sleep)
    seen: list[int] = []
    values = iter([1, 2, 3])
    assert poll_until(lambda: next(values), done=lambda v: v == 3, polling=polling, on_each=seen.append,
                      on_timeout=lambda v: AssertionError("no deadline")) == 3
    assert seen == [1, 2, 3] and clock.slept == [1, 1]

    def refuse(value: int) -> None:
        raise ValueError("stop")
    with pytest.raises(ValueError):
        poll_until(lambda: 1, done=lambda v: False, polling=polling, on_each=refuse,
                   on_timeout=lambda v: AssertionError())


class SlowPoller:
    """Stands for an azure-core LROPoller whose operation never finishes."""

    def __init__(self) -> None:
        self.waited: list[Optional[float]] = []

    def wait(self, timeout: Optional[float] = None) -> None:
        self.waited.append(timeout)

    def done(self) -> bool:
        return False

    def status(self) -> str:
        return "InProgress"


def test_a_long_operation_that_outlives_its_timeout_raises() -> None:
    inner = SlowPoller()
    poller = MappedPoller(inner, lambda raw: raw, action="creating cluster", resource="c")  # type: ignore[arg-type]
    with pytest.raises(WaitTimeoutError, match="creating cluster c had not finished after 5s"):
        poller.result(timeout=5)
    assert inner.waited == [5]
    with pytest.raises(InvalidSpecError):
        poller.result(timeout=math.nan)
    assert not poller.done() and poller.status() == "InProgress"


def test_a_finished_operation() -> None:
    poller = DonePoller("value")
    assert poller.done() and poller.result(timeout=1) == "value" and poller.status() == "Succeeded"


class TokenlessPolling(NoPolling):
    """A polling method that gives no continuation token, as azure-ai-ml's workspace creation
    (an ARM template deployment) does: azure-core's base class raises TypeError."""

    def get_continuation_token(self) -> str:
        raise TypeError("Polling method 'TokenlessPolling' doesn't support get_continuation_token")


def test_a_poller_without_token_says_so_naming_the_operation() -> None:
    inner: LROPoller = LROPoller(None, None, lambda raw: raw, TokenlessPolling())
    poller = MappedPoller(inner, lambda raw: raw, action="creating workspace", resource="ws")
    with pytest.raises(HorovodBatchAIError, match="creating workspace ws cannot be resumed from a continuation token"):
        poller.continuation_token()


def test_tokens_name_their_operation_and_resource() -> None:
    done = DonePoller("value", action="creating experiment", resource="/x/experiments/cifar")
    token = done.continuation_token()
    assert resume_token(token, action="creating experiment", resource="/X/experiments/cifar") is None
    wrapped = MappedPoller(done, lambda v: v, action="submitting job", resource="/x/jobs/j").continuation_token()
    assert resume_token(wrapped, action="submitting job", resource="/x/jobs/j") == token
    for bad, problem in ((token, "was given by creating experiment /x/experiments/cifar"), ("%%%", "not a token"),
                         ("", "str is not a continuation token"), (7, "int is not a continuation token")):
        with pytest.raises(InvalidSpecError, match=problem) as caught:
            resume_token(bad, action="submitting job", resource="/x/jobs/j")
        assert caught.value.field == "continuation_token"


def test_a_background_poller_runs_its_steps_on_azure_cores_thread() -> None:
    import threading
    release, seen = threading.Event(), []

    def work() -> str:
        seen.append(threading.current_thread().name)
        release.wait(30)
        return "done"

    poller = background_poller(work, action="resizing cluster", resource="c", token=lambda: "inner")
    with pytest.raises(WaitTimeoutError, match="resizing cluster c had not finished after 0.05s"):
        poller.result(0.05)
    assert resume_token(poller.continuation_token(), action="resizing cluster", resource="c") == "inner"
    release.set()
    assert poller.result(30) == "done" and poller.status() == "Succeeded"
    assert seen and seen[0].startswith("LROPoller(")


@pytest.mark.parametrize("options, field", [
    ({"link_expiry_minutes": "60"}, "link_expiry_minutes"),
    ({"link_expiry_minutes": 1}, "link_expiry_minutes"),
    ({"link_expiry_minutes": True}, "link_expiry_minutes"),
    ({"renew_before_s": "x"}, "renew_before_s"),
    ({"renew_before_s": -5}, "renew_before_s"),
    ({"renew_before_s": math.nan}, "renew_before_s"),
])
def test_a_stream_checks_its_options_when_made(offline_target: Any, options: dict, field: str) -> None:
    """Before any request (the offline target refuses connections), sync and aio alike."""
    import asyncio

    from horovod_batchai import Experiment, Job, Workspace
    from horovod_batchai import aio
    job = Job(Experiment(Workspace(offline_target, "rg", "ws"), "exp"), "job")
    with pytest.raises(InvalidSpecError) as caught:
        job.stream(**options)
    assert caught.value.field == field

    async def async_stream() -> None:
        async with aio.Target(offline_target) as target:
            aio_job = aio.Job(aio.Experiment(aio.Workspace(target, "rg", "ws"), "exp"), "job")
            with pytest.raises(InvalidSpecError) as caught:
                aio_job.stream(**options)
            assert caught.value.field == field
    asyncio.run(async_stream())


def test_output_file_names_that_are_not_paths_are_refused(offline_target: Any, tmp_path: Any) -> None:
    """Before any request, naming the argument (they were AttributeErrors)."""
    from horovod_batchai import Experiment, Job, Workspace
    job = Job(Experiment(Workspace(offline_target, "rg", "ws"), "exp"), "job")
    for call, field in ((lambda: job.stream(123), "name"), (lambda: job.stream("/"), "name"),
                        (lambda: job.download(None, tmp_path), "path")):  # type: ignore[arg-type]
        with pytest.raises(InvalidSpecError) as caught:
            call()
        assert caught.value.field == field
