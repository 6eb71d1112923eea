"""An identity provider's key set served over HTTP on 127.0.0.1, with the private keys
to sign its tokens: an RS256 and an ES256 key, each under its own ``kid``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://idp.example.test/"
AUDIENCE = "relayline-tests"


@dataclass
class IdentityProvider:
    url: str
    rsa_key: rsa.RSAPrivateKey
    ec_key: ec.EllipticCurvePrivateKey
    #: how many times the key set was fetched
    fetches: list[float] = field(default_factory=list)

    def token(self, user: str, *, kid: str = "rsa-1", ttl: float = 300, **claims: Any) -> str:
        """A token as the provider signs it; ``claims`` override the defaults."""
        now = int(time.time())
        body = {"sub": user, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + ttl}
        body.update(claims)
        if kid.startswith("ec"):
            return jwt.encode(body, self.ec_key, algorithm="ES256", headers={"kid": kid})
        return jwt.encode(body, self.rsa_key, algorithm="RS256", headers={"kid": kid})


def _jwks(provider: IdentityProvider) -> bytes:
    rsa_jwk = json.loads(RSAAlgorithm.to_jwk(provider.rsa_key.public_key()))
    ec_jwk = json.loads(ECAlgorithm.to_jwk(provider.ec_key.public_key()))
    keys = [{**rsa_jwk, "kid": "rsa-1", "use": "sig", "alg": "RS256"}]
    keys.append({**ec_jwk, "kid": "ec-1", "use": "sig", "alg": "ES256"})
    return json.dumps({"keys": keys}).encode()


@contextmanager
def identity_provider() -> Iterator[IdentityProvider]:
    provider = IdentityProvider(
        url="",
        rsa_key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec_key=ec.generate_private_key(ec.SECP256R1()),
    )
    body = _jwks(provider)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/.well-known/jwks.json":
                self.send_error(404)
                return
            provider.fetches.append(time.time())
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet test output

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    provider.url = f"http://127.0.0.1:{server.server_port}/.well-known/jwks.json"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
