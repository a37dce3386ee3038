"""GPUs: how many this machine has, and how many a VM size promises."""
from __future__ import annotations

import subprocess
import threading
from typing import Optional

from .vm_sizes import lookup_vm_size

__all__ = ["detect_gpus", "vm_gpus"]

_gpu_count: Optional[int] = None
_gpu_lock = threading.Lock()


def detect_gpus() -> int:
    """How many NVIDIA GPUs this machine has (``nvidia-smi -L``); 0 without the driver."""
    global _gpu_count
    with _gpu_lock:
        if _gpu_count is None:
            try:
                out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
                _gpu_count = sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
            except (OSError, subprocess.SubprocessError):
                _gpu_count = 0
        return _gpu_count


def vm_gpus(vm_size: str) -> Optional[int]:
    size = lookup_vm_size(vm_size)
    return size.gpus if size is not None else None


