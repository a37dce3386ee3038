"""Names and argument forms kept for one release after the one door replaced them."""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, TypeVar

__all__ = ["deprecated", "positional_options"]

F = TypeVar("F", bound=Callable[..., Any])


def deprecated(old: str, new: str) -> None:
    """Warn the caller of the caller that ``old`` goes in the next release and ``new`` replaces it."""
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  DeprecationWarning, stacklevel=3)


def positional_options(*names: str) -> Callable[[F], F]:
    """Let a method whose options ``names`` became keyword-only take them positionally, in that
    order after its positional parameters, for one release, warning with each keyword to use.
    The method's ``_positional_options`` are ``names`` (the aio parity test compares them)."""

    def decorate(func: F) -> F:
        positional = sum(1 for p in inspect.signature(func).parameters.values()
                         if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        keyword_only = [p.name for p in inspect.signature(func).parameters.values() if p.kind is p.KEYWORD_ONLY]
        assert list(names) == keyword_only[:len(names)], f"{func.__qualname__}: {names} are not its first options"
        caller = func.__qualname__.split(".")[-2] if "." in func.__qualname__ else ""

        def moved(args: tuple, kwargs: dict) -> tuple:
            extra = args[positional:]
            if not extra:
                return args, kwargs
            if len(extra) > len(names):
                raise TypeError(f"{func.__qualname__}() takes {positional - 1} positional argument(s) and at most "
                                f"{len(names)} deprecated positional option(s) ({', '.join(names)}), "
                                f"but {len(args) - 1} were given")
            kwargs = dict(kwargs)
            for name, value in zip(names, extra):
                if name in kwargs:
                    raise TypeError(f"{func.__qualname__}() got multiple values for argument {name!r}")
                kwargs[name] = value
            given = ", ".join(f"{name}=..." for name in names[:len(extra)])
            warnings.warn(f"passing {', '.join(names[:len(extra)])} to {caller}.{func.__name__}() by position is "
                          f"deprecated and will be removed in the next release; use {given}",
                          DeprecationWarning, stacklevel=3)
            return args[:positional], kwargs

        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def wrapper_async(*args: Any, **kwargs: Any) -> Any:
                args, kwargs = moved(args, kwargs)
                return await func(*args, **kwargs)
            wrapper_async._positional_options = names  # type: ignore[attr-defined]
            return wrapper_async  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = moved(args, kwargs)
            return func(*args, **kwargs)
        wrapper._positional_options = names  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
