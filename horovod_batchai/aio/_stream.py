"""Following a job's output file from the event loop: :class:`AsyncOutputStream`, the async
iterator of :meth:`horovod_batchai.aio.Job.stream`.

What it keeps between reads and decides -- the offset, the incremental decoder, when to renew
the download link, what a refused read means -- is the sync stream's
(:class:`horovod_batchai._stream.StreamCursor`); only the loop is awaited here.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator, Optional

from azure.core.exceptions import HttpResponseError

from .._models.errors import azure_errors
from .._shared.stream import StreamCursor

if TYPE_CHECKING:
    from ._job import Job

__all__ = ["AsyncOutputStream"]


class AsyncOutputStream(StreamCursor, AsyncIterator[str]):
    """An async iterator of text appended to a job's output file, until the job ends. Build it
    with :meth:`horovod_batchai.aio.Job.stream`; ``offset`` and ``links_fetched`` are as on the
    sync :class:`~horovod_batchai.OutputStream`. Leaving the ``async for`` early (or cancelling
    it) stops the polling at once; :meth:`aclose` does the same explicitly."""

    def __init__(self, job: "Job", name: str, **options: Any) -> None:
        super().__init__(job, name, **options)  # type: ignore[arg-type]
        self._job_async = job
        self._iterator: AsyncGenerator[str, None] = self._generate()

    def __aiter__(self) -> "AsyncOutputStream":
        return self

    async def __anext__(self) -> str:
        return await self._iterator.__anext__()

    async def aclose(self) -> None:
        """End the iteration now; the next ``__anext__`` raises ``StopAsyncIteration``."""
        await self._iterator.aclose()

    async def _generate(self) -> AsyncGenerator[str, None]:
        polling = self._polling = self._new_polling()
        job = self._job_async
        while True:
            finished = (await job.refresh()).execution_state.is_terminal()
            # Reading after seeing the terminal state guarantees one read after the job ended.
            async for text in self._read_new():
                yield text
            if finished:
                tail = self._final()
                if tail:
                    yield tail
                return
            if polling.expired():
                raise self._timeout_error(job.execution_state)
            await asyncio.sleep(polling.next_pause())

    async def _read_new(self) -> AsyncGenerator[str, None]:
        for attempt in range(2):
            url = await self._link()
            if url is None:
                return  # not written yet
            remote = await self._job_async._backend.open_output(url)
            try:
                with azure_errors("reading", self._where()):
                    size = await remote.size()
                    while size > self.offset:
                        data = await remote.read(self.offset, self._next_length(size))
                        if not data:
                            break
                        text = self._consume(data)
                        if text:
                            yield text
                return
            except HttpResponseError as err:  # ClientAuthenticationError and ResourceNotFoundError among them
                if not self._read_failed(err, attempt):
                    return
            finally:
                await remote.close()

    async def _link(self) -> Optional[str]:
        """The file's download link, fetched again when it is about to expire."""
        url = self._valid_link()
        if url is not None:
            return url
        return self._take_link(await self._job_async.list_output_files(
            output_directory_id=self._output_directory_id, directory=self._directory, link_expiry_minutes=self._link_expiry_minutes))
