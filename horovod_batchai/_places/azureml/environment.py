"""The Docker build context a job runs in when its spec names no image.

The context is this folder's Dockerfile plus the ``training`` package (the tutorial's script
imports it). :func:`context_files` lists it as bytes by relative path; :func:`content_hash`
names it, so the same package uploads to the same place (and registers the same environment)
run after run.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["CONTEXT_NAME", "DOCKERFILE", "ENVIRONMENT_VERSION_LENGTH", "context_files", "content_hash"]

DOCKERFILE = Path(__file__).with_name("environment") / "Dockerfile"

#: the context folder's name in the workspace's blob datastore: ``LocalUpload/<hash>/<name>/``
CONTEXT_NAME = "horovod-batchai-environment"
#: the environment registered for a context is ``CONTEXT_NAME``, version: this many hex digits of its hash
ENVIRONMENT_VERSION_LENGTH = 32


def context_files() -> dict[str, bytes]:
    """``Dockerfile`` and ``training/...`` (no byte-code), by POSIX path relative to the context."""
    import training
    source = Path(training.__file__).resolve().parent
    files = {"Dockerfile": DOCKERFILE.read_bytes()}
    for path in sorted(source.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files["training/" + path.relative_to(source).as_posix()] = path.read_bytes()
    return files


def content_hash(files: dict[str, bytes]) -> str:
    """SHA-256 over every path and its bytes, in path order (a file moved is another context)."""
    digest = hashlib.sha256()
    for name in sorted(files):
        data = files[name]
        digest.update(f"{name}\0{len(data)}\0".encode("utf-8"))
        digest.update(data)
    return digest.hexdigest()
