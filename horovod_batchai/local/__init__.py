"""The local stand-in for Azure: ARM (Microsoft.Resources, Microsoft.Storage, Microsoft.BatchAI
2018-05-01), the Azure Files data plane and, through Azurite, blob storage over HTTPS on loopback,
with state on disk and jobs run as real local Horovod processes.

Its names are imported when first used: a client that only finds (or starts) the daemon
(:mod:`.daemon`) does not import the service's planes -- a CLI command starts ~0.3 s sooner."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core.context import STATE_DIR_ENV, ServiceSettings, default_state_dir
    from .core.tokens import LocalCredential
    from .daemon import (NodeRuntimeMismatch, ServiceAlreadyRunning, ServiceInfo, ensure_running, find_running,
                         stop_daemon)
    from .runner.node_runtime import NODE_RUNTIME_ENV
    from .service import LocalService

__all__ = ["LocalCredential", "LocalService", "NODE_RUNTIME_ENV", "NodeRuntimeMismatch", "ServiceAlreadyRunning",
           "ServiceInfo", "ServiceSettings", "STATE_DIR_ENV", "default_state_dir", "ensure_running", "find_running",
           "stop_daemon"]

#: where each name lives
_HOMES = {"LocalCredential": ".core.tokens", "LocalService": ".service", "NODE_RUNTIME_ENV": ".runner.node_runtime",
          "NodeRuntimeMismatch": ".daemon", "ServiceAlreadyRunning": ".daemon", "ServiceInfo": ".daemon",
          "ServiceSettings": ".core.context", "STATE_DIR_ENV": ".core.context", "default_state_dir": ".core.context",
          "ensure_running": ".daemon", "find_running": ".daemon", "stop_daemon": ".daemon"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
