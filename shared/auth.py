"""Bearer tokens for RELAYLINE_AUTH=token: HS256 JWTs (PyJWT) naming the user.

A token carries ``sub`` (the user id), ``iat``, ``exp`` and ``iss: "relayline"``, signed
with SECRET_KEY. It expires after RELAYLINE_TOKEN_TTL seconds (default 24 h); rotate
SECRET_KEY to revoke every token at once. A token without ``exp`` is refused, so none
lives forever."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import jwt

_USER = re.compile(r"^[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]{0,127}$")
_ISSUER = "relayline"
_ALGORITHM = "HS256"
#: seconds a minted token stays valid unless RELAYLINE_TOKEN_TTL says otherwise
DEFAULT_TOKEN_TTL = 86_400.0
#: shortest SECRET_KEY token mode accepts: RFC 7518 3.2 asks HS256 keys of at least
#: the hash size (32 bytes), and a short key can be guessed offline from any token
MIN_SECRET_LENGTH = 32


@dataclass(frozen=True, slots=True)
class MintedToken:
    token: str
    user: str
    #: Unix time after which the token is refused
    expires_at: int


def mint(
    secret: str, user: str, ttl: float = DEFAULT_TOKEN_TTL, *, now: float | None = None
) -> MintedToken:
    if not _USER.match(user):
        raise ValueError(
            f"Invalid user id {user!r}: use 1-128 letters, digits and _ . @ + - characters."
        )
    if ttl <= 0:
        raise ValueError("A token's lifetime must be a positive number of seconds.")
    issued = int(time.time() if now is None else now)
    expires = issued + max(1, int(ttl))
    claims = {"sub": user, "iat": issued, "exp": expires, "iss": _ISSUER}
    return MintedToken(jwt.encode(claims, secret, algorithm=_ALGORITHM), user, expires)


def mint_token(secret: str, user: str, ttl: float = DEFAULT_TOKEN_TTL) -> str:
    return mint(secret, user, ttl).token


def verify_token(secret: str, token: str) -> str | None:
    """The user id a valid, unexpired token names, else None."""
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[_ALGORITHM],
            issuer=_ISSUER,
            options={"require": ["exp", "iat", "sub", "iss"]},
        )
    except jwt.PyJWTError:
        return None
    user = claims.get("sub")
    return user if isinstance(user, str) and _USER.match(user) else None
