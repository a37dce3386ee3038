"""Keeping secrets out of log lines written by the libraries underneath us.

azure-core and azure-storage redact headers and SAS query parameters themselves, but urllib3 logs
every request line, query string included, at DEBUG ("GET /acct/share/f?...&sig=... HTTP/1.1"),
and a SAS signature travels in that query. azure-core's network trace (the client option
``logging_enable=True``) logs request and response bodies whole: a storage account's keys
(``listKeys``), the passwords and storage keys of a cluster or job being created, a datastore's
secret, the SAS links of output files. :func:`install_redaction` adds a filter to those loggers
that rewrites such records before any handler sees them: query strings and credentials cut
(:func:`~horovod_batchai._models.errors.redact`), and the string values of the JSON fields that
hold secrets in the REST APIs the SDK speaks.
"""
from __future__ import annotations

import logging
import re

from .._models.errors import redact

__all__ = ["RedactingFilter", "install_redaction", "redact_body", "REDACTED_LOGGERS"]

#: loggers of third-party libraries whose records can carry a URL with its query string, or a
#: body with secrets (the last: azure-core's NetworkTraceLoggingPolicy, ``logging_enable=True``).
REDACTED_LOGGERS = ("urllib3.connectionpool", "urllib3.util.retry", "requests", "azure.core.pipeline.policies._universal")

#: JSON fields whose string values are secrets: listKeys' ``value``; Batch AI's ``accountKey``,
#: ``adminUserPassword``, registry ``password`` and ``secrets[].value``; Azure ML datastore
#: secrets' ``key``, ``sasToken``, ``clientSecret``, ``connectionString``
_SECRET_FIELDS = re.compile(
    r"""(?P<name>(?P<q>["'])(?:value|key|accountKey|adminUserPassword|password|sasToken|clientSecret|"""
    r"""connectionString)(?P=q)\s*:\s*)(?P<v>["'])(?:\\.|(?!(?P=v)).)*(?P=v)""", re.IGNORECASE)


def redact_body(text: str) -> str:
    """``text`` (a log line that may hold a JSON body) with the values of its secret fields, and
    its query strings and credentials, cut out."""
    return redact(_SECRET_FIELDS.sub(lambda m: f"{m['name']}{m['v']}<redacted>{m['v']}", text))


class RedactingFilter(logging.Filter):
    """Replaces a record's message with its redacted rendering (query strings and credentials cut)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error handling
            return True
        cleaned = redact_body(message)
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
