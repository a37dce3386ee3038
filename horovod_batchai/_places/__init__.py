"""One backend per place to run. The public classes describe *what* to do; the backend that
:func:`build_backend` makes for their :class:`Target` (``target.backend``) does it, through that place's Microsoft
clients (the operations are listed in :mod:`.base`).

- ``local`` and ``azure``: :mod:`.batchai`, Batch AI 2018-05-01 through azure-mgmt-batchai;
- ``azureml``: :mod:`.azureml`, Azure Machine Learning through azure-ai-ml (an optional extra).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._models.errors import TargetError

if TYPE_CHECKING:
    from .._target import Target
    from .base import Backend

__all__ = ["build_backend"]


def build_backend(target: "Target") -> "Backend":
    """A new backend for ``target``'s kind (the target keeps the one it uses: ``target.backend``)."""
    if target.kind == "azureml":
        try:
            from .azureml import AzureMLBackend
        except ImportError as err:
            raise TargetError(f"the azureml target needs azure-ai-ml ({err.name} is missing): "
                              "pip install 'horovod-batchai[azureml]'") from None
        return AzureMLBackend(target)
    from .batchai.backend import BatchAIBackend
    return BatchAIBackend(target)
