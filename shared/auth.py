"""Bearer tokens for RELAYLINE_AUTH=token: an HMAC-signed user id.

A token is ``<user>.<signature>`` with the signature an HMAC-SHA256 of the user id
under SECRET_KEY (URL-safe base64, unpadded). Tokens do not expire: rotate SECRET_KEY
to revoke them all."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

_USER = re.compile(r"^[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]{0,127}$")


def _signature(secret: str, user: str) -> str:
    digest = hmac.new(secret.encode(), f"relayline-user:{user}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")


def mint_token(secret: str, user: str) -> str:
    if not _USER.match(user):
        raise ValueError(
            f"Invalid user id {user!r}: use 1-128 letters, digits and _ . @ + - characters."
        )
    return f"{user}.{_signature(secret, user)}"


def verify_token(secret: str, token: str) -> str | None:
    """The user id a valid token names, else None."""
    user, dot, signature = token.rpartition(".")
    if not dot or not _USER.match(user):
        return None
    return user if hmac.compare_digest(signature, _signature(secret, user)) else None
