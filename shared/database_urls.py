"""Database URLs as hosts give them: ``postgres://`` (Heroku, Render, Fly...) and a bare
``postgresql://`` mean PostgreSQL through psycopg 3, the driver relayline installs
(SQLAlchemy would refuse the first and look for psycopg2 for the second)."""

from __future__ import annotations

#: the URL schemes that name PostgreSQL without a driver
_BARE_POSTGRES = ("postgres://", "postgresql://")
PSYCOPG = "postgresql+psycopg://"


def with_driver(url: str) -> str:
    """``url`` with psycopg 3 as its PostgreSQL driver when it names none."""
    for scheme in _BARE_POSTGRES:
        if url.startswith(scheme):
            return PSYCOPG + url.removeprefix(scheme)
    return url
