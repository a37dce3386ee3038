"""Fixtures for the Azure ML target: Microsoft's clients talking to a replaying transport.

Every test here runs under :func:`no_network`: a request that leaves the replay transport --
a client built without the target's options, a DNS lookup, a socket -- fails the test, even
when the code under test swallows the error.

``pytest.importorskip`` is not used: azure-ai-ml is installed by ``make install`` (the ``azureml``
extra), and a missing extra must fail these tests, not hide them.
"""
from __future__ import annotations

import socket
from typing import Any, Iterator

import pytest

from horovod_batchai import Target

from replay import FakeCredential, ReplayTransport
from scenario import RG, SUB, WS


class LeftTheTransport(AssertionError):
    """Something tried to reach the network instead of the replay transport."""


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Refuse every name lookup and outgoing connection (loopback included: nothing here serves),
    and fail the test afterwards if one was tried, whatever the code did with the error."""
    attempts: list[str] = []

    def refuse(what: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            where = next((repr(a) for a in args if not isinstance(a, socket.socket)), "")
            attempts.append(f"{what}({where})")
            raise LeftTheTransport(f"a request left the replay transport: {what}({where})")
        return refused

    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    monkeypatch.setattr(socket, "gethostbyname", refuse("gethostbyname"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    yield attempts
    assert not attempts, "requests left the replay transport:\n  " + "\n  ".join(attempts)


@pytest.fixture
def transport() -> ReplayTransport:
    return ReplayTransport()


@pytest.fixture
def target(transport: ReplayTransport) -> Iterator[Target]:
    with Target.azureml(SUB, RG, WS, credential=FakeCredential(), transport=transport) as t:
        yield t
