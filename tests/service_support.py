"""What tests share besides fixtures: the subscription the local service is addressed with, fast
service settings, the keyword arguments that point a management client at a local service,
killing a daemon the test started, and starting a child that Ctrl-C reaches.

(Kept out of conftest.py: several conftest modules exist, and ``from conftest import ...`` would
reach whichever was imported first.)
"""
from __future__ import annotations

import dataclasses
import os
import signal

from horovod_batchai.local import LocalService, ServiceSettings

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"

# Fast enough for tests, slow enough that "resizing"/"preparing" states are observable.
FAST = ServiceSettings(provision_delay_s=0.3, deallocation_delay_s=0.1, scale_down_delay_s=0.5)
#: FAST with MLflow tracking on (the suite turns it off elsewhere: its server takes seconds to start)
TRACKED = dataclasses.replace(FAST, mlflow_tracking=True)


def client_kwargs(svc: LocalService) -> dict:
    """What every management client needs to reach the local service."""
    return {"base_url": svc.endpoint, "connection_verify": str(svc.info.ca_cert)}


def kill_daemon(pid: int) -> None:
    """SIGKILL a daemon this process started (its child) and reap it: ``waitpid`` returns once all
    its threads are gone (a zombie group leader may still have threads holding its files, the
    state lock included)."""
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def interruptible() -> None:
    """``preexec_fn`` for a child a test sends SIGINT, as a terminal's Ctrl-C would: a shell
    without job control starts background commands with SIGINT ignored, the child inherits
    that, and Python then installs no KeyboardInterrupt handler at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
