"""Where the local service keeps its state: a module of its own, so that finding a running service
(``local/daemon.py``, every CLI command) imports nothing of the service's store."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["STATE_DIR_ENV", "default_state_dir"]

STATE_DIR_ENV = "HOROVOD_BATCHAI_STATE_DIR"


def default_state_dir() -> Path:
    """``$HOROVOD_BATCHAI_STATE_DIR``, else ``~/.horovod-batchai/local``."""
    env = os.environ.get(STATE_DIR_ENV)
    return Path(env).expanduser() if env else Path.home() / ".horovod-batchai" / "local"
