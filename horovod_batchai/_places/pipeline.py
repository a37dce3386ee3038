"""azure-core pipelines for requests sent and read as JSON, without a generated client.

A pipeline here holds the policies a generated client builds from the same options: request id,
headers, user agent, proxy, content decoding, redirects, retries, the caller's bearer token,
custom hooks, network trace logging, tracing and HTTP logging (for Azure Resource Manager also
resource provider registration and ARM's logging allow-list, as azure-mgmt clients have). The
transport, TLS verification, retry settings and extra policies the caller gave reach it as they
reach Microsoft's clients.

Batch AI reads through one cost no import of azure-mgmt-batchai and msrest (~40 ms of a command's
start, ``benchmarks/bench_cli.py``); it also sends what no client has operations for (the local
service's sweeps, MLflow's REST API).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .._models.constants import SDK_VERSION

__all__ = ["pipeline_client", "ARM_SCOPE"]

#: the token scope of Azure Resource Manager (the azure-mgmt clients' default)
ARM_SCOPE = "https://management.azure.com/.default"
#: the user agent's SDK part: this package is the one sending these requests
SDK_MONIKER = f"horovod-batchai/{SDK_VERSION}"


def pipeline_client(credential: Any, scopes: Sequence[str], options: Mapping[str, Any], *, arm: bool,
                    asynchronous: bool = False) -> Any:
    """A pipeline client for ``options['base_url']`` signing with ``credential`` for ``scopes``
    (an ``AsyncTokenCredential`` with ``asynchronous``): azure-mgmt-core's ARM client with
    ``arm``, else azure-core's."""
    from azure.core.configuration import Configuration
    from azure.core.pipeline import policies

    kwargs = dict(options)
    base_url = kwargs.pop("base_url")
    kwargs.setdefault("sdk_moniker", SDK_MONIKER)
    if asynchronous:
        retry: Any = policies.AsyncRetryPolicy
        redirect: Any = policies.AsyncRedirectPolicy
        bearer: Any = policies.AsyncBearerTokenCredentialPolicy
    else:
        retry, redirect, bearer = policies.RetryPolicy, policies.RedirectPolicy, policies.BearerTokenCredentialPolicy
    config: Any = Configuration(**kwargs)
    config.user_agent_policy = kwargs.get("user_agent_policy") or policies.UserAgentPolicy(**kwargs)
    config.headers_policy = kwargs.get("headers_policy") or policies.HeadersPolicy(**kwargs)
    config.proxy_policy = kwargs.get("proxy_policy") or policies.ProxyPolicy(**kwargs)
    config.logging_policy = kwargs.get("logging_policy") or policies.NetworkTraceLoggingPolicy(**kwargs)
    config.retry_policy = kwargs.get("retry_policy") or retry(**kwargs)
    config.custom_hook_policy = kwargs.get("custom_hook_policy") or policies.CustomHookPolicy(**kwargs)
    config.redirect_policy = kwargs.get("redirect_policy") or redirect(**kwargs)
    config.authentication_policy = kwargs.get("authentication_policy") or bearer(credential, *scopes, **kwargs)
    if arm:
        from azure.mgmt.core import ARMPipelineClient, AsyncARMPipelineClient
        return (AsyncARMPipelineClient if asynchronous else ARMPipelineClient)(base_url, config=config, **kwargs)
    from azure.core import AsyncPipelineClient, PipelineClient
    config.http_logging_policy = kwargs.get("http_logging_policy") or policies.HttpLoggingPolicy(**kwargs)
    return (AsyncPipelineClient if asynchronous else PipelineClient)(base_url, config=config, **kwargs)
