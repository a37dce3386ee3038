"""The exceptions this package raises. Every one derives from :class:`HorovodBatchAIError`::

    HorovodBatchAIError
     ├── InvalidSpecError        (also ValueError) a user mistake caught before any request is
     │                           sent: names the field and the valid form
     ├── TargetError             where to run is misconfigured (environment, endpoint, credential)
     │    └── LocalServiceDownError  (also ConnectionError) the local service refused connections
     │                           for longer than a restart takes; says how to start it
     ├── ResourceError           (also azure.core.exceptions.HttpResponseError) a call to Azure or
     │    │                      the local service failed; carries the resource it concerned and
     │    │                      the azure-core error as ``__cause__`` / ``.azure_error``
     │    ├── NotFoundError      (also azure.core.exceptions.ResourceNotFoundError)
     │    └── ConflictError      (also azure.core.exceptions.ResourceExistsError)
     ├── TransferError           an upload or download did not arrive intact
     ├── WaitTimeoutError        (also TimeoutError) a wait ran out of time
     ├── StoppedError            a wait, stream or transfer was stopped through its ``stop`` event
     ├── ClusterNotReadyError    the cluster reported errors or unusable nodes while waited on
     ├── JobFailedError          the job ended ``failed``: exit code, service errors, stderr tail
     └── MissingDependencyError  (also ImportError) an optional package a feature needs (matplotlib,
                                 pandas) is not installed; says what to install

Because :class:`ResourceError` and its subclasses are also azure-core exceptions, code written
against Microsoft's clients (``except ResourceNotFoundError``) keeps working. Messages never carry
secrets: they are built from resource ids, codes and the service's error messages only.

Every one pickles (a process pool hands a worker's exception back to its caller that way) with its
message and attributes, but without the HTTP response, the request behind it or the azure-core
error it wraps: those hold headers and connections, not facts the caller acts on.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Sequence

from azure.core.exceptions import AzureError, HttpResponseError
from azure.core.exceptions import ResourceExistsError as _AzureExists
from azure.core.exceptions import ResourceNotFoundError as _AzureNotFound

__all__ = [
    "HorovodBatchAIError", "InvalidSpecError", "TargetError", "LocalServiceDownError", "ResourceError", "NotFoundError",
    "ConflictError", "TransferError", "WaitTimeoutError", "StoppedError", "ClusterNotReadyError", "JobFailedError",
    "ServiceErrorDetail", "MissingDependencyError", "wrap_azure_error", "import_optional", "redact", "azure_errors",
    "is_not_found", "service_error_code",
]


class HorovodBatchAIError(Exception):
    """Base class of every exception this package raises."""

    def __reduce__(self) -> tuple[Any, ...]:
        # The subclasses take keyword-only arguments that pickle's default (cls(*args)) would miss.
        state = {name: None if name in _NOT_PICKLED else value for name, value in vars(self).items()
                 if not name.startswith("_")}
        return (_rebuild_error, (type(self), self.args, state))


#: attributes of an exception that stay behind (None on the other side) when it is pickled:
#: azure-core's response and the request it carries, the wrapped error, the one it was raised in
_NOT_PICKLED = frozenset({"response", "azure_error", "model", "error", "exc_type", "exc_value", "exc_traceback", "exc_msg",
                          "inner_exception"})


def _rebuild_error(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    err = cls.__new__(cls)
    BaseException.__init__(err, *args)
    vars(err).update(state)
    return err


class InvalidSpecError(HorovodBatchAIError, ValueError):
    """A value the caller gave is not valid; nothing was sent or changed.

    ``field`` names the offending field as the caller wrote it: the Python argument
    (``"node_count"``) or, for a job.json, the property path (``"properties.nodeCount"``), in which
    case ``source`` names the file. ``valid_form`` says what would be accepted.
    """

    def __init__(self, field: str, problem: str, valid_form: str = "", *, source: Optional[str] = None) -> None:
        self.field = field
        self.problem = problem
        self.valid_form = valid_form
        self.source = source
        message = f"{source}: {field}: {problem}" if source else f"{field}: {problem}"
        if valid_form:
            message += f" (valid: {valid_form})"
        super().__init__(message)


class TargetError(HorovodBatchAIError):
    """Where to run is misconfigured: an unknown target, a missing subscription, a non-https endpoint."""


class LocalServiceDownError(TargetError, ConnectionError):
    """The local service refused connections for longer than a restart takes (and could not be
    started again from here); the message says how to start it."""


class ResourceError(HorovodBatchAIError, HttpResponseError):
    """A request to Azure (or the local service) failed after the client's own retries.

    ``resource`` names what the request concerned (a resource id or ``account/share/path``),
    ``status_code`` / ``error_code`` come from the response when there was one, and the original
    azure-core exception is ``azure_error`` (and ``__cause__``).
    """

    def __init__(self, message: str, *, resource: str, azure_error: Optional[AzureError] = None) -> None:
        response = getattr(azure_error, "response", None)
        HttpResponseError.__init__(self, message=message, response=response)
        self.message = message  # azure-core replaces it with the response's error text; keep ours
        self.args = (message,)
        self.resource = resource
        self.azure_error = azure_error
        self.error_code: Optional[str] = service_error_code(azure_error) if azure_error is not None else None
        if self.status_code is None and azure_error is not None:
            self.status_code = getattr(azure_error, "status_code", None)

    def __str__(self) -> str:
        return self.message


class NotFoundError(ResourceError, _AzureNotFound):
    """The resource does not exist (HTTP 404)."""


class ConflictError(ResourceError, _AzureExists):
    """The resource exists already or is in a state that forbids the request (HTTP 409)."""


class TransferError(HorovodBatchAIError):
    """A file was uploaded or downloaded, but what arrived differs from what was sent."""


class WaitTimeoutError(HorovodBatchAIError, TimeoutError):
    """A wait ran out of time; ``last_state`` says where things stood."""

    def __init__(self, message: str, *, last_state: Any = None) -> None:
        super().__init__(message)
        self.last_state = last_state


class StoppedError(HorovodBatchAIError):
    """The caller set the ``stop`` event given to a wait, a stream or a transfer (from another
    thread); the operation stopped there. Nothing on the service was changed by stopping: a job
    waited on runs on (terminate it if that is what is wanted), a transfer's unfinished file is
    removed as on any other interruption. ``last_state`` says where things stood, when known."""

    def __init__(self, message: str = "stopped by the caller's stop event", *, last_state: Any = None) -> None:
        super().__init__(message)
        self.last_state = last_state


class ClusterNotReadyError(HorovodBatchAIError):
    """The cluster cannot become ready: it reports errors, or nodes went unusable."""

    def __init__(self, message: str, *, errors: Sequence["ServiceErrorDetail"] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)


class ServiceErrorDetail:
    """One error the service reported on a job or cluster (``code``, ``message``, ``details``)."""

    __slots__ = ("code", "message", "details")

    def __init__(self, code: str, message: str, details: Sequence[tuple[str, str]] = ()) -> None:
        self.code = code
        self.message = message
        self.details = list(details)

    def __repr__(self) -> str:
        return f"ServiceErrorDetail(code={self.code!r}, message={self.message!r})"

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ServiceErrorDetail) and (self.code, self.message, self.details)
                == (other.code, other.message, other.details))


class JobFailedError(HorovodBatchAIError):
    """The job ended ``failed``. ``exit_code`` is None when the job never ran its command.

    The message's first line says what happened: terminated (by whom, as the service says), never
    started (and why), or failed with the script's own last error; then the service's errors and
    the last lines of ``stderr.txt`` without horovodrun's launcher traceback (``stderr_tail`` keeps
    them all)."""

    def __init__(self, job_name: str, *, exit_code: Optional[int], errors: Sequence[ServiceErrorDetail],
                 stderr_tail: str) -> None:
        self.job_name = job_name
        self.exit_code = exit_code
        self.errors = list(errors)
        self.stderr_tail = stderr_tail
        script_lines, rank_code = _without_launcher(stderr_tail.rstrip("\n").splitlines())
        lines = [f"job {job_name!r} {_what_happened(exit_code, self.errors, script_lines, rank_code)}"]
        lines += [f"  service error {err}" for err in self.errors]
        if script_lines:
            lines.append("  last lines of stderr.txt" + (" (horovodrun's traceback left out):"
                                                         if rank_code is not None else ":"))
            lines += ["    " + line for line in script_lines]
        super().__init__("\n".join(lines))


#: a script's own error line: an exception (``ValueError: ...``) or argparse's ``prog: error: ...``
_SCRIPT_ERROR = re.compile(r"^(?:[\w.]*(?:Error|Exception|Exit|Interrupt)\b.*|\S+: error: .*)$")
#: where horovodrun's own traceback starts, and the failed rank's code it ends with
_LAUNCHER = re.compile(r"horovod[/\\]runner[/\\]|runner[/\\]horovodrun\.py")
_RANK_CODE = re.compile(r"^Exit code: (-?\d+)$")


def _without_launcher(lines: list[str]) -> tuple[list[str], Optional[int]]:
    """``lines`` without horovodrun's launcher traceback (the one whose frames are horovod's runner),
    and the exit code of the rank it reports (None when there is no such traceback)."""
    for start, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):") and start + 1 < len(lines) \
                and _LAUNCHER.search(lines[start + 1]):
            codes = [int(m.group(1)) for m in map(_RANK_CODE.match, lines[start:]) if m]
            return lines[:start], (codes[-1] if codes else None)
    return lines, None


def _what_happened(exit_code: Optional[int], errors: Sequence[ServiceErrorDetail], script_lines: Sequence[str],
                   rank_code: Optional[int]) -> str:
    terminated = next((e for e in errors if e.code == "JobTerminated"), None)
    if terminated is not None:
        return f"was terminated: {terminated.message}"
    if exit_code is None:
        return "never ran its command: " + (str(errors[0]) if errors else "the service gave no reason")
    cause = next((line.strip() for line in reversed(script_lines) if _SCRIPT_ERROR.match(line.strip())), None)
    said = f"failed with exit code {exit_code}"
    if rank_code is not None and rank_code != exit_code:
        said += f" (a process exited with {rank_code})"
    return f"{said}: {cause}" if cause else said


def wrap_azure_error(err: AzureError, *, action: str, resource: str) -> ResourceError:
    """The package's exception for ``err``, raised by a request that ``action``-ed ``resource``.

    The message is built from the status and the service's own error message; URLs (which may
    carry a SAS) and request bodies (which may carry keys) are never included.
    """
    status = getattr(err, "status_code", None)
    service_message = _service_message(err)
    where = f"{action} {resource}"
    text = f"{where} failed" + (f" with HTTP {status}" if status else "") + (f": {service_message}" if service_message else "")
    cls: type[ResourceError] = ResourceError
    if status == 404 or isinstance(err, _AzureNotFound):
        cls = NotFoundError
    elif status == 409 or isinstance(err, _AzureExists):
        cls = ConflictError
    wrapped = cls(text, resource=resource, azure_error=err)
    wrapped.__cause__ = err
    return wrapped


@contextmanager
def azure_errors(action: str, resource: str) -> Iterator[None]:
    """Turn azure-core errors raised inside the block into :class:`ResourceError` for ``resource``."""
    try:
        yield
    except HorovodBatchAIError:
        raise
    except AzureError as err:
        raise wrap_azure_error(err, action=action, resource=resource) from err


class MissingDependencyError(HorovodBatchAIError, ImportError):
    """An optional package that a feature needs is not installed; the message says what to install."""

    def __init__(self, feature: str, package: str, extra: str = "notebook") -> None:
        self.package = package
        super().__init__(f"{feature} needs {package}, which is not installed: "
                         f"pip install 'horovod-batchai[{extra}]' (or pip install {package})")


def import_optional(module: str, feature: str, extra: str = "notebook") -> Any:
    """``module`` imported, or :class:`MissingDependencyError` naming ``feature`` and what to install."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(feature, module.split(".")[0], extra) from None


def is_not_found(err: BaseException) -> bool:
    return isinstance(err, _AzureNotFound) or getattr(err, "status_code", None) == 404


def service_error_code(err: AzureError) -> Optional[str]:
    """The service's error code: storage's ``x-ms-error-code``, else the ``code`` of the ARM
    error body (``{"error": {"code": ...}}``), which azure-core parses into ``err.error``."""
    code = getattr(err, "error_code", None) or getattr(getattr(err, "error", None), "code", None)
    if not code:
        body = _error_body(err)
        code = body.get("code") if isinstance(body, dict) else None
    return str(code) if code else None


def _error_body(err: AzureError) -> Any:
    """The ``error`` object of the response's JSON body, when it has one."""
    response = getattr(err, "response", None)
    try:
        import json
        document = json.loads(response.text()) if response is not None else None
    except Exception:  # not JSON, or no body: there is no error object to read
        return None
    return document.get("error") if isinstance(document, dict) else None


def _service_message(err: AzureError) -> str:
    """The service's error code and message, and the messages of its details (where an ARM
    error says which field was wrong), without anything that came from the request."""
    model = getattr(err, "error", None)
    code = service_error_code(err)
    message = getattr(model, "message", None) or getattr(err, "message", None) or type(err).__name__
    # Storage errors put the whole response (request id, time) in the message; keep its first line.
    text = str(message).strip()
    first = redact(text.splitlines()[0]) if text else ""
    if code and first and str(code) not in first:
        first = f"{code}: {first}"
    first = first or str(code or "")
    details = [(getattr(d, "code", None), getattr(d, "message", None)) for d in getattr(model, "details", None) or []]
    shown = []
    for detail_code, detail_message in details:
        line = redact(str(detail_message or "").strip().splitlines()[0]) if detail_message else ""
        line = f"{detail_code}: {line}" if detail_code and line else line or str(detail_code or "")
        if line and line not in shown:
            shown.append(line)
    return first + "".join(f"; {line}" for line in shown[:5])


# A query string is a "?" followed by key=value pairs; a "?" in prose ("any of * ?") is left alone.
_QUERY = re.compile(r"\?(?=[^\s'\")]*=)[^\s'\")]*")
_SECRET_MARKERS = re.compile(r"(SharedKey\s+|Bearer\s+|AccountKey=|sig=)[^\s&;,'\"]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with URL query strings (where SAS signatures travel) and credentials cut out."""
    return _SECRET_MARKERS.sub(r"\1<redacted>", _QUERY.sub("?<query redacted>", text))
