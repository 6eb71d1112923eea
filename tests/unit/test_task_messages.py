"""What a worker refuses to run, and why (worker.task_messages, worker.envelopes): each
kind of message gets its stable reason code, and a real task message of relayline's
web passes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from celery import Celery
from kombu.message import Message
from kombu.serialization import dumps

from relayline.shared.jobs import RUN_TURN, TurnJob, UserTurn
from relayline.worker.dead_letter import REASON_CODES, Refusal
from relayline.worker.envelopes import MAX_ENVELOPE_BYTES, Unpacked, unpack
from relayline.worker.task_messages import MAX_BODY_BYTES, refusal, task_of


@pytest.fixture(scope="module")
def tasks() -> dict[str, Any]:
    """A real Celery app's task registry with a task of relayline's parameters."""
    app = Celery("checks", set_as_current=False)

    @app.task(name=RUN_TURN, bind=True, shared=False)
    def run_turn(task: object, job: dict[str, Any]) -> str:
        return "done"

    return dict(app.tasks)


def _headers(**extra: object) -> dict[str, object]:
    return {"task": RUN_TURN, "id": "t-1", "eta": None, "expires": None, **extra}


def _kombu_message(body: bytes, headers: object, content_type: str = "application/json") -> Message:
    """A received message as kombu builds it (its stubs type the body as text and the
    headers as text only)."""
    build: Any = Message
    message: Message = build(
        body=body,
        content_type=content_type,
        content_encoding="utf-8",
        headers=headers,
        accept=["application/json"],
    )
    return message


def _message(
    body: bytes, headers: object = None, content_type: str = "application/json"
) -> Message:
    return _kombu_message(body, _headers() if headers is None else headers, content_type)


def _code(message: Message, tasks: dict[str, Any]) -> str | None:
    refused = refusal(message, tasks)
    return None if refused is None else refused.code


def test_a_message_as_celery_sends_it_passes(tasks: dict[str, Any]) -> None:
    """What the web sends (Celery's own encoding of a real job) is runnable."""
    job = TurnJob(thread_id="t", run_id="r", protocol="agui", message=UserTurn("u1", "hi"))
    app = Celery("sender", set_as_current=False)
    sent = app.amqp.as_task_v2("t-1", RUN_TURN, kwargs={"job": job.to_json()})
    content_type, encoding, body = dumps(sent.body, serializer="json")
    assert encoding == "utf-8"
    message = _kombu_message(
        body.encode() if isinstance(body, str) else body, dict(sent.headers), content_type
    )
    assert refusal(message, tasks) is None
    assert task_of(message) == (RUN_TURN, "t-1")


NOT_SHAPED = [b'{"a":1}', b"[1]", b"[]", b'"x"', b"null", b"[[],[],{}]", b'["x",{},{}]']
NOT_SHAPED += [b'[[],{"1":2},null]', b'[[],{},{"callbacks":"x"}]', b'[[],{},{"chord":[]}]']


@pytest.mark.parametrize("body", NOT_SHAPED)
def test_bodies_not_shaped_as_args_kwargs_embed_are_refused(
    tasks: dict[str, Any], body: bytes
) -> None:
    assert _code(_message(body), tasks) == "not-task-shape"


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        (None, "not-task-shape"),
        ({}, "not-task-shape"),
        ({"id": "t-1"}, "not-task-shape"),  # protocol 1 kept the task name in the body
        (_headers(task="relayline.nope"), "unknown-task"),
        (_headers(id=5), "bad-headers"),
        (_headers(task=""), "bad-headers"),
        (_headers(expires="soon"), "bad-headers"),
        (_headers(eta=12), "bad-headers"),
        (_headers(timelimit="x"), "bad-headers"),
        (_headers(timelimit=[1, 2, 3]), "bad-headers"),
        (_headers(retries="1"), "bad-headers"),
        (_headers(shadow=["x"]), "bad-headers"),
        (_headers(ignore_result="no"), "bad-headers"),
    ],
)
def test_headers_celery_could_not_read_are_refused(
    tasks: dict[str, Any], headers: dict[str, object] | None, code: str
) -> None:
    message = _kombu_message(b'[[],{"job":{}},{}]', headers)
    if headers is None:
        received: Any = message
        received.headers = None  # what an AMQP message without a header table has
    assert _code(message, tasks) == code


def test_good_headers_of_every_kind_pass(tasks: dict[str, Any]) -> None:
    headers = _headers(
        eta="2030-01-01T00:00:00+00:00", timelimit=[1800, 1500.0], retries=2, shadow=None
    )
    assert _code(_message(b'[[],{"job":{}},{}]', headers), tasks) is None


def test_bodies_that_do_not_decode_are_undecodable(tasks: dict[str, Any]) -> None:
    assert _code(_message(b"{not json"), tasks) == "undecodable"
    assert _code(_message(b'["\xff"]'), tasks) == "undecodable"
    assert _code(_message(b"[" * 100_000), tasks) == "undecodable"
    pickled = _message(b"\x80\x04N.", content_type="application/x-python-serialize")
    assert _code(pickled, tasks) == "undecodable"  # not an accepted content type


def test_size_is_refused_before_decoding_and_depth_after(tasks: dict[str, Any]) -> None:
    big = json.dumps([[], {"job": "x" * MAX_BODY_BYTES}, {}]).encode()
    assert _code(_message(big), tasks) == "too-large"
    deep: Any = 1
    for _ in range(200):
        deep = {"a": deep}
    assert _code(_message(json.dumps([[], {"job": deep}, {}]).encode()), tasks) == "too-deep"


def test_arguments_are_bound_to_the_task_s_parameters(tasks: dict[str, Any]) -> None:
    assert _code(_message(b"[[],{},{}]"), tasks) == "bad-arguments"
    assert _code(_message(b'[[],{"job":{},"other":1},{}]'), tasks) == "bad-arguments"
    assert _code(_message(b"[[1,2],{},{}]"), tasks) == "bad-arguments"
    assert _code(_message(b"[[{}],{},{}]"), tasks) is None  # job given by position


def _envelope(**changes: object) -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "body": base64.b64encode(b"[[],{},{}]").decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": _headers(),
        "properties": {
            "body_encoding": "base64",
            "delivery_tag": "tag-1",
            "delivery_info": {"exchange": "celery", "routing_key": "celery"},
        },
    }
    envelope.update(changes)
    return envelope


def test_an_envelope_kombu_can_deliver_is_unpacked() -> None:
    envelope = _envelope()
    assert unpack(json.dumps(envelope).encode()) == Unpacked(envelope)


@pytest.mark.parametrize(
    "item",
    [
        b"\xff\x00 garbage",
        b"not json",
        b"[" * 100_000,
        b'{"a":1}',
        b"[1]",
        b"null",
        json.dumps(_envelope(properties={"delivery_tag": "t"})).encode(),
        json.dumps(_envelope(properties={"delivery_tag": 1, "delivery_info": {}})).encode(),
        json.dumps(_envelope(headers="x")).encode(),
        json.dumps(_envelope(body=5)).encode(),
        json.dumps(_envelope(body="abc")).encode(),  # bad base64 padding
        json.dumps(
            _envelope(
                properties={
                    "body_encoding": "rot13",
                    "delivery_tag": "t",
                    "delivery_info": {"exchange": "celery", "routing_key": "celery"},
                }
            )
        ).encode(),
    ],
)
def test_items_kombu_could_not_deliver_are_not_envelopes(item: bytes) -> None:
    refused = unpack(item)
    assert isinstance(refused, Refusal) and refused.code == "not-an-envelope", refused


def test_an_item_over_the_bound_is_refused_unparsed() -> None:
    refused = unpack(b" " * (MAX_ENVELOPE_BYTES + 1))
    assert isinstance(refused, Refusal) and refused.code == "too-large"


def test_the_reason_codes_are_the_documented_ones() -> None:
    assert REASON_CODES == (
        "not-an-envelope",
        "too-large",
        "undecodable",
        "not-task-shape",
        "bad-headers",
        "unknown-task",
        "bad-arguments",
        "too-deep",
    )
