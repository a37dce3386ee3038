"""The aio classes' docstrings take their field lists (``:param:``, ``:keyword:``, ``:returns:``,
``:raises:``) from their sync twins, so each is written once.

An aio method keeps its own prose (what differs on the event loop: cancelling, awaiting) and, when
it has no field list of its own, gets its sync twin's: the fields of the parameters it takes, its
pollers named as ``AsyncLROPoller``, ``StoppedError`` only where it takes ``stop``. Sphinx and
``help()`` read the result.
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Mapping, Optional

__all__ = ["document_twins", "FIELD"]

#: the first line of a field of a docstring's field list
FIELD = re.compile(r"^:(?:param|keyword|returns?|raises|rtype|type)\b[^:]*:")
_NAMED = re.compile(r"^:(?:param|keyword)(?:\s+[\w\[\], .]+)?\s+(\w+):")


def _fields(doc: str) -> list[list[str]]:
    """The fields of a cleaned docstring, each its lines (a continuation is an indented line)."""
    fields: list[list[str]] = []
    for line in doc.splitlines():
        if FIELD.match(line):
            fields.append([line])
        elif fields and line.startswith(" "):
            fields[-1].append(line)
        elif fields:
            break
    return fields


def _for_aio(field: list[str], parameters: Mapping[str, inspect.Parameter]) -> Optional[str]:
    first = field[0]
    named = _NAMED.match(first)
    if named and named.group(1) not in parameters:
        return None
    if first.startswith(":raises StoppedError:") and "stop" not in parameters:
        return None
    return "\n".join(field).replace("``LROPoller``", "``AsyncLROPoller``")


def _function(member: Any) -> Optional[Callable[..., Any]]:
    if isinstance(member, (classmethod, staticmethod)):
        member = member.__func__
    return member if inspect.isfunction(member) else None


def document_twins(twins: Mapping[type, type]) -> None:
    """For each ``aio class -> sync class``, give each public aio method without a field list its
    sync twin's fields (see the module's docstring)."""
    for aio_class, sync_class in twins.items():
        for name, member in vars(aio_class).items():
            function = _function(member)
            twin = _function(inspect.getattr_static(sync_class, name, None))
            if name.startswith("_") or function is None or twin is None or not twin.__doc__:
                continue
            own = inspect.cleandoc(function.__doc__ or "")
            if _fields(own):
                continue
            parameters = inspect.signature(function).parameters
            fields = [text for text in (_for_aio(f, parameters) for f in _fields(inspect.cleandoc(twin.__doc__)))
                      if text is not None]
            if fields:
                function.__doc__ = (own + "\n\n" if own else "") + "\n".join(fields)
