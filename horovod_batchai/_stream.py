"""Following a job's output file as it grows (``az batchai job file stream``).

The file is found through ``listOutputFiles`` (which hands out SAS download links) and read with
ranged GETs from the last byte received. Links are renewed before they expire (or at once if one
is refused); the offset advances only by bytes actually received, so a dropped connection neither
loses nor repeats anything; UTF-8 is decoded incrementally so that a character split across two
reads comes out whole; and once the job is terminal one last read picks up the tail. Its pauses
and its stop event are :class:`Polling`'s, as for every other wait: setting ``stop`` ends the
iteration (between two polls, or between two chunks of a backlog) with :class:`StoppedError`.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Generator, Iterator, Optional

from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ResourceNotFoundError

from ._models.errors import azure_errors
from ._shared.stream import StreamCursor

if TYPE_CHECKING:
    from ._job import Job

__all__ = ["OutputStream"]

log = logging.getLogger(__name__)


class OutputStream(StreamCursor, Iterator[str]):
    """An iterator of text appended to a job's output file. Build it with :meth:`Job.stream`.

    ``offset`` is the number of bytes consumed so far; ``links_fetched`` counts the output file
    listings made to obtain or renew the download link. ``wall_clock`` tells link expiry times;
    ``clock`` and ``sleep`` drive the polling (see :class:`Polling`); ``stop`` (a
    ``threading.Event``) set by another thread ends it with :class:`StoppedError`.

    A stream is an iterator with a position: read it from one thread at a time.
    """

    def __init__(self, job: "Job", name: str, **options: Any) -> None:
        super().__init__(job, name, **options)
        self._iterator: Generator[str, None, None] = self._generate()

    def __iter__(self) -> "OutputStream":
        return self

    def __next__(self) -> str:
        return next(self._iterator)

    def close(self) -> None:
        """End the iteration now; the next ``next()`` raises ``StopIteration``."""
        self._iterator.close()

    # -- the loop -------------------------------------------------------------------------------
    def _generate(self) -> Generator[str, None, None]:
        # The deadline counts from the first read, not from when the stream was made.
        polling = self._polling = self._new_polling()
        while True:
            polling.check_stopped(self._what)
            finished = self._job._fetch().status.execution_state.is_terminal()
            # Reading after seeing the terminal state guarantees one read after the job ended.
            yield from self._read_new()
            if finished:
                tail = self._final()
                if tail:
                    yield tail
                return
            if polling.expired():
                raise self._timeout_error(self._job.execution_state)
            polling.pause()

    def _read_new(self) -> Iterator[str]:
        for attempt in range(2):
            url = self._link()
            if url is None:
                return  # not written yet
            remote = self._job._backend.open_output(url)
            try:
                with azure_errors("reading", self._where()):
                    size = remote.size()
                    while size > self.offset:
                        if self._polling is not None:
                            self._polling.check_stopped(self._what)
                        data = remote.read(self.offset, self._next_length(size))
                        if not data:
                            break
                        text = self._consume(data)
                        if text:
                            yield text
                return
            except (ClientAuthenticationError, ResourceNotFoundError, HttpResponseError) as err:
                if not self._read_failed(err, attempt):
                    return

    def _link(self) -> Optional[str]:
        """The file's download link, fetched again when it is about to expire."""
        url = self._valid_link()
        if url is not None:
            return url
        return self._take_link(self._job.list_output_files(output_directory_id=self._output_directory_id,
                                                           directory=self._directory,
                                                           link_expiry_minutes=self._link_expiry_minutes))
