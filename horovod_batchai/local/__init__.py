"""The local stand-in for Azure: ARM (Microsoft.Resources, Microsoft.Storage, Microsoft.BatchAI
2018-05-01), the Azure Files data plane and, through Azurite, blob storage over HTTPS on loopback,
with state on disk and jobs run as real local Horovod processes."""
from .core.tokens import LocalCredential
from .core.context import STATE_DIR_ENV, ServiceSettings, default_state_dir
from .runner.node_runtime import NODE_RUNTIME_ENV
from .service import (LocalService, NodeRuntimeMismatch, ServiceAlreadyRunning, ServiceInfo, ensure_running,
                      find_running, stop_daemon)

__all__ = ["LocalCredential", "LocalService", "NODE_RUNTIME_ENV", "NodeRuntimeMismatch", "ServiceAlreadyRunning",
           "ServiceInfo", "ServiceSettings", "STATE_DIR_ENV", "default_state_dir", "ensure_running", "find_running", "stop_daemon"]
