"""The argparse plumbing every command group uses: the parser class, the global options, the
option types and the options several commands share."""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Callable, Optional

from .. import AzureFileShareMount, HorovodJob, InvalidSpecError
from .context import EXIT_USAGE, Context, UsageError
from .views import Result


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def _positive(text: str) -> int:
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):  # 0: look once, as the SDK's timeout=0
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text}")
    return value


#: options whose value is free text that may itself start with '-' ("--append-args '--epochs=3'")
FREE_TEXT_OPTIONS = ("--append-args",)


def glue_free_text(argv: list[str]) -> list[str]:
    """``--append-args --epochs=3`` as ``--append-args=--epochs=3``: argparse would take a value
    starting with '-' for an option of its own and refuse the command line."""
    glued: list[str] = []
    words = iter(argv)
    for word in words:
        if word in FREE_TEXT_OPTIONS:
            value = next(words, None)
            glued.append(word if value is None else f"{word}={value}")
        else:
            glued.append(word)
    return glued


def _proxy(text: str) -> str:
    from urllib.parse import urlparse
    parsed = urlparse(text)
    try:
        port = parsed.port
    except ValueError:
        port = -1
    if "@" in parsed.netloc:  # the value is not echoed: it holds a password
        raise argparse.ArgumentTypeError("a proxy with a user name or password does not belong on the command line "
                                         "(every user of the machine can read it); set $HTTPS_PROXY instead")
    if parsed.scheme not in ("http", "https") or not parsed.hostname or port == -1 or parsed.path not in ("", "/"):
        raise argparse.ArgumentTypeError(f"expected a proxy URL like http://proxy.example.com:3128, got {text!r}")
    return text


def _retries(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of retries (0 or more), got {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a number of retries from 0 to 100, got {value}")
    return value


def _global_options(parser: argparse.ArgumentParser, *, suppress: bool, with_target: bool = True) -> None:
    """Options every command takes, before or after the verb. On the sub-commands their default
    is SUPPRESS, so that a value given before the verb is not overwritten by the default.
    ``cluster create`` and ``resize`` use ``--target N`` for the node count, as ``az`` did, so
    there the global ``--target local|azure`` goes before the verb."""
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options")
    if with_target:
        group.add_argument("--target", choices=("local", "azure", "azureml"),
                           default=default(os.environ.get("HOROVOD_BATCHAI_TARGET", "local").strip().lower()
                                           or "local"),
                           help="where to run: the local service (default), Azure Machine Learning (azureml) "
                                "or Batch AI's API on Azure (azure) ($HOROVOD_BATCHAI_TARGET)")
    group.add_argument("--subscription", default=default(os.environ.get("AZURE_SUBSCRIPTION_ID")),
                       help="Azure subscription id ($AZURE_SUBSCRIPTION_ID); required with --target azure/azureml")
    group.add_argument("--proxy", type=_proxy, default=default(None), metavar="URL",
                       help="send every request (management, storage, Azure ML) through this HTTP(S) proxy, e.g. "
                            "http://proxy.example.com:3128; without it $HTTPS_PROXY / $HTTP_PROXY / $NO_PROXY apply "
                            "(put a proxy password there, never on the command line)")
    group.add_argument("--retries", type=_retries, default=default(None), metavar="N",
                       help="retry a failed request at most N times (azure-core's retry_total; default: each "
                            "client's own, 3 to 10)")
    group.add_argument("--state-dir", type=Path, default=default(None),
                       help="the local service's state directory ($HOROVOD_BATCHAI_STATE_DIR, else "
                            "~/.horovod-batchai/local); a service running for it is reused, else one is started")
    group.add_argument("-o", "--output", choices=("table", "json"), default=default("table"),
                       help="table (default) or json")
    group.add_argument("--json", dest="output", action="store_const", const="json", default=default("table"),
                       help="same as --output json")
    group.add_argument("--query", default=default(None), metavar="PATH",
                       help="print one value of the JSON result, e.g. executionState or nodeStateCounts.idleNodeCount")
    group.add_argument("--progress", action="store_true", default=default(False),
                       help="show progress bars for uploads and downloads")
    group.add_argument("-v", "--verbose", action="store_true", default=default(False),
                       help="log each request's purpose to stderr")
    group.add_argument("--debug", action="store_true", default=default(False),
                       help="print a traceback for unexpected errors")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        # One line, as every other error is; the whole usage is one --help away.
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Commands:
    """Builds the command groups: a verb is a parser with its function and the options it shares."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self._groups = parser.add_subparsers(dest="group", metavar="COMMAND", required=True, parser_class=_Parser)

    def group(self, name: str, text: str) -> Any:
        p = self._groups.add_parser(name, help=text, description=text)
        return p.add_subparsers(dest="verb", metavar="VERB", required=True, parser_class=_Parser)

    @staticmethod
    def command(sub: Any, name: str, func: Callable[[Context], Result], text: str, *,
                with_target: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text, description=text)
        p.set_defaults(func=func)
        _global_options(p, suppress=True, with_target=with_target)
        return p


def _rg(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("-g", "--resource-group", required=required, help="resource group")


def _ws(p: argparse.ArgumentParser) -> None:
    _rg(p)
    p.add_argument("-w", "--workspace", required=True, help="workspace")


def _exp(p: argparse.ArgumentParser) -> None:
    _ws(p)
    p.add_argument("-e", "--experiment", required=True, help="experiment")


def _name(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("-n", "--name", required=True, help=f"{what} name")


def _timeout(p: argparse.ArgumentParser, default: Optional[float], what: str) -> None:
    p.add_argument("--timeout", type=_seconds, default=default,
                   help=f"seconds to wait for {what} (default: {default or 'no limit'}); exit 4 after")


def _account(p: argparse.ArgumentParser) -> None:
    _rg(p)
    p.add_argument("--account-name", required=True, help="storage account")
    p.add_argument("--share-name", required=True, help="file share")


def _scale(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--target", dest="target_nodes", type=_count, default=None, metavar="N",
                   help="a fixed number of nodes")
    p.add_argument("--min", type=_count, default=None, help="auto-scale: fewest nodes")
    p.add_argument("--max", type=_positive, default=None, help="auto-scale: most nodes")
    p.add_argument("--initial", type=_count, default=None, help="auto-scale: nodes to start with (default 0)")
    p.add_argument("--wait", action="store_true", help="wait until the cluster is steady and its nodes idle")
    _timeout(p, 900.0, "the cluster")


STORAGE_ACCOUNT_ENV = "AZURE_BATCHAI_STORAGE_ACCOUNT"  # what az batchai job create read too


def job_spec_from_args(ctx: Context) -> HorovodJob:
    """The job.json, with storage placeholders and keys filled, the node count and arguments varied."""
    args = ctx.args
    if args.package_environment and args.target != "azureml":
        raise UsageError("--package-environment: only Azure ML builds the package's Docker environment; "
                         f"drop it with --target {args.target}")
    if not args.config_file.is_file():
        raise InvalidSpecError("--config-file", f"{str(args.config_file)!r} is not a file", "the path of a job.json")
    spec = HorovodJob.from_file(args.config_file)
    if args.package_environment:
        _check_package_environment(spec, args.config_file)
    account = args.storage_account_name or os.environ.get(STORAGE_ACCOUNT_ENV)
    if spec.needs_storage:
        if not account:
            raise InvalidSpecError("--storage-account-name", f"{args.config_file} mounts a file share whose "
                                   "storage account or key is not given",
                                   f"--storage-account-name NAME (or ${STORAGE_ACCOUNT_ENV}), the account that "
                                   "<AZURE_BATCHAI_STORAGE_ACCOUNT> stands for")
        share_name = next((m.share_name for m in spec.mounts if isinstance(m, AzureFileShareMount)), None) or "myshare"
        from .. import FileShare
        share = FileShare(ctx.target, args.storage_resource_group or args.resource_group, account, share_name)
        spec = spec.with_storage(share)
    changes: dict[str, Any] = {}
    if args.append_args:
        changes["arguments"] = f"{spec.arguments} {args.append_args}".strip()
    if args.node_count is not None:
        changes["node_count"] = args.node_count
        if spec.process_count is not None:
            # Keep the processes per node of the file (one per node unless it said otherwise).
            per_node = spec.process_count // spec.node_count if spec.process_count % spec.node_count == 0 else None
            changes["process_count"] = per_node * args.node_count if per_node else None
    return spec.replace(**changes) if changes else spec


def _check_package_environment(spec: HorovodJob, path: Path) -> None:
    """The package's environment replaces the file's image and its preparation: a file that names
    either asks for something the job would not run, so the combination is refused, not dropped."""
    named = []
    if spec.container_image:
        named.append(f"an image (containerSettings.imageSourceRegistry.image {spec.container_image!r})")
    if spec.job_preparation:
        named.append("a jobPreparation")
    if named:
        raise UsageError(f"--package-environment: {path} names {' and '.join(named)}, which the package's "
                         "environment would replace; remove them from the file to run in the package's "
                         "environment, or drop --package-environment")


def _job_file(p: argparse.ArgumentParser) -> None:
    """The options that name a job.json and vary it (``job create``, ``sweep create``)."""
    p.add_argument("-f", "--config-file", type=Path, required=True, help="job.json, e.g. the tutorial's")
    p.add_argument("--storage-account-name", default=None,
                   help=f"storage account that fills <AZURE_BATCHAI_STORAGE_ACCOUNT> and whose key the file share "
                        f"mounts get (default: ${STORAGE_ACCOUNT_ENV})")
    p.add_argument("--storage-resource-group", default=None,
                   help="resource group of that storage account (default: --resource-group)")
    p.add_argument("--node-count", type=_positive, default=None, help="override the file's nodeCount")
    p.add_argument("--package-environment", action="store_true",
                   help="Azure ML only: run in the image built from the package's Dockerfile (TensorFlow 2.15.1, "
                        "Horovod 0.28.1); the file must name no containerSettings image and no jobPreparation (the "
                        "tutorial's TensorFlow 1.8 image cannot run its training package: remove both); the build "
                        "context is uploaded through the same client options as every other request")
    p.add_argument("--append-args", default=None, metavar="ARGS",
                   help="arguments appended to the file's commandLineArgs, e.g. '--epochs=3' "
                        "(the node expands $AZ_BATCHAI_* variables in them)")
