"""Small read-only values the resources hand back: output files, remote logins, quotas.

They live apart from the classes that return them so that every backend can build them
without importing the public classes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional

from .pickling import PicklesWithoutSecrets

__all__ = ["OutputFile", "RemoteLogin", "Usage"]


@dataclass(frozen=True)
class OutputFile(PicklesWithoutSecrets):
    """A file or directory a job wrote. ``download_url`` is a time-limited SAS link: it is a
    credential, so it is kept out of ``repr`` and never pickled."""

    _pickle_prefix = "output_file."
    _pickle_hint = ("the job itself (it pickles), listing its files in the receiving process "
                    "(job.list_output_files()); or the file without its link: dataclasses.replace(f, download_url=None)")

    name: str
    is_directory: bool
    size: Optional[int] = None
    last_modified: Optional[datetime] = None
    download_url: Optional[str] = field(default=None, repr=False)


@dataclass(frozen=True)
class RemoteLogin:
    """Where to ``ssh`` into one node: ``ssh -p <port> <admin user>@<ip_address>``."""

    node_id: str
    ip_address: str
    port: int


@dataclass(frozen=True)
class Usage:
    """A quota in the workspace's region (``az batchai list-usages``), e.g. dedicated cores."""

    name: str
    current_value: int
    limit: int
    unit: str
