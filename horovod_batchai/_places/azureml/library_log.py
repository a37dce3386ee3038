"""azure-ai-ml's messages on this package's logger, not on stderr.

When it is imported, azure-ai-ml gives its ``azure.ai.ml`` logger a handler of its own that writes
to stderr, and stops that logger's records from reaching the application's logging. A library
that calls it would print. While this package calls azure-ai-ml on a thread (inside
:func:`routed`), whatever that thread logs under ``azure.ai.ml`` goes to :data:`log` instead, at
its own level, except the messages in :data:`INFO_ONLY`. Records of the caller's own azure-ai-ml
calls, made outside ``routed`` or on other threads, still reach azure-ai-ml's handler.
"""
from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["INFO_ONLY", "log", "routed"]

#: where azure-ai-ml's messages go while this package calls it
log = logging.getLogger(__name__)

#: Messages passed on at INFO whatever their level: none says anything the caller can act on,
#: and at WARNING Python would print them when the application has configured no logging.
#: - "the provided asset name ... will not be used for anonymous registration" (twice per
#:   build-context submit): azure-ai-ml says it while it validates a job whose environment is
#:   named; it is about its job schema, not about what it registers -- the environment version
#:   is PUT under its name;
#: - "Class ...Schema: This is an experimental class, and may change at any time" (once per
#:   process): about azure-ai-ml's own schemas, which this package does not use;
#: - "Proceeding with no tenant id appended to studio URL": about a link this package never shows.
INFO_ONLY = ("will not be used for anonymous registration", "This is an experimental class",
             "Proceeding with no tenant id appended to studio URL")

_calls = threading.local()
_lock = threading.Lock()


class _ToThisPackage(logging.Filter):
    """On azure-ai-ml's own handlers: a record made inside :func:`routed` is logged on
    :data:`log` instead, and the handler drops it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(_calls, "depth", 0) or not record.name.startswith("azure.ai.ml"):
            return True
        if not getattr(record, "horovod_batchai_routed", False):  # once, whatever the handlers
            record.horovod_batchai_routed = True
            message = record.getMessage().strip()
            level = logging.INFO if any(text in message for text in INFO_ONLY) else record.levelno
            log.log(min(level, record.levelno), "azure-ai-ml: %s", message)
        return False


_FILTER = _ToThisPackage()


def _install() -> None:
    """Put the filter on the handlers of azure-ai-ml's logger (its stderr handler, made when
    azure.ai.ml is imported; another one there may be the application's), once."""
    import azure.ai.ml  # noqa: F401  -- makes the handler
    with _lock:
        for handler in logging.getLogger("azure.ai.ml").handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)


@contextmanager
def routed() -> Iterator[None]:
    """azure-ai-ml's messages on this thread go to :data:`log` until the block ends."""
    _install()
    _calls.depth = getattr(_calls, "depth", 0) + 1
    try:
        yield
    finally:
        _calls.depth -= 1
