"""The Docker build context a job runs in when its spec names no image.

The context is this folder's Dockerfile plus the ``training`` package (the tutorial's script
imports it), copied into a fresh directory that azure-ai-ml uploads and Azure ML builds.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

__all__ = ["CONTEXT_NAME", "DOCKERFILE", "build_context"]

DOCKERFILE = Path(__file__).with_name("environment") / "Dockerfile"


#: the context folder's name: azure-ai-ml uploads it to ``LocalUpload/<content hash>/<name>/``
#: and names the environment version after the content, so the name must not vary between runs
CONTEXT_NAME = "horovod-batchai-environment"


def build_context() -> Path:
    """A new directory ``CONTEXT_NAME`` holding ``Dockerfile`` and ``training/``, inside a
    temporary directory of its own (the caller removes ``context.parent``)."""
    import training
    source = Path(training.__file__).resolve().parent
    context = Path(tempfile.mkdtemp(prefix="horovod-batchai-env-")) / CONTEXT_NAME
    context.mkdir()
    shutil.copy2(DOCKERFILE, context / "Dockerfile")
    shutil.copytree(source, context / "training", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return context
