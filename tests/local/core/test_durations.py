"""Batch AI durations: both spellings are read, ISO 8601 is written, and what is written reads back."""
from __future__ import annotations

import pytest

from horovod_batchai.local.core.durations import format_duration, parse_duration


@pytest.mark.parametrize("text, seconds", [
    ("P7D", 7 * 86400), ("PT1H30M", 5400), ("P1DT2H", 93600), ("PT0.5S", 0.5),
    ("7.00:00:00", 7 * 86400), ("01:02:03", 3723),
])
def test_both_spellings_are_read(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "P", "PT", "P1DT", "7 days", "P7D\n", "-PT1S", "P1W"])
def test_anything_else_is_not_a_duration(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize("seconds", [0, 0.00005, 1.0000001, 59, 3600, 93600, 7 * 86400])
def test_what_is_written_reads_back(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)
