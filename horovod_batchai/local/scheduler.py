"""(being written) The job scheduler."""
from __future__ import annotations

from typing import Any


class Scheduler:
    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def notify(self) -> None:
        pass
