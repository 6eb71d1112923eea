"""Intake slots (web.intake, RELAYLINE_WEB_INTAKE_SLOTS): at most N POSTs of a web
process at once do the work before their response starts, a relayed body holds no
slot, and a refused request gives its slot back. Real Redis and SQLite, no worker."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

import relayline.web.dispatch
from relayline.shared.settings import Settings
from relayline.web import admission, create_app
from tests.support.http_app import PUSH_ENV
from tests.support.stack import fresh_env

pytestmark = pytest.mark.integration

#: seconds a request that should get a slot may take before the test calls it stuck
PATIENCE = 10.0


def make_app(tmp_path: Path, redis_url: str, slots: int) -> Flask:
    env = fresh_env(tmp_path, redis_url, **PUSH_ENV, RELAYLINE_WEB_INTAKE_SLOTS=str(slots))
    return create_app(Settings.from_env(env))


@pytest.fixture
def one_slot(tmp_path: Path, redis_url: str) -> Iterator[Flask]:
    app = make_app(tmp_path, redis_url, 1)
    yield app
    app.extensions["relayline"].close()


def in_thread(call: Callable[[], Any]) -> Any:
    """``call()`` on another thread; its result, or a failure if it never got a slot."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(PATIENCE)
    assert out, "the request waited for a slot nobody gave back"
    return out[0]


def post(app: Flask, thread_id: str, body: object, delivery: str = "pusher") -> int:
    response = app.test_client().post(
        f"/api/threads/{thread_id}/messages", json=body, query_string={"delivery": delivery}
    )
    status: int = response.status_code
    return status


def test_refused_and_pushed_requests_give_their_slot_back(one_slot: Flask) -> None:
    assert in_thread(lambda: post(one_slot, "slots-a", {"content": " "})) == 400
    assert in_thread(lambda: post(one_slot, "slots-a", {"nope": 1})) == 400
    assert in_thread(lambda: post(one_slot, "slots-a", {"content": "hi"})) == 202
    assert in_thread(lambda: post(one_slot, "slots-b", {"content": "hi"})) == 202


def test_a_relayed_body_holds_no_slot(one_slot: Flask) -> None:
    def relayed(thread_id: str) -> Any:
        with one_slot.test_request_context(
            f"/api/threads/{thread_id}/messages", method="POST", json={"content": "hello"}
        ):
            return one_slot.full_dispatch_request()  # the body is not read yet

    first = in_thread(lambda: relayed("slots-r1"))
    second = in_thread(lambda: relayed("slots-r2"))  # while the first stream is open
    assert (first.status_code, second.status_code) == (200, 200)
    first.close()
    second.close()


def test_no_more_than_the_slots_do_intake_at_once(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(tmp_path, redis_url, 2)
    inside = threading.Condition()
    active, most = 0, 0
    go = threading.Event()
    real = admission.admit_turn

    def held(*args: Any, **kwargs: Any) -> None:
        nonlocal active, most
        with inside:
            active += 1
            most = max(most, active)
            inside.notify_all()
        go.wait(PATIENCE)  # held inside the intake until the test lets it go
        with inside:
            active -= 1
        real(*args, **kwargs)

    monkeypatch.setattr(relayline.web.dispatch, "admit_turn", held)
    statuses: list[int] = []
    threads = [
        threading.Thread(
            target=lambda i=i: statuses.append(post(app, f"slots-{i}", {"content": "hi"}))
        )
        for i in range(5)
    ]
    try:
        for thread in threads:
            thread.start()
        with inside:
            assert inside.wait_for(lambda: active == 2, PATIENCE)
            # The three others wait for a slot: none gets in while both are held.
            assert not inside.wait_for(lambda: active > 2, 1.0)
    finally:
        go.set()
        for thread in threads:
            thread.join(PATIENCE)
        app.extensions["relayline"].close()
    assert most == 2
    assert statuses == [202] * 5


def test_bad_slot_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="RELAYLINE_WEB_INTAKE_SLOTS must be positive"):
        Settings.from_env({"RELAYLINE_WEB_INTAKE_SLOTS": "0"})
    with pytest.raises(ValueError, match="RELAYLINE_WEB_INTAKE_SLOTS must be between 1"):
        Settings.from_env({"RELAYLINE_WEB_INTAKE_SLOTS": "5000"})
    with pytest.raises(ValueError, match="RELAYLINE_WEB_INTAKE_SLOTS must be a int"):
        Settings.from_env({"RELAYLINE_WEB_INTAKE_SLOTS": "few"})
    assert Settings.from_env({}).web_intake_slots == 16
