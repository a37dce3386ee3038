"""``main``: parse the command line, run the command, print its result (``--output``,
``--query``) and turn what it raised into an exit status."""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import warnings
from typing import Any, Callable, Optional, Sequence

from azure.core.exceptions import AzureError, ResourceExistsError, ResourceNotFoundError

from .. import (ClusterNotReadyError, ConflictError, HorovodBatchAIError, InvalidSpecError, JobFailedError,
                NotFoundError, TargetError, TransferError, WaitTimeoutError)
from .._models.errors import redact
from .context import (EXIT_CONFLICT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NOT_FOUND, EXIT_TIMEOUT, EXIT_USAGE, PROG,
                      Context, UsageError)
from .parser import _Commands, _global_options, _Parser, glue_free_text
from .views import Result


#: the command groups in --help's order: name, help, and the module and function that add the
#: group's verbs (imported when the group is named: a command does not pay for the others' imports)
GROUPS: tuple[tuple[str, str, str], ...] = (
    ("workspace", "Batch AI workspaces (and their resource group)", "workspace:register"),
    ("experiment", "experiments: named groups of jobs in a workspace", "experiment:register"),
    ("cluster", "GPU clusters", "cluster:register"),
    ("job", "jobs: submit, watch, stream, stop", "job:register"),
    ("sweep", "sweeps of trial jobs over hyper-parameters", "sweep:register"),
    ("share", "Azure file shares (and their storage account)", "storage:register_share"),
    ("directory", "directories in a file share", "storage:register_directory"),
    ("file", "files in a file share", "storage:register_file"),
    ("local", "the local service (state, jobs and files on this machine)", "local:register"),
)


def _registrar(where: str) -> Callable[[_Commands, Any], None]:
    module, function = where.split(":")
    return getattr(importlib.import_module(f".{module}", __package__), function)


def build_parser(argv: Optional[Sequence[str]] = None) -> argparse.ArgumentParser:
    """The command line's parser; given ``argv``, only the groups it names get their verbs (a
    group's verb parsers take a pipeline step's command a few milliseconds each to build, and a
    command line runs one verb)."""
    parser = _Parser(prog=PROG, description="Batch AI workspaces, clusters, jobs and file shares, on Azure or the "
                                            "local service.", epilog="exit status: 0 ok, 1 failed, 2 usage, "
                                                                    "3 not found, 4 timeout, 5 conflict")
    _global_options(parser, suppress=False)
    commands = _Commands(parser)
    for name, text, where in GROUPS:
        verbs = commands.group(name, text)
        if argv is None or name in argv:
            _registrar(where)(commands, verbs)
    return parser


# -- output ---------------------------------------------------------------------------------------
def _query(data: Any, path: str) -> Any:
    """``a.b[0].c`` in ``data``; a missing key is a usage mistake naming what exists."""
    value = data
    for part in path.replace("]", "").replace("[", ".").split("."):
        if not part:
            continue
        if isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            keys = ", ".join(value) if isinstance(value, dict) else f"an index below {len(value)}" \
                if isinstance(value, list) else "nothing: it is a single value"
            raise UsageError(f"--query: {path!r} has no {part!r}; what is there: {keys}")
    return value


def _print(result: Result, args: argparse.Namespace) -> None:
    if result.quiet:
        return
    if args.query:
        value = _query(result.json_data(), args.query)
        if args.output == "table" and not isinstance(value, (dict, list)):
            print("" if value is None else value)
        else:
            print(json.dumps(value, indent=2))
        return
    if args.output == "json" or result.table is None:
        print(json.dumps(result.json_data(), indent=2))
    else:
        print(result.table.render())


def _log_steps(verbose: bool) -> Callable[[], None]:
    """With ``-v``, this package's steps go to stderr (not azure-core's HTTP lines); returns what
    undoes it, so that ``main`` called in-process leaves logging as it found it."""
    if not verbose:
        return lambda: None
    package = logging.getLogger("horovod_batchai")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    level = package.level
    package.addHandler(handler)
    package.setLevel(logging.INFO)

    def restore() -> None:
        package.removeHandler(handler)
        package.setLevel(level)
    return restore


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      file: Any = None, line: Optional[str] = None) -> None:
    """A warning said as the tool says an error: one line, without the source file and line that
    Python's default shows (they tell a user of the command nothing)."""
    print(f"{PROG}: warning: {redact(str(message))}", file=sys.stderr)


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {redact(message)}", file=sys.stderr)
    return code


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command; returns the exit status (see the package docstring)."""
    words = glue_free_text(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(words)
    try:
        args = parser.parse_args(words)
    except SystemExit as exit_:  # usage mistakes and --help
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else EXIT_USAGE
    ctx = Context(args)
    restore_logging = _log_steps(args.verbose)
    # Warnings one line each, for this command only (main called in-process leaves them as it found them).
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        return _run(args, ctx, restore_logging)


def _run(args: argparse.Namespace, ctx: Context, restore_logging: Callable[[], None]) -> int:
    try:
        result = args.func(ctx)
        _print(result, args)
        if result.error:
            return _fail(result.error, result.exit_code)
        return result.exit_code
    except (UsageError, InvalidSpecError, TargetError) as err:
        return _fail(str(err), EXIT_USAGE)
    except (NotFoundError, ResourceNotFoundError) as err:
        return _fail(str(err), EXIT_NOT_FOUND)
    except (WaitTimeoutError, TimeoutError) as err:
        return _fail(str(err), EXIT_TIMEOUT)
    except (ConflictError, ResourceExistsError) as err:
        return _fail(str(err), EXIT_CONFLICT)
    except (JobFailedError, ClusterNotReadyError, TransferError, HorovodBatchAIError) as err:
        return _fail(str(err), EXIT_FAILED)
    except AzureError as err:
        return _fail(f"{type(err).__name__}: {err}", EXIT_FAILED)
    except OSError as err:  # a local file that cannot be read or written
        return _fail(f"{err.strerror or type(err).__name__}: {err.filename or err}", EXIT_FAILED)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # a bug: say so in one line, the traceback only when asked
        from ..local import ServiceAlreadyRunning  # imported here: most commands never start the service
        if isinstance(err, ServiceAlreadyRunning):  # e.g. one running with another node runtime
            return _fail(str(err), EXIT_FAILED)
        if args.debug:
            raise
        return _fail(f"unexpected {type(err).__name__}: {err} (run again with --debug for the traceback)",
                     EXIT_FAILED)
    finally:
        ctx.close()
        restore_logging()
