"""A database outage told apart from the database's refusals: the web answers it 503
with ``Retry-After`` and ``code: database_unavailable`` (anything else stays a 500), and
``through_outage`` retries a write while the outage lasts, within its budget."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from flask import Flask

from relayline.shared.persistence.outage import is_outage, through_outage
from relayline.web.errors import init_app


def _outage() -> sa.exc.OperationalError:
    return sa.exc.OperationalError("SELECT 1", {}, Exception("connection refused"))


def _refusal() -> sa.exc.IntegrityError:
    return sa.exc.IntegrityError("INSERT", {}, Exception("duplicate key"))


def test_an_unreachable_server_is_an_outage_and_a_refused_statement_is_not() -> None:
    assert is_outage(_outage())
    assert is_outage(sa.exc.TimeoutError("QueuePool limit reached"))
    assert not is_outage(_refusal())
    assert not is_outage(ValueError("no"))


@pytest.fixture
def app() -> Flask:
    app = Flask(__name__)
    init_app(app)

    @app.get("/outage")
    def outage() -> str:
        raise _outage()

    @app.get("/refusal")
    def refusal() -> str:
        raise _refusal()

    return app


def test_web_answers_an_outage_503_with_retry_after_and_its_code(app: Flask) -> None:
    response = app.test_client().get("/outage")
    assert response.status_code == 503
    assert int(response.headers["Retry-After"]) > 0
    body = response.get_json()
    assert body["code"] == "database_unavailable"
    assert body["type"] == "DatabaseUnavailableError"
    assert "connection refused" not in body["error"]  # the driver's words stay in the log


def test_web_answers_any_other_database_error_500(app: Flask) -> None:
    assert app.test_client().get("/refusal").status_code == 500


def test_a_write_is_retried_while_the_outage_lasts() -> None:
    failures = [_outage(), _outage()]
    pauses: list[float] = []

    def write() -> str:
        if failures:
            raise failures.pop()
        return "written"

    assert through_outage(write, what="a test write", sleep=pauses.append) == "written"
    assert pauses == [0.25, 0.5]  # backing off


def test_a_refusal_is_never_retried_and_an_outage_past_the_budget_is_raised() -> None:
    calls: list[int] = []

    def refused() -> None:
        calls.append(1)
        raise _refusal()

    with pytest.raises(sa.exc.IntegrityError):
        through_outage(refused, what="a refused write", sleep=lambda _: None)
    assert len(calls) == 1

    def down() -> None:
        raise _outage()

    with pytest.raises(sa.exc.OperationalError):
        through_outage(down, what="a write", budget=0.1, sleep=lambda _: None)
