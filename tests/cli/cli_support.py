"""Constants and helpers shared by the command-line tool's tests."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

RG = "batchai.horovod"
WS = "batchaidev"
ACCOUNT = "mystorageaccount"
SHARE = "myshare"
SSH_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 test@example"
STORAGE = ["-g", RG, "--account-name", ACCOUNT, "--share-name", SHARE]


@dataclass
class CliRun:
    """One run of the tool: its exit status and what it printed."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)
