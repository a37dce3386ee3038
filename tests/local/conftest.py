"""The conformance figures, printed at the end of every run that replayed a recording."""
from __future__ import annotations

import sys
from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    module = next((m for name, m in sys.modules.items() if name.endswith("test_conformance")), None)
    figures = getattr(module, "CONFORMANCE", None)
    if not figures:
        return
    terminalreporter.section("conformance with the recorded service")
    for name, (matched, known, total) in sorted(figures.items()):
        terminalreporter.write_line(f"{name}: {matched}/{total} recorded interactions match"
                                    + (f", {known} more differ only in documented ways" if known else ""))
