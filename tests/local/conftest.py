"""Here so that the helpers beside it (raw_arm.py, jobs_support.py, ...) are importable from the
tests below it. (The conformance figures test_conformance.py gathers are printed by
tests/conftest.py, which also collects them from pytest-xdist's workers.)"""
from __future__ import annotations

import pytest

from sweeps_support import Sweeps


@pytest.fixture
def sweeps(service):  # type: ignore[no-untyped-def]
    """The sweep resource of ``service`` over raw HTTPS (Microsoft's Batch AI client has no sweeps)."""
    client = Sweeps(service)
    yield client
    client.close()
