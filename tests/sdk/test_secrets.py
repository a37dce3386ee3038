"""The full flow with DEBUG logging captured from every logger (ours, azure-core, azure-storage,
urllib3, the in-process local service): no account key, SAS signature, password, private key or
bearer token appears in any log line, repr or exception message."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from horovod_batchai import FileShare, HorovodBatchAIError, Target, Workspace
from horovod_batchai.local import LocalService
from sdk_support import ACCOUNT, RG, SECRET_SHAPES, run_full_flow

pytestmark = pytest.mark.slow


def _captured(caplog: pytest.LogCaptureFixture) -> str:
    lines = []
    for record in caplog.records:
        lines.append(f"{record.name} {record.getMessage()}")
        if record.exc_info and record.exc_info[1] is not None:
            lines.append(repr(record.exc_info[1]))
    return "\n".join(lines)


@pytest.mark.parametrize("network_trace", [False, True], ids=["default", "logging_enable"])
def test_no_secret_in_logs_reprs_or_errors(service: LocalService, network_trace: bool, tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    """Also with azure-core's network trace on (``logging_enable=True``), which logs every request
    and response body: listKeys' keys, the cluster's password and the job's storage key among them."""
    caplog.set_level(logging.DEBUG)
    with Target.local(service=service, logging_enable=network_trace) as target:
        _check_flow(target, tmp_path, caplog, network_trace)


def _check_flow(target: Target, tmp_path: Path, caplog: pytest.LogCaptureFixture, network_trace: bool) -> None:
    record = run_full_flow(target, tmp_path)

    # mistakes made while secrets are in play: their messages must not carry them either
    errors: list[str] = []
    share = FileShare.create(target, RG, ACCOUNT, "myshare")
    key = share.get_account_key()
    for action in (lambda: share.download_file("missing/model.h5", tmp_path / "x"),
                   lambda: FileShare.get(target, RG, ACCOUNT, "othershare"),
                   lambda: Workspace.get(target, RG, "nope")):
        with pytest.raises(HorovodBatchAIError) as info:
            action()
        errors.append(f"{info.value!s} {info.value!r}")
    record.secrets["second flow key"] = key

    logs = _captured(caplog)
    assert len(caplog.records) > 200, "DEBUG logging was captured"
    if network_trace:  # the trace was on: bodies were logged, their secrets cut
        assert '"keyName": "key1"' in logs and '"adminUserName": "demo"' in logs
    assert "sig=" in logs or "REDACTED" in logs or "redacted" in logs  # SAS URLs were logged, scrubbed
    haystacks = {"logs": logs, "reprs": "\n".join(record.reprs), "errors": "\n".join(errors)}
    for name, secret in record.secrets.items():
        assert len(secret) >= 8, name
        for where, text in haystacks.items():
            assert secret not in text, f"{name} appears in {where}"
    for shape in SECRET_SHAPES:
        for where, text in haystacks.items():
            leaks = [m.group(0) for m in shape.finditer(text) if "REDACTED" not in m.group(0)
                     and "redacted" not in m.group(0)]
            assert not leaks, f"{shape.pattern} matches in {where}: {leaks[:1]}"
