"""What every command shares: the parsed command line with the target it names (``Context``),
the mistakes argparse cannot see (``UsageError``), the exit statuses and the program name."""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # imported where used: parsing the command line needs none of them
    from .. import Experiment, FileShare, Job, Target, Workspace


EXIT_OK = 0
EXIT_FAILED = 1      # a job failed, or a request did
EXIT_USAGE = 2       # a mistake in the command line or its inputs; nothing was changed
EXIT_NOT_FOUND = 3   # the resource (or the local service) does not exist
EXIT_TIMEOUT = 4     # a wait ran out of time
EXIT_CONFLICT = 5    # the resource exists with other settings (a resubmit that differs, say)
EXIT_INTERRUPTED = 130

PROG = "horovod-batchai"


class UsageError(Exception):
    """A mistake in the command line that argparse cannot see (option combinations)."""


def local_state_dir(args: argparse.Namespace) -> Optional[Path]:
    """``--state-dir`` checked (a directory, or a path where one can be made); None for the default."""
    from .._models.errors import InvalidSpecError
    from .._shared.target import check_state_dir
    if not args.state_dir:
        return None
    try:
        return check_state_dir(args.state_dir)
    except InvalidSpecError as err:
        raise UsageError(f"--state-dir: {err.problem} (valid: {err.valid_form})") from None


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """The azure-core client options the command line gives every client of the target."""
    options: dict[str, Any] = {}
    if getattr(args, "proxy", None):
        options["proxies"] = {"http": args.proxy, "https": args.proxy}
    if getattr(args, "retries", None) is not None:
        options["retry_total"] = args.retries
    return options


class Context:
    """The parsed command line and the target it names, built on first use."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._target: Optional[Target] = None

    @property
    def target(self) -> Target:
        if self._target is None:
            from .. import Target
            args = self.args
            if args.target in ("azure", "azureml") and not args.subscription:
                raise UsageError(f"--subscription (or $AZURE_SUBSCRIPTION_ID) is required with --target {args.target}")
            options = client_options(args)
            if args.target == "azure":
                self._target = Target.azure(args.subscription, **options)
            elif args.target == "azureml":
                group = getattr(args, "resource_group", None) or os.environ.get("AZURE_RESOURCE_GROUP")
                workspace = getattr(args, "workspace", None) or os.environ.get("AZUREML_WORKSPACE_NAME")
                if not group or not workspace:
                    raise UsageError("--target azureml works in one Azure ML workspace: give -g and -w (or "
                                     "$AZURE_RESOURCE_GROUP and $AZUREML_WORKSPACE_NAME)")
                self._target = Target.azureml(args.subscription, group, workspace, **options)
            else:
                kwargs: dict[str, Any] = {"state_dir": local_state_dir(args)}
                if args.subscription:
                    kwargs["subscription_id"] = args.subscription
                self._target = Target.local(**kwargs, **options)
        return self._target

    def close(self) -> None:
        if self._target is not None:
            self._target.close()

    def workspace(self, name: Optional[str] = None) -> Workspace:
        from .. import Workspace
        return Workspace(self.target, self.args.resource_group, name or self.args.workspace)

    def experiment(self) -> Experiment:
        from .. import Experiment
        return Experiment(self.workspace(), self.args.experiment)

    def job(self, name: Optional[str] = None) -> Job:
        from .. import Job
        return Job(self.experiment(), name or self.args.name)

    def share(self) -> FileShare:
        from .. import FileShare
        return FileShare.get(self.target, self.args.resource_group, self.args.account_name, self.args.share_name)


def local_dest(text: str) -> Path:
    """``--dest``: a path ending in '/' names a directory, created when missing (``Path`` would
    drop the slash, so the option is kept as text until here)."""
    dest = Path(text).expanduser()
    if text.endswith(("/", os.sep)):
        dest.mkdir(parents=True, exist_ok=True)
    return dest
