"""One backend per place to run. The public classes describe *what* to do; the backend that
:func:`backend_for` picks for their :class:`Target` does it, through that place's Microsoft
clients (the operations are listed in :mod:`.base`).

- ``local`` and ``azure``: :mod:`.batchai`, Batch AI 2018-05-01 through azure-mgmt-batchai;
- ``azureml``: :mod:`.azureml`, Azure Machine Learning through azure-ai-ml (an optional extra).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import TargetError

if TYPE_CHECKING:
    from .._target import Target
    from .base import Backend

__all__ = ["backend_for"]


def backend_for(target: "Target") -> "Backend":
    """The backend of ``target``, built on first use and kept (closed with the target)."""
    with target._lock:
        if target._backend is None:
            if target.kind == "azureml":
                try:
                    from .azureml import AzureMLBackend
                except ImportError as err:
                    raise TargetError(f"the azureml target needs azure-ai-ml ({err.name} is missing): "
                                      "pip install 'horovod-batchai[azureml]'") from None
                target._backend = AzureMLBackend(target)
            else:
                from .batchai import BatchAIBackend
                target._backend = BatchAIBackend(target)
        backend: "Backend" = target._backend
        return backend
