"""Who a bearer token names: relayline's own tokens (RELAYLINE_AUTH=token) and an
identity provider's (RELAYLINE_AUTH=jwt), both verified by PyJWT.

relayline's token carries ``sub`` (the user id), ``iat``, ``exp`` and ``iss: "relayline"``, signed
with SECRET_KEY. It expires after RELAYLINE_TOKEN_TTL seconds (default 24 h); rotate
SECRET_KEY to revoke every token at once. A token without ``exp`` is refused, so none
lives forever."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

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
        return token_user(secret, token)
    except AuthError:
        return None


#: the 401's text for a token of relayline's own that names nobody
INVALID_TOKEN: Final = "A valid 'Authorization: Bearer <token>' header is required."
#: the 401's text for one of relayline's own tokens past its lifetime
EXPIRED_TOKEN: Final = "The token has expired: mint a new one (relayline token <user>)."


def token_user(secret: str, token: str) -> str:
    """The user id a valid, unexpired token of relayline's names; AuthError saying
    whether it expired (``TOKEN_EXPIRED``: only a token whose signature verifies) or is
    no token of ours at all (``TOKEN_INVALID``)."""
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[_ALGORITHM],
            issuer=_ISSUER,
            options={"require": ["exp", "iat", "sub", "iss"]},
        )
    except jwt.ExpiredSignatureError:
        raise AuthError(EXPIRED_TOKEN, "TOKEN_EXPIRED") from None
    except jwt.PyJWTError:
        raise AuthError(INVALID_TOKEN) from None
    user = claims.get("sub")
    if not isinstance(user, str) or not _USER.match(user):
        raise AuthError(INVALID_TOKEN)
    return user


#: the longest user id an owner column holds
MAX_USER_LENGTH = 255
#: seconds the provider's key set is kept before it is fetched again (an unknown key id
#: refetches at once, at most once per cooldown)
JWKS_LIFESPAN = 300.0
#: seconds a JWKS fetch may take
JWKS_TIMEOUT = 5.0


#: why a token was refused, as the 401's ``code``: expired (sign in again), or anything
#: else wrong with it
TokenProblem = Literal["TOKEN_EXPIRED", "TOKEN_INVALID"]


class AuthError(Exception):
    """A token that names nobody; ``message`` says why, for the 401 (never the token),
    and ``code`` which kind of refusal it is."""

    def __init__(self, message: str, code: TokenProblem = "TOKEN_INVALID") -> None:
        super().__init__(message)
        self.message = message
        self.code: TokenProblem = code


class KeysUnavailableError(AuthError):
    """The provider's key set could not be fetched: nobody can be verified for now."""


def checked_user(user: object) -> str | None:
    """``user`` as an owner id: a non-empty string that fits the owner column and holds
    no control characters; None for anything else."""
    if not isinstance(user, str) or not 0 < len(user) <= MAX_USER_LENGTH:
        return None
    return user if user.isprintable() else None


class IdentityTokens:
    """An identity provider's JWTs: signed with an HS256 ``secret`` or by a key of the
    provider's JWKS (``jwks_url``, RS256/ES256, chosen by the token's ``kid``), for
    ``audience``, from ``issuer``, unexpired. ``verify`` returns the ``user_claim``."""

    def __init__(
        self,
        *,
        audience: str,
        issuer: str,
        algorithms: Sequence[str],
        secret: str | None = None,
        jwks_url: str | None = None,
        user_claim: str = "sub",
    ) -> None:
        if (secret is None) == (jwks_url is None):
            raise ValueError("IdentityTokens needs a secret or a JWKS URL, not both.")
        self.audience = audience
        self.issuer = issuer
        self.algorithms = list(algorithms)
        self.secret = secret
        self.user_claim = user_claim
        self.keys = (
            jwt.PyJWKClient(jwks_url, lifespan=JWKS_LIFESPAN, timeout=JWKS_TIMEOUT)
            if jwks_url is not None
            else None
        )

    def _key(self, token: str) -> str | jwt.PyJWK:
        if self.keys is None:
            assert self.secret is not None
            return self.secret
        try:
            return self.keys.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            raise KeysUnavailableError(
                f"The identity provider's keys are unavailable: {exc}"
            ) from None
        except jwt.PyJWKClientError as exc:
            raise AuthError(f"The token is signed by an unknown key: {exc}") from None
        except jwt.PyJWTError:
            raise AuthError("The token is malformed.") from None

    def verify(self, token: str) -> str:
        """The user the token names; AuthError saying why it is refused."""
        try:
            claims = jwt.decode(
                token,
                self._key(token),
                algorithms=self.algorithms,
                audience=self.audience,
                issuer=self.issuer,
                options={"require": ["exp", "iss", "aud", self.user_claim]},
            )
        except jwt.ExpiredSignatureError:
            raise AuthError(
                "The token has expired: sign in again for a new one.", "TOKEN_EXPIRED"
            ) from None
        except jwt.InvalidAudienceError:
            raise AuthError(
                f"The token is not meant for this service (audience {self.audience!r})."
            ) from None
        except jwt.InvalidIssuerError:
            raise AuthError(f"The token was not issued by {self.issuer!r}.") from None
        except jwt.MissingRequiredClaimError as exc:
            raise AuthError(f"The token lacks its {exc.claim!r} claim.") from None
        except jwt.InvalidAlgorithmError:
            raise AuthError(f"The token's algorithm is not one of {self.algorithms}.") from None
        except jwt.InvalidSignatureError:
            raise AuthError("The token's signature does not verify.") from None
        except jwt.PyJWTError:
            raise AuthError("The token is malformed.") from None
        user = checked_user(claims.get(self.user_claim))
        if user is None:
            raise AuthError(f"The token's {self.user_claim!r} claim is not a user id.")
        return user
