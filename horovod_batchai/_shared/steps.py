"""Operations written once, run by the sync and the aio API alike.

An operation is a generator function. Each request it makes is the value of a ``yield``, and the
``yield`` gives back the request's answer::

    def get_workspace(self, resource_group, name):
        client = yield self._connection.batchai()
        with azure_errors("reading workspace", ...):
            model = yield client.workspaces.get(resource_group, name)
        return workspace_record(model, ...)

Whoever runs the operation decides what a request is: with Microsoft's sync clients the call has
already answered when it is yielded, and :func:`run` sends the answer straight back; with their aio
clients the call is a coroutine, which :func:`~horovod_batchai._shared.steps_async.run_async`
awaits. An error is raised inside the operation at the ``yield`` that asked, so its ``with`` and
``try`` blocks handle it the same way on both sides.

What differs by more than ``await`` is yielded as a step of this module: :class:`Listed` (every
item of a pager), :class:`Mapped` (our poller over a client's, its result converted) and
:class:`Done` (a finished poller). A backend is an operations object behind :class:`Sync` (or
:class:`~horovod_batchai._shared.steps_async.Async`), which runs each operation it is asked for.
"""
from __future__ import annotations

import functools
import inspect
import logging
from dataclasses import dataclass
from typing import Any, Callable, Generator, Optional, TypeVar

from azure.core.exceptions import ResourceNotFoundError

from .._models.errors import azure_errors
from .lro import DonePoller, MappedPoller, resume_token

__all__ = ["Steps", "Listed", "Mapped", "Done", "run", "Sync", "begin_delete"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: what an operation is: a generator that yields its requests and returns its outcome
Steps = Generator[Any, Any, T]


@dataclass(frozen=True)
class Listed:
    """Every item of a pager (``client.things.list(...)``), as a list."""

    pages: Any


@dataclass(frozen=True)
class Mapped:
    """A poller over ``inner`` (a client's poller, or one of ours) whose result is ``convert``-ed
    (``convert`` may itself be an operation: its steps are run when the result is asked for);
    with ``same_token`` its continuation token is ``inner``'s own."""

    inner: Any
    convert: Callable[[Any], Any]
    action: str
    resource: str
    same_token: bool = False


@dataclass(frozen=True)
class Done:
    """A poller of an operation that had nothing left to do: its result is ``value``."""

    value: Any
    action: str
    resource: str


def _answer(step: Any) -> Any:
    if isinstance(step, Listed):
        return list(step.pages)
    if isinstance(step, Mapped):
        convert = step.convert
        return MappedPoller(step.inner, lambda raw: _finished(convert(raw)), action=step.action,
                            resource=step.resource, same_token=step.same_token)
    if isinstance(step, Done):
        return DonePoller(step.value, action=step.action, resource=step.resource)
    return step  # a sync client's answer, already there


def _finished(value: Any) -> Any:
    """``value``, or the outcome of the operation it is."""
    return run(value) if inspect.isgenerator(value) else value


def run(steps: "Steps[T]") -> T:
    """Run an operation to its end in this thread, each request answered as it is made."""
    answer: Any = None
    error: Optional[BaseException] = None
    while True:
        try:
            step = steps.send(answer) if error is None else steps.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        answer, error = None, None
        try:
            answer = _answer(step)
        except BaseException as exc:  # raised inside the operation, where it asked
            error = exc


class Sync:
    """An operations object whose operations (its generator methods) are run with :func:`run`;
    its other members (ids, checks that make no request, settings) are handed on as they are."""

    def __init__(self, operations: Any) -> None:
        self.operations = operations

    def __getattr__(self, name: str) -> Any:
        member = getattr(self.operations, name)
        if not inspect.isgeneratorfunction(member):
            return member

        @functools.wraps(member)
        def operation(*args: Any, **kwargs: Any) -> Any:
            return run(member(*args, **kwargs))
        return operation


def begin_delete(action: str, resource: str, continuation_token: Optional[str], start: Callable[..., Any],
                 **poll: Any) -> "Steps[Any]":
    """A delete, every backend's: the poller of ``start(continuation_token=..., **poll)`` (resumed
    from ``continuation_token`` when given; ``poll``: the client's polling options), or a finished
    one when the resource is already gone."""
    inner = None
    if continuation_token is not None:
        inner = resume_token(continuation_token, action=action, resource=resource)
        if inner is None:
            return (yield Done(None, action, resource))
    with azure_errors(action, resource):
        try:
            log.info("%s %s", action, resource)
            poller = yield start(continuation_token=inner, **poll)
        except ResourceNotFoundError:
            log.debug("%s: already gone", resource)
            return (yield Done(None, action, resource))
    return (yield Mapped(poller, lambda _: None, action, resource))
