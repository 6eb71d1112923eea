"""The error trees: each module docstring draws its real hierarchy, and every relayline
error has an HTTP status in the one table web/errors.py answers from, or is listed as
not an HTTP error."""

from __future__ import annotations

import inspect
import re
from types import ModuleType

import pytest
from flask import Flask

import relayline.channels.errors
import relayline.shared.errors
from relayline.shared.errors import (
    HTTP_STATUS,
    NOT_HTTP,
    DatabaseUnavailableError,
    RelaylineError,
    RunNotWaitingError,
    WorkflowError,
    http_status,
)
from relayline.web.errors import init_app

#: one tree line: the drawing, the class name, then its mixins and description
TREE_LINE = re.compile(
    r"^(?P<indent> {4}(?:[│ ] {3})*)(?:[├└]── )?(?P<name>[A-Z]\w+)\b(?P<rest>.*)$"
)


def defined(module: ModuleType) -> dict[str, type[BaseException]]:
    return {
        name: cls
        for name, cls in vars(module).items()
        if inspect.isclass(cls)
        and issubclass(cls, BaseException)
        and cls.__module__ == module.__name__
    }


def tree(module: ModuleType) -> dict[str, tuple[str | None, str]]:
    """Class name -> (parent drawn above it, rest of its line), from the docstring."""
    doc = module.__doc__ or ""
    block = doc.split("Hierarchy::\n\n", 1)[1].split("\n\n", 1)[0]
    drawn: dict[str, tuple[str | None, str]] = {}
    parents: list[str] = []
    for line in block.splitlines():
        match = TREE_LINE.match(line)
        assert match, f"not a tree line: {line!r}"
        depth = (len(match["indent"]) - 4) // 4 + (1 if "──" in line else 0)
        del parents[depth:]
        drawn[match["name"]] = (parents[-1] if parents else None, match["rest"])
        parents.append(match["name"])
    return drawn


@pytest.mark.parametrize(
    "module", [relayline.shared.errors, relayline.channels.errors], ids=lambda m: m.__name__
)
def test_the_docstring_tree_draws_every_error_under_its_real_parent(module: ModuleType) -> None:
    classes, drawn = defined(module), tree(module)
    assert set(drawn) == set(classes)
    for name, (parent, _) in drawn.items():
        bases = [base.__name__ for base in classes[name].__bases__]
        assert parent is None or parent in bases, f"{name} is drawn under {parent}: {bases}"


def test_every_relayline_error_has_a_status_or_is_listed_as_not_http() -> None:
    classes = set(defined(relayline.shared.errors).values())
    assert classes == set(HTTP_STATUS) | NOT_HTTP
    assert not set(HTTP_STATUS) & NOT_HTTP


def test_the_tree_states_the_statuses_of_the_table() -> None:
    for name, (_, rest) in tree(relayline.shared.errors).items():
        stated = re.search(r"\(HTTP (\d{3})\)", rest)
        status = HTTP_STATUS.get(getattr(relayline.shared.errors, name))
        assert (int(stated[1]) if stated else None) == status, name


def test_channel_errors_stay_out_of_the_status_table() -> None:
    # Delivery faults never refuse a request: none may inherit a status.
    for cls in defined(relayline.channels.errors).values():
        assert not issubclass(cls, RelaylineError)
        assert http_status(cls("x")) is None


def test_step_limit_error_is_in_the_tree_and_still_importable_from_the_loop() -> None:
    from relayline.shared.agent.loop import StepLimitError

    assert StepLimitError is relayline.shared.errors.StepLimitError
    assert issubclass(StepLimitError, RelaylineError)


class AppRefusal(WorkflowError):
    """An application's own refusal: a 409 by inheritance."""


@pytest.fixture
def app() -> Flask:
    app = Flask(__name__)
    init_app(app)
    errors = {cls.__name__: cls for cls in [*HTTP_STATUS, *NOT_HTTP, AppRefusal]}

    @app.get("/raise/<name>")
    def raise_(name: str) -> str:
        message = "Refused for a reason the developer can act on."
        if name == RunNotWaitingError.__name__:
            raise RunNotWaitingError(
                message, code="ALREADY_ANSWERED", run_id="run_1", status="running"
            )
        raise errors[name](message)

    return app


@pytest.mark.parametrize("error", [*HTTP_STATUS, AppRefusal], ids=lambda cls: cls.__name__)
def test_web_answers_each_refusal_with_its_table_status(
    app: Flask, error: type[RelaylineError]
) -> None:
    response = app.test_client().get(f"/raise/{error.__name__}")
    assert response.status_code == (409 if error is AppRefusal else HTTP_STATUS[error])
    details = (
        {"code": "ALREADY_ANSWERED", "runId": "run_1", "status": "running"}
        if error is RunNotWaitingError
        else {"code": "database_unavailable"}
        if error is DatabaseUnavailableError
        else {}
    )
    assert response.get_json() == {
        "error": "Refused for a reason the developer can act on.",
        "type": error.__name__,
        **details,
    }


def test_a_refusal_with_a_code_logs_one_line_for_the_operator(
    app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO", logger="relayline.web"):
        app.test_client().get(f"/raise/{RunNotWaitingError.__name__}")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "request refused: GET /raise/RunNotWaitingError -> 409 RunNotWaitingError "
        "ALREADY_ANSWERED 'Refused for a reason the developer can act on.'"
    ]


@pytest.mark.parametrize("error", sorted(NOT_HTTP, key=str), ids=lambda cls: cls.__name__)
def test_web_answers_a_run_failure_as_an_opaque_500(
    app: Flask, error: type[RelaylineError], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("ERROR", logger="relayline.web"):
        response = app.test_client().get(f"/raise/{error.__name__}")
    assert response.status_code == 500
    assert response.get_json() == {
        "error": "The server could not handle the request.",
        "type": "InternalError",
    }
    assert [r.exc_info[0] for r in caplog.records if r.exc_info] == [error]
