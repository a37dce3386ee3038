"""Access tokens are JWTs that independent JWT code reads and verifies, with the claims the Azure CLI
reads; the service accepts exactly the tokens it issued and nothing that only looks like one."""
from __future__ import annotations

import base64
import json

import jwt  # PyJWT, installed with msal (azure-identity): an independent JWT implementation
import pytest

from horovod_batchai.local.core.jwt_tokens import (AUDIENCES, DEFAULT_AUDIENCE, IDENTITY_OBJECT_ID, ISSUER, TENANT_ID,
                                              issue_token, normalize_audience, verify_token)

SECRET = bytes(range(32))
NOW = 1_700_000_000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _parts(token: str) -> tuple[dict, dict, str]:
    header, claims, signature = token.split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    return (json.loads(base64.urlsafe_b64decode(pad(header))), json.loads(base64.urlsafe_b64decode(pad(claims))),
            signature)


def test_pyjwt_verifies_the_signature_and_reads_the_claims_az_reads():
    issued = issue_token(SECRET, now=NOW)
    claims = jwt.decode(issued.token, SECRET, algorithms=["HS256"], audience=DEFAULT_AUDIENCE, issuer=ISSUER,
                        options={"verify_exp": False, "verify_iat": False, "verify_nbf": False})
    assert claims["tid"] == TENANT_ID
    assert claims["oid"] == claims["sub"] == IDENTITY_OBJECT_ID
    assert claims["exp"] == issued.expires_on == NOW + 3600
    assert claims["iat"] == claims["nbf"] == NOW
    assert claims["idtyp"] == "app" and claims["ver"] == "1.0"
    # What `az login --identity` does with the token: decode without verifying, read tid.
    unverified = jwt.decode(issued.token, algorithms=["RS256"], options={"verify_signature": False})
    assert unverified["tid"] == TENANT_ID


def test_a_token_issued_now_verifies_until_it_expires():
    issued = issue_token(SECRET, lifetime_s=60, now=NOW)
    assert verify_token(SECRET, issued.token, now=NOW)["tid"] == TENANT_ID
    assert verify_token(SECRET, issued.token, now=NOW + 59) is not None
    assert verify_token(SECRET, issued.token, now=NOW + 60) is None   # exp is exclusive
    assert verify_token(SECRET, issued.token, now=NOW - 1) is None    # before nbf


@pytest.mark.parametrize("audience", sorted(AUDIENCES))
def test_every_arm_audience_verifies(audience):
    assert verify_token(SECRET, issue_token(SECRET, audience=audience, now=NOW).token, now=NOW)["aud"] == audience


def test_each_token_is_unique_and_its_repr_hides_it():
    first, second = issue_token(SECRET, now=NOW), issue_token(SECRET, now=NOW)
    assert first.token != second.token   # uti differs
    assert first.token not in repr(first) and "redacted" in repr(first)


def _forge(header: dict, claims: dict, secret: bytes = SECRET) -> str:
    import hashlib
    import hmac
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{signing_input}.{_b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())}"


def test_tokens_it_did_not_issue_exactly_so_are_refused():
    header, claims, _ = _parts(issue_token(SECRET, now=NOW).token)
    assert verify_token(SECRET, _forge(header, claims), now=NOW) is not None   # the forger is right...
    refused = {
        "another secret": _forge(header, claims, secret=b"x" * 32),
        "alg none": f"{_b64(json.dumps({'alg': 'none', 'typ': 'JWT'}).encode())}."
                    f"{_b64(json.dumps(claims).encode())}.",
        "alg HS512": _forge({**header, "alg": "HS512"}, claims),
        "another audience": _forge(header, {**claims, "aud": "https://storage.azure.com/"}),
        "an audience list": _forge(header, {**claims, "aud": sorted(AUDIENCES)}),
        "another issuer": _forge(header, {**claims, "iss": "https://sts.windows.net/x/"}),
        "another tenant": _forge(header, {**claims, "tid": "11111111-1111-1111-1111-111111111111"}),
        "no exp": _forge(header, {k: v for k, v in claims.items() if k != "exp"}),
        "exp not a number": _forge(header, {**claims, "exp": "soon"}),
        "no nbf": _forge(header, {k: v for k, v in claims.items() if k != "nbf"}),
        "claims not an object": _forge(header, [claims]),  # type: ignore[arg-type]
    }
    for why, token in refused.items():
        assert verify_token(SECRET, token, now=NOW) is None, why


@pytest.mark.parametrize("token", ["", "a.b", "a.b.c.d", "!!.??.**", "e30.e30.", "e30=.e30.AAAA",
                                   "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.AAAA"])
def test_malformed_tokens_are_refused_without_an_exception(token):
    assert verify_token(SECRET, token, now=NOW) is None


def test_a_tampered_claim_breaks_the_signature():
    header, claims, signature = issue_token(SECRET, now=NOW).token.split(".")
    decoded = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    decoded["exp"] += 3600
    assert verify_token(SECRET, f"{header}.{_b64(json.dumps(decoded).encode())}.{signature}", now=NOW) is None


@pytest.mark.parametrize("resource, audience", [
    ("https://management.core.windows.net/", "https://management.core.windows.net/"),
    ("https://management.core.windows.net//.default", "https://management.core.windows.net/"),
    ("https://management.azure.com", "https://management.azure.com/"),
    ("https://management.azure.com/.default", "https://management.azure.com/"),
    ("https://storage.azure.com/", None),
    ("https://vault.azure.net/.default", None),
])
def test_resources_and_scopes_name_an_audience_or_none(resource, audience):
    assert normalize_audience(resource) == audience


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="audience"):
        issue_token(SECRET, audience="https://storage.azure.com/")
    with pytest.raises(ValueError, match="lifetime_s"):
        issue_token(SECRET, lifetime_s=0)
