"""Following a job's output file as it grows, without a request: the cursor the sync
:class:`OutputStream` and the aio ``AsyncOutputStream`` move, and the checks of their arguments."""
from __future__ import annotations

import codecs
import logging
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, List, Optional
from urllib.parse import parse_qs, urlparse

from azure.core.exceptions import HttpResponseError

from .._models.errors import InvalidSpecError, WaitTimeoutError
from .polling import Polling, check_seconds

if TYPE_CHECKING:
    from .._job import Job
    from .._models.values import OutputFile

log = logging.getLogger(__name__)

__all__ = ["READ_CHUNK", "StreamCursor", "check_link_expiry", "check_output_path", "sas_expiry"]


#: largest single ranged read; a big backlog is yielded in pieces of this size
READ_CHUNK = 4 * 1024 * 1024


def check_link_expiry(link_expiry_minutes: object) -> None:
    if isinstance(link_expiry_minutes, bool) or not isinstance(link_expiry_minutes, int) or \
            not 5 <= link_expiry_minutes <= 600:
        raise InvalidSpecError("link_expiry_minutes", f"{link_expiry_minutes!r} is not a link lifetime",
                               "minutes between 5 and 600 (the service's range)")


def check_output_path(value: object, field: str) -> str:
    """A file (or directory) in a job's output directory, as the caller names it."""
    if not isinstance(value, str) or not value.strip("/"):
        raise InvalidSpecError(field, f"{value!r} is not a path in the output directory",
                               "e.g. 'stdout.txt', or a name from list_output_files()")
    return value


def sas_expiry(url: str) -> Optional[float]:
    """The POSIX time at which a SAS URL's ``se`` (signed expiry) falls, if it has one."""
    values = parse_qs(urlparse(url).query).get("se")
    if not values:
        return None
    text = values[0].replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


class StreamCursor:
    """What following an output file keeps between reads, whichever loop drives it (the sync
    :class:`OutputStream` or ``horovod_batchai.aio``'s): where the file is read up to, the
    incremental decoder, and the download link with the moment to renew it."""

    def __init__(self, job: "Job", name: str, *, output_directory_id: str = "stdouterr",
                 poll_interval: Optional[float] = None, timeout: Optional[float] = None,
                 link_expiry_minutes: int = 60, renew_before_s: Optional[float] = None,
                 encoding: str = "utf-8", wall_clock: Callable[[], float] = time.time,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, stop: Optional[threading.Event] = None) -> None:
        directory, _, file_name = check_output_path(name, "name").strip("/").rpartition("/")
        self._job = job
        self._directory = directory or "."
        self._file_name = file_name
        self._output_directory_id = output_directory_id
        interval = poll_interval if poll_interval is not None else min(job._backend.default_poll_interval, 5.0)
        # Checked now, so that a bad value fails when the stream is made, not at its first read.
        self._polling_args = dict(timeout=timeout, poll_interval=interval, clock=clock, sleep=sleep, stop=stop)
        Polling(**self._polling_args)  # type: ignore[arg-type]
        check_link_expiry(link_expiry_minutes)
        check_seconds(renew_before_s, "renew_before_s", allow_none=True)
        self._timeout = timeout
        self._link_expiry_minutes = link_expiry_minutes
        lifetime = link_expiry_minutes * 60.0
        # Renew with a tenth of the lifetime to spare (at least 5 s, at most 2 min) unless told.
        self._renew_before = renew_before_s if renew_before_s is not None else min(max(0.1 * lifetime, 5.0), 120.0)
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._wall_clock = wall_clock
        self._url: Optional[str] = None
        self._renew_at = 0.0
        self.offset = 0
        self.links_fetched = 0
        self._polling: Optional[Polling] = None
        self._what = f"streaming {self._file_name} of job {job.name!r}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(job={self._job.name!r}, file={self._file_name!r}, "
                f"output_directory_id={self._output_directory_id!r}, offset={self.offset})")

    def _new_polling(self) -> Polling:
        return Polling(**self._polling_args)  # type: ignore[arg-type]

    def _where(self) -> str:
        return f"{self._job.name}/{self._output_directory_id}/{self._file_name}"

    def _timeout_error(self, last_state: object) -> WaitTimeoutError:
        return WaitTimeoutError(f"job {self._job.name!r} was still running after {self._timeout:g}s "
                                f"of streaming {self._file_name}", last_state=last_state)

    def _valid_link(self) -> Optional[str]:
        """The link in hand, unless it is about to expire (then None: list the files again)."""
        if self._url is not None and self._wall_clock() < self._renew_at:
            return self._url
        self.links_fetched += 1
        return None

    def _take_link(self, files: "List[OutputFile]") -> Optional[str]:
        """Keep the file's link from a fresh listing (None: not written yet)."""
        now = self._wall_clock()
        match = next((f for f in files if f.name == self._file_name and not f.is_directory), None)
        if match is None or not match.download_url:
            self._url = None
            return None
        self._url = match.download_url
        expiry = sas_expiry(self._url) or (now + self._link_expiry_minutes * 60.0)
        self._renew_at = expiry - self._renew_before
        return self._url

    def _next_length(self, size: int) -> int:
        return min(size - self.offset, READ_CHUNK)

    def _consume(self, data: bytes) -> str:
        # Advance only by what arrived: a failed read is retried from the same byte.
        self.offset += len(data)
        return self._decoder.decode(data)

    def _final(self) -> str:
        return self._decoder.decode(b"", final=True)

    def _read_failed(self, err: HttpResponseError, attempt: int) -> bool:
        """After a refused read: True to renew the link and try once more, False to look again
        next round; the error itself when it is not about the link."""
        status = getattr(err, "status_code", None)
        if status in (401, 403) and attempt == 0:
            log.debug("the download link was refused (HTTP %s); renewing it", status)
            self._url = None  # expired or revoked: fetch a fresh one and try again
            return True
        if status == 404:
            self._url = None  # listed but gone (or moved): look again next round
            return False
        raise err
