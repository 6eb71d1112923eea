"""What a command checks before it starts anything, each said in one line: a database it
cannot reach (``relayline migrate``, ``up``, ``web``, ``worker`` would otherwise end in a
driver's traceback, or a web that answers 500 to every request)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from relayline.shared.database_urls import with_driver

#: the reason code of a database that refused or did not answer a connection
DATABASE_UNREACHABLE = "DATABASE_UNREACHABLE"
#: the reason code of a setting that cannot be used (as ``Settings`` refusals)
CONFIG_INVALID = "CONFIG_INVALID"
#: seconds a PostgreSQL connection attempt may take
CONNECT_TIMEOUT = 5


def shown_url(url: str) -> str:
    """``url`` with its password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return "(unparsable)"


def database_problem(url: str) -> str | None:
    """One line saying why relayline cannot use the database at ``url``, else None."""
    url = with_driver(url)
    try:
        dialect = make_url(url).get_backend_name()
        options = {} if dialect == "sqlite" else {"connect_timeout": CONNECT_TIMEOUT}
        engine = sa.create_engine(url, connect_args=options)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as exc:
        return (
            f"relayline: invalid configuration ({CONFIG_INVALID}): DATABASE_URL is no "
            f"database URL relayline can use ({_first_line(exc)}); for example "
            "postgresql://user:password@host:5432/name or sqlite:///relayline.db."
        )
    except ImportError as exc:  # a dialect whose driver is not installed
        return f"relayline: invalid configuration ({CONFIG_INVALID}): DATABASE_URL: {exc}."
    try:
        with engine.connect():
            return None
    except sa.exc.DBAPIError as exc:
        reason = _first_line(exc.orig if exc.orig is not None else exc)
        return (
            f"relayline: cannot use the database at {shown_url(url)} "
            f"({DATABASE_UNREACHABLE}): {reason}. Check DATABASE_URL, and that the server "
            "runs and the database exists."
        )
    finally:
        engine.dispose()


def _first_line(exc: BaseException) -> str:
    """A driver's message, which may span lines and end in hints, as one line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    # psycopg: 'connection failed: connection to server at "h", port 1 failed: FATAL: ...'
    return " ".join(text.split()).rstrip(".")
