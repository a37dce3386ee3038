"""The Azure ML workspace's MLflow endpoint, reached through an azure-core pipeline of the
target's own: its client options (``transport``, retries, proxies, logging, per-call and
per-retry policies) and the caller's credential, asked for a token of azure-ai-ml's run-history
scope (the same host, ``<region>.api.azureml.ms``). azure-ai-ml has no MLflow client of its own,
and the mlflow package (with azureml-mlflow) would build clients without the target's options.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from azure.core import PipelineClient
from azure.core.configuration import Configuration
from azure.core.pipeline import policies

from ..mlflow import AZUREML_MLFLOW_SCOPE

if TYPE_CHECKING:
    from ..connection import Connection

__all__ = ["mlflow_pipeline"]


def mlflow_pipeline(connection: "Connection", base_url: str) -> PipelineClient:  # type: ignore[type-arg]
    """A pipeline to ``base_url`` (the workspace's MLflow REST base) with the connection's
    client options and credential."""
    options: dict[str, Any] = connection.client_options
    transport = options.pop("transport", None)
    config: Configuration[Any, Any] = Configuration(**options)
    config.headers_policy = policies.HeadersPolicy(**options)
    config.user_agent_policy = policies.UserAgentPolicy(sdk_moniker="horovod-batchai", **options)
    config.proxy_policy = policies.ProxyPolicy(**options)
    config.redirect_policy = policies.RedirectPolicy(**options)
    config.retry_policy = policies.RetryPolicy(**options)
    config.custom_hook_policy = policies.CustomHookPolicy(**options)
    config.logging_policy = policies.NetworkTraceLoggingPolicy(**options)
    config.http_logging_policy = policies.HttpLoggingPolicy(**options)
    config.authentication_policy = policies.BearerTokenCredentialPolicy(connection.credential(),
                                                                        AZUREML_MLFLOW_SCOPE, **options)
    return PipelineClient(base_url, config=config, transport=transport, **options)
