"""The one polling helper behind Job.wait, GpuCluster.wait_until_ready and OutputStream, and the
pollers of long operations: arguments checked by name, fake clocks, timeouts that raise."""
from __future__ import annotations

import math
from typing import Any, Optional

import pytest

from horovod_batchai import InvalidSpecError, WaitTimeoutError
from horovod_batchai._lro import DonePoller, MappedPoller
from horovod_batchai._polling import Polling, check_seconds, poll_until


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
