"""Names kept for one release after the one door replaced them."""
from __future__ import annotations

import warnings

__all__ = ["deprecated"]


def deprecated(old: str, new: str) -> None:
    """Warn the caller of the caller that ``old`` goes in the next release and ``new`` replaces it."""
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  DeprecationWarning, stacklevel=3)
