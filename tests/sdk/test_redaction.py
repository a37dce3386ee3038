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


@pytest.mark.parametrize("body, secret", [
    ('{"keys": [{"keyName": "key1", "value": "Y/8+7deN4BcPxaAc==", "permissions": "FULL"}]}', "Y/8+7deN4BcPxaAc=="),
    ('{"userAccountSettings": {"adminUserName": "demo", "adminUserPassword": "Flow-Pa55word!"}}', "Flow-Pa55word!"),
    ('{"credentials": {"accountKey": "a2V5\\"PT0="}}', 'PT0='),  # an escaped quote does not end the value
    ('{"secrets": [{"name": "TOKEN", "value": "hunter2-secret"}]}', "hunter2-secret"),
    ('{"imageSourceRegistry": {"credentials": {"username": "u", "password": "reg-pass-1"}}}', "reg-pass-1"),
    ("b'{\"secretsType\": \"AccountKey\", \"key\": \"ZGF0YXN0b3Jl\"}'", "ZGF0YXN0b3Jl"),
    ("{'secretsType': 'Sas', 'sasToken': 'sv=2019&sig=c2ln'}", "c2ln"),
    ('{"downloadUrl": "https://127.0.0.1:5/a/stdout.txt?se=1&sig=WFla%3D"}', "WFla%3D"),
])
def test_a_network_trace_body_keeps_no_secret(body: str, secret: str) -> None:
    from horovod_batchai._shared.redaction import redact_body
    cleaned = redact_body(body)
    assert secret not in cleaned and "redacted>" in cleaned


def test_a_network_trace_body_keeps_what_is_not_secret() -> None:
    from horovod_batchai._shared.redaction import redact_body
    body = '{"name": "job1", "adminUserName": "demo", "keyName": "key1", "nodeCount": 2, "value": 0.5}'
    assert redact_body(body) == body
