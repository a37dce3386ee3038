"""Local paths for names that came from a service."""
from __future__ import annotations

from pathlib import Path

from .._models.errors import TransferError

__all__ = ["local_path_under"]


def local_path_under(dest: Path, relative: str) -> Path:
    """``dest / relative`` for a name the service sent, refusing one that would land outside
    ``dest`` (``..``, an absolute path): a download never writes where it was not asked to."""
    parts = relative.replace("\\", "/").split("/")
    if not relative or relative.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise TransferError(f"the service named a file {relative!r} that would fall outside {str(dest)!r}; "
                            "nothing was written for it")
    return dest.joinpath(*parts)
