"""The operations of :mod:`.steps`, run from the event loop: each request an aio client makes is
awaited (see :mod:`.steps` for how an operation is written)."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Optional, TypeVar

from .lro_async import AsyncDonePoller, AsyncMappedPoller
from .steps import Done, Listed, Mapped, Steps

__all__ = ["run_async", "Async"]

T = TypeVar("T")


async def _answer(step: Any) -> Any:
    if isinstance(step, Listed):
        return [item async for item in step.pages]
    if isinstance(step, Mapped):
        convert = step.convert

        async def converted(raw: Any) -> Any:
            value = convert(raw)
            return await run_async(value) if inspect.isgenerator(value) else value
        return AsyncMappedPoller(step.inner, converted, action=step.action, resource=step.resource,
                                 same_token=step.same_token)
    if isinstance(step, Done):
        return AsyncDonePoller(step.value, action=step.action, resource=step.resource)
    if inspect.isawaitable(step):
        return await step
    return step  # what needed no request


async def run_async(steps: "Steps[T]") -> T:
    """Run an operation to its end, each request awaited as it is made. A cancellation reaches the
    operation at the ``yield`` it is waiting on (its ``finally`` blocks run) and goes on out."""
    answer: Any = None
    error: Optional[BaseException] = None
    while True:
        try:
            step = steps.send(answer) if error is None else steps.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        answer, error = None, None
        try:
            answer = await _answer(step)
        except BaseException as exc:  # raised inside the operation, where it asked
            error = exc


class Async:
    """An operations object whose operations (its generator methods) are coroutine functions
    here, run with :func:`run_async`; its other members are handed on as they are."""

    def __init__(self, operations: Any) -> None:
        self.operations = operations

    def __getattr__(self, name: str) -> Any:
        member = getattr(self.operations, name)
        if not inspect.isgeneratorfunction(member):
            return member

        @functools.wraps(member)
        async def operation(*args: Any, **kwargs: Any) -> Any:
            return await run_async(member(*args, **kwargs))
        return operation
