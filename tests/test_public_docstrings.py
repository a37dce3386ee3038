"""Every public member has a docstring with the fields Sphinx renders (issue 25).

The public surface is ``horovod_batchai.__all__`` and ``horovod_batchai.aio.__all__``: each class there and
each public method, classmethod, staticmethod and property defined on it or on one of the package's own
base classes (what Python's and azure-core's classes give, Enum members and dataclass fields are not members
here). For each:

- it has a docstring (its own, or the one it inherits from the package's class it overrides, as Sphinx
  renders);
- every parameter (not self/cls, ``*args``, ``**kwargs``) is named: ``:param name:`` when it can be passed
  by position, ``:keyword name:`` when keyword-only; aio twins carry the fields too;
- a method whose annotated return is not None has ``:returns:`` (or ``:rtype:``);
- a method that raises one of the package's errors itself (``raise XError(...)``) names it
  (``:raises XError:``), and one that calls an argument check (a ``check_*`` function that raises
  :class:`~horovod_batchai.InvalidSpecError`) has ``:raises InvalidSpecError:``.

The test lists everything missing at once.
"""
from __future__ import annotations

import functools
import inspect
import re
import textwrap
from typing import Any, Callable, Iterator, List, Optional, Tuple

import horovod_batchai
import horovod_batchai.aio

PACKAGE = "horovod_batchai"
ERRORS = {name for name in horovod_batchai.__all__
          if isinstance(getattr(horovod_batchai, name), type)
          and issubclass(getattr(horovod_batchai, name), horovod_batchai.HorovodBatchAIError)}


def _ours(klass: type) -> bool:
    return klass.__module__.split(".")[0] == PACKAGE


def _public_names() -> Iterator[Tuple[str, Any]]:
    for package in (horovod_batchai, horovod_batchai.aio):
        for name in package.__all__:
            yield f"{package.__name__}.{name}", getattr(package, name)


def _members(klass: type) -> Iterator[Tuple[str, Any]]:
    """(name, raw attribute) for the public callables and properties the class or its package bases define."""
    seen = set()
    for base in klass.__mro__:
        if not _ours(base):
            continue
        for name, raw in vars(base).items():
            if name.startswith("_") or name in seen:
                continue
            if isinstance(raw, (property, classmethod, staticmethod, functools.cached_property)) or \
                    inspect.isfunction(raw):
                seen.add(name)
                yield name, raw


def _function(raw: Any) -> Optional[Callable[..., Any]]:
    if isinstance(raw, (classmethod, staticmethod)):
        return raw.__func__  # type: ignore[no-any-return]
    if isinstance(raw, property):
        return raw.fget
    if isinstance(raw, functools.cached_property):
        return raw.func  # type: ignore[no-any-return]
    return raw if inspect.isfunction(raw) else None


def _docstring(klass: type, name: str) -> str:
    """The docstring Sphinx renders: the member's own, else the one of the package's base it overrides."""
    for base in klass.__mro__:
        if _ours(base) and name in vars(base):
            doc = getattr(_function(vars(base)[name]), "__doc__", None)
            if doc:
                return inspect.cleandoc(doc)
    return ""


def _named(doc: str, field: str, name: str) -> bool:
    # ":param name:" or ":param type name:" (Sphinx's typed form), same for :keyword:
    return re.search(rf":{field}(\s+[^:\n]+)?\s+{re.escape(name)}\s*:", doc) is not None


def _raises(doc: str, error: str) -> bool:
    return re.search(rf":raises\s+([^:\n]*[\s,~.])?{re.escape(error)}\b[^:\n]*:", doc) is not None


def _body(function: Callable[..., Any]) -> str:
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return ""
    # drop the docstring: only code says what the method raises
    doc = function.__doc__
    return source.replace(doc, "") if doc else source


def _checks_raise_invalid_spec(function: Callable[..., Any], body: str) -> List[str]:
    """The argument checks the body calls that raise InvalidSpecError (a check_* name in the module's globals)."""
    found = []
    for name in sorted(set(re.findall(r"\b(check_\w+)\(", body))):
        check = function.__globals__.get(name)
        if inspect.isfunction(check) and _ours_function(check) and "InvalidSpecError" in _body(check):
            found.append(name)
    return found


def _ours_function(function: Callable[..., Any]) -> bool:
    return (function.__module__ or "").split(".")[0] == PACKAGE


def _missing_for_callable(where: str, function: Callable[..., Any], doc: str, *, bound: bool) -> List[str]:
    missing = []
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())
    if bound and parameters:
        parameters = parameters[1:]
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) or parameter.name.startswith("_"):
            continue
        field = "keyword" if parameter.kind is parameter.KEYWORD_ONLY else "param"
        if not _named(doc, field, parameter.name):
            missing.append(f"{where}: no :{field} {parameter.name}:")
    returned = signature.return_annotation
    if returned not in (None, "None", inspect.Signature.empty) and not re.search(r":(returns?|rtype):", doc):
        missing.append(f"{where}: no :returns: (returns {returned})")
    body = _body(function)
    raised = set(re.findall(r"\braise\s+(?:\w+\.)*(\w+)\(", body)) & ERRORS
    checks = _checks_raise_invalid_spec(function, body)
    if checks:
        raised.add("InvalidSpecError")
    for error in sorted(raised):
        if not _raises(doc, error):
            why = f" (calls {', '.join(checks)})" if error == "InvalidSpecError" and checks else ""
            missing.append(f"{where}: no :raises {error}:{why}")
    return missing


def _missing() -> List[str]:
    missing: List[str] = []
    for where, obj in _public_names():
        if inspect.isfunction(obj):
            doc = inspect.cleandoc(obj.__doc__ or "")
            if not doc:
                missing.append(f"{where}: no docstring")
            missing += _missing_for_callable(where, obj, doc, bound=False)
            continue
        if not isinstance(obj, type):
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(f"{where}: no class docstring")
        for name, raw in _members(obj):
            member = f"{where}.{name}"
            doc = _docstring(obj, name)
            if not doc:
                missing.append(f"{member}: no docstring")
            if isinstance(raw, (property, functools.cached_property)):
                continue
            function = _function(raw)
            if function is None:
                continue
            missing += _missing_for_callable(member, function, doc, bound=not isinstance(raw, staticmethod))
    return missing


def test_every_public_member_documents_its_parameters_returns_and_raises() -> None:
    missing = _missing()
    assert not missing, f"{len(missing)} missing docstring fields:\n" + "\n".join(missing)


def test_the_check_sees_a_missing_field() -> None:
    # the checks above can fail: a method lacking each field is reported
    class Probe:
        def run(self, name: str, *, timeout: float) -> int:
            """Run."""
            check_name(name)
            raise horovod_batchai.WaitTimeoutError("late")

    def check_name(name: str) -> None:
        raise horovod_batchai.InvalidSpecError("name", "bad")

    # check_name is local to this test, not in the module's globals: only the direct raise is seen
    reported = _missing_for_callable("Probe.run", Probe.run, "Run.", bound=True)
    assert reported == ["Probe.run: no :param name:", "Probe.run: no :keyword timeout:",
                        "Probe.run: no :returns: (returns int)", "Probe.run: no :raises WaitTimeoutError:"]
    documented = ("Run.\n\n:param name: n.\n:keyword float timeout: t.\n:returns: a count.\n"
                  ":raises ~horovod_batchai.WaitTimeoutError: when late.")
    assert _missing_for_callable("Probe.run", Probe.run, documented, bound=True) == []
    # an argument check is found through the module the method is defined in
    create_directory = horovod_batchai.FileShare.create_directory
    assert _checks_raise_invalid_spec(create_directory, _body(create_directory)) == ["check_share_path"]
