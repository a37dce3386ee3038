"""The Azure ML workspace's MLflow endpoint, reached through an azure-core pipeline of the
target's own: its client options (``transport``, retries, proxies, logging, per-call and
per-retry policies) and the caller's credential, asked for a token of azure-ai-ml's run-history
scope (the same host, ``<region>.api.azureml.ms``). azure-ai-ml has no MLflow client of its own,
and the mlflow package (with azureml-mlflow) would build clients without the target's options.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..mlflow import AZUREML_MLFLOW_SCOPE
from ..pipeline import pipeline_client

if TYPE_CHECKING:
    from ..connection import Connection

__all__ = ["mlflow_pipeline"]


def mlflow_pipeline(connection: "Connection", base_url: str) -> Any:
    """A pipeline to ``base_url`` (the workspace's MLflow REST base) with the connection's
    client options and credential."""
    return pipeline_client(connection.credential(), [AZUREML_MLFLOW_SCOPE],
                           {**connection.client_options, "base_url": base_url}, arm=False)
