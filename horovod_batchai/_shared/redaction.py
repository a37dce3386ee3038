"""Keeping secrets out of log lines written by the libraries underneath us.

azure-core and azure-storage redact headers and SAS query parameters themselves, but urllib3 logs
every request line, query string included, at DEBUG ("GET /acct/share/f?...&sig=... HTTP/1.1"),
and a SAS signature travels in that query. :func:`install_redaction` adds a filter to those
loggers that rewrites such records before any handler sees them.
"""
from __future__ import annotations

import logging

from .._models.errors import redact

__all__ = ["RedactingFilter", "install_redaction", "REDACTED_LOGGERS"]

#: loggers of third-party libraries whose records can carry a URL with its query string.
REDACTED_LOGGERS = ("urllib3.connectionpool", "urllib3.util.retry", "requests")


class RedactingFilter(logging.Filter):
    """Replaces a record's message with its redacted rendering (query strings and credentials cut)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error handling
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg = cleaned
            record.args = ()
        return True


_FILTER = RedactingFilter()


def install_redaction() -> None:
    """Attach the filter to every logger in :data:`REDACTED_LOGGERS` (idempotent)."""
    for name in REDACTED_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
