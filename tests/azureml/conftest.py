"""Fixtures for the Azure ML target: Microsoft's clients talking to a replaying transport.

``pytest.importorskip`` is not used: azure-ai-ml is installed by ``make install`` (the ``azureml``
extra), and a missing extra must fail these tests, not hide them.
"""
from __future__ import annotations

import time
from typing import Any, Iterator

import pytest
from azure.core.credentials import AccessToken, AccessTokenInfo

from horovod_batchai import Target

from replay import ReplayTransport
from scenario import RG, SUB, WS


class FakeCredential:
    """A token credential that never talks to Azure AD (the replay carries no token traffic)."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("replay-token", int(time.time()) + 3600)

    def get_token_info(self, *scopes: str, options: Any = None) -> AccessTokenInfo:
        return AccessTokenInfo("replay-token", int(time.time()) + 3600)


@pytest.fixture
def transport() -> ReplayTransport:
    return ReplayTransport()


@pytest.fixture
def target(transport: ReplayTransport) -> Iterator[Target]:
    with Target.azureml(SUB, RG, WS, credential=FakeCredential(), transport=transport) as t:
        yield t
