"""The full flow with the local service failing a fifth of all requests (429 + Retry-After, 500,
503, dropped connections): the clients' retries carry it through, nothing is created twice, and
every downloaded file is byte-identical (run_full_flow checks both as it goes)."""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest

from horovod_batchai import Target
from horovod_batchai.local import LocalService, ServiceSettings
from sdk_support import run_full_flow

pytestmark = pytest.mark.slow


def test_full_flow_survives_twenty_percent_faults(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="horovod_batchai.local.app")
    settings = ServiceSettings(provision_delay_s=0.3, deallocation_delay_s=0.1, fault_rate=0.2, fault_seed=20180607)
    with LocalService(tmp_path / "state", settings=settings) as service, Target.local(service=service) as target:
        record = run_full_flow(target, tmp_path)
    assert "step 0 rank 0 of 2" in record.streamed
    # the faults really happened, of every kind, on both planes
    injected = [r.getMessage() for r in caplog.records if r.getMessage().startswith("injected fault")]
    kinds = Counter(message.split()[2] for message in injected)
    assert set(kinds) == {"429", "500", "503", "drop"}, kinds
    assert any("/subscriptions/" in m for m in injected) and any("/mystorageaccount/" in m for m in injected)
    assert len(injected) >= 20, kinds
