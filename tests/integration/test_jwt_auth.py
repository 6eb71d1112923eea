"""RELAYLINE_AUTH=jwt: an identity provider's tokens decide the owner. The provider's
RS256 and ES256 public keys are served as a JWKS by a local HTTP server; tokens for
another audience, from another issuer, expired, or signed by a key it does not publish
are refused with 401 and a message that says which."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from flask.testing import FlaskClient

from relayline.shared.persistence import Store
from relayline.shared.settings import Settings
from relayline.web import create_app
from tests.support.jwks_server import AUDIENCE, ISSUER, IdentityProvider, identity_provider

pytestmark = pytest.mark.integration

THREAD = "/api/threads/ann-thread"
HS_SECRET = "an-identity-provider-secret-of-32-chars"


@pytest.fixture(scope="module")
def provider() -> Iterator[IdentityProvider]:
    with identity_provider() as running:
        yield running


def client_for(tmp_path: Path, redis_url: str, **env: str) -> Iterator[FlaskClient]:
    database_url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    store = Store(database_url)
    store.create_thread("ann-thread", "ann")
    store.dispose()
    base = {"DATABASE_URL": database_url, "REDIS_URL": redis_url, "RELAYLINE_AUTH": "jwt"}
    app = create_app(Settings.from_env({**base, **env}))
    with app.test_client() as test_client:
        yield test_client
    app.extensions["relayline"].close()


@pytest.fixture
def client(tmp_path: Path, redis_url: str, provider: IdentityProvider) -> Iterator[FlaskClient]:
    env = {
        "RELAYLINE_JWKS_URL": provider.url,
        "RELAYLINE_JWT_AUDIENCE": AUDIENCE,
        "RELAYLINE_JWT_ISSUER": ISSUER,
    }
    yield from client_for(tmp_path, redis_url, **env)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def refusal(client: FlaskClient, token: str) -> str:
    response = client.get(THREAD, headers=bearer(token))
    assert response.status_code == 401, response.get_json()
    assert response.headers["WWW-Authenticate"] == "Bearer error=invalid_token"  # RFC 6750
    body = response.get_json()
    assert body["type"] == "Unauthorized"
    message: str = body["error"]
    return message


def test_the_providers_tokens_name_the_owner(
    client: FlaskClient, provider: IdentityProvider
) -> None:
    fetched = len(provider.fetches)
    assert client.get(THREAD, headers=bearer(provider.token("ann"))).status_code == 200
    ec_token = provider.token("ann", kid="ec-1")
    assert client.get(THREAD, headers=bearer(ec_token)).status_code == 200
    other = client.get(THREAD, headers=bearer(provider.token("bob")))
    assert other.status_code == 404
    # The key set is fetched once and kept, not once per request.
    assert len(provider.fetches) - fetched <= 1


def test_wrong_audience_issuer_expired_and_unknown_key_are_401(
    client: FlaskClient, provider: IdentityProvider
) -> None:
    wrong_audience = provider.token("ann", aud="another-service")
    assert refusal(client, wrong_audience) == (
        f"The token is not meant for this service (audience {AUDIENCE!r})."
    )
    wrong_issuer = provider.token("ann", iss="https://evil.example/")
    assert refusal(client, wrong_issuer) == f"The token was not issued by {ISSUER!r}."
    expired = provider.token("ann", ttl=-60)
    assert refusal(client, expired) == "The token has expired: sign in again for a new one."
    unknown = provider.token("ann", kid="rsa-2")
    assert refusal(client, unknown).startswith("The token is signed by an unknown key")
    assert refusal(client, "not-a-jwt") == "The token is malformed."
    no_subject = provider.token("ann", sub=None)
    assert refusal(client, no_subject) == "The token lacks its 'sub' claim."
    not_a_user = provider.token("ann\n")
    assert refusal(client, not_a_user) == "The token's 'sub' claim is not a user id."


def test_no_token_and_algorithm_confusion_are_401(
    client: FlaskClient, provider: IdentityProvider
) -> None:
    missing = client.get(THREAD)
    assert missing.status_code == 401
    assert missing.get_json()["error"] == (
        "A valid 'Authorization: Bearer <token>' header is required."
    )
    # HS256 keyed with the provider's *public* key (PyJWT will not even sign it):
    # the algorithm is not one a key set's tokens may use.
    public = provider.rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    claims = {"sub": "ann", "iss": ISSUER, "aud": AUDIENCE, "exp": 4102444800}
    head = _b64({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}) + "." + _b64(claims)
    mac = hmac.new(public, head.encode(), hashlib.sha256).digest()
    forged = head + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
    assert refusal(client, forged) == "The token's algorithm is not one of ['RS256', 'ES256']."


def _b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def test_an_hs256_secret_instead_of_a_key_set(tmp_path: Path, redis_url: str) -> None:
    env = {
        "RELAYLINE_JWT_SECRET": HS_SECRET,
        "RELAYLINE_JWT_AUDIENCE": AUDIENCE,
        "RELAYLINE_JWT_ISSUER": ISSUER,
    }
    for client in client_for(tmp_path, redis_url, **env):
        claims = {"sub": "ann", "iss": ISSUER, "aud": AUDIENCE, "exp": 4102444800}
        good = jwt.encode(claims, HS_SECRET, algorithm="HS256")
        assert client.get(THREAD, headers=bearer(good)).status_code == 200
        bad = jwt.encode(claims, "another-secret-of-at-least-32-chars!", algorithm="HS256")
        assert refusal(client, bad) == "The token's signature does not verify."
        bob = jwt.encode({**claims, "sub": "bob"}, HS_SECRET, algorithm="HS256")
        assert client.get(THREAD, headers=bearer(bob)).status_code == 404


def test_an_unreachable_key_set_is_503(tmp_path: Path, redis_url: str) -> None:
    env = {
        "RELAYLINE_JWKS_URL": "http://127.0.0.1:9/.well-known/jwks.json",
        "RELAYLINE_JWT_AUDIENCE": AUDIENCE,
        "RELAYLINE_JWT_ISSUER": ISSUER,
    }
    for client in client_for(tmp_path, redis_url, **env):
        claims = {"sub": "ann", "iss": ISSUER, "aud": AUDIENCE, "exp": 4102444800}
        token = jwt.encode(claims, "x" * 32, algorithm="HS256", headers={"kid": "k"})
        response = client.get(THREAD, headers=bearer(token))
        assert response.status_code == 503
        assert response.get_json()["error"].startswith("The identity provider's keys are")
        assert response.headers["Retry-After"]


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({}, "needs one of RELAYLINE_JWT_SECRET or RELAYLINE_JWKS_URL"),
        ({"RELAYLINE_JWKS_URL": "http://127.0.0.1/k"}, "needs RELAYLINE_JWT_AUDIENCE"),
        (
            {
                "RELAYLINE_JWT_SECRET": "short",
                "RELAYLINE_JWT_AUDIENCE": "a",
                "RELAYLINE_JWT_ISSUER": "i",
            },
            "RELAYLINE_JWT_SECRET must be at least 32 characters",
        ),
        (
            {
                "RELAYLINE_JWKS_URL": "http://127.0.0.1/k",
                "RELAYLINE_JWT_AUDIENCE": "a",
                "RELAYLINE_JWT_ISSUER": "i",
                "RELAYLINE_JWT_ALGORITHMS": "RS256,HS256",
            },
            r"HS\* goes with a secret",
        ),
    ],
)
def test_jwt_mode_refuses_to_start_unchecked(env: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Settings.from_env({"RELAYLINE_AUTH": "jwt", **env})
