"""``redact``: what it cuts from messages and log lines, and what it must leave alone."""
from __future__ import annotations

import pytest

from horovod_batchai._models.errors import redact


@pytest.mark.parametrize("text, secret", [
    ("GET /acct/share/f.txt?sv=2019-02-02&se=2030-01-01&sr=f&sp=r&sig=c2lnbmF0dXJl HTTP/1.1", "c2lnbmF0dXJl"),
    ("https://acct.file.core.windows.net/share/f?comp=range&sig=abc%2Fdef", "abc%2Fdef"),
    ("Authorization: SharedKey acct:a2V5LWJ5dGVz", "a2V5LWJ5dGVz"),
    ("Authorization: Bearer eyJ0eXAiOiJKV1Qi", "eyJ0eXAiOiJKV1Qi"),
    ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5PT0=;", "a2V5PT0="),
])
def test_secrets_are_cut(text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize("text", [
    # a valid-form message that names '?' among the forbidden characters
    "path: 'a:b' has an invalid segment 'a:b' (valid: names without any of \" \\ : | < > * ?)",
    "is this a question? yes",
    "cluster 'c1' was not ready after 900s: resizing, NodeStateCounts(idle=0)",
])
def test_text_without_secrets_is_left_as_it_is(text: str) -> None:
    assert redact(text) == text
