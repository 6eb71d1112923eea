"""Push consumers fill holes from the segment's log (issue 10, "Push").

The real pipeline pushes each turn through a real soketi (read by the official pusher-js
client) or a real Mercure hub. Fault injection on the client side drops envelopes before
they reach ``relayline.channels.Consumer`` (sequences 3-5; or everything before 4, as a browser
that subscribed late sees it); the consumer, given ``EnvelopesOverHttp`` on the web's
``GET /api/threads/<id>/segments/<streamId>/envelopes``, must deliver the whole segment,
in order, once each: exactly what the log stored. A log that no longer holds the hole
is a gap. The route itself: the owner only, 410 past what is kept, 400 for bad input.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from relayline.channels import Consumer, Envelope, GapError
from relayline.channels.keys import log_key
from relayline.channels.recovery import EnvelopesOverHttp
from relayline.channels.stream.log import entries
from relayline.shared.auth import mint_token
from tests.integration.test_push_delivery import user_turn
from tests.support.mercure_hub import MercureHub
from tests.support.mercure_sse import HubSubscription
from tests.support.push_stack import TIMEOUT, PushStack, new_thread, push_stack
from tests.support.pusher_js import PusherJs
from tests.support.redis_server import RedisDatabases
from tests.support.soketi import Soketi

pytestmark = pytest.mark.integration

SECRET = "push-recovery-secret-of-32-characters"
Keep = Callable[[dict[str, Any]], bool]


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory,
    redis_databases: RedisDatabases,
    soketi: Soketi,
    hub: MercureHub,
) -> Iterator[PushStack]:
    folder = tmp_path_factory.mktemp("push-recovery")
    with push_stack(folder, redis_databases, soketi=soketi, hub=hub) as running:
        yield running


def redis_of(stack: PushStack) -> redis.Redis:
    client: redis.Redis = stack.web.app.extensions["relayline"].redis
    return client


def pushed_frames(stack: PushStack, delivery: str, thread: str, path: str, body: Any) -> Any:
    """POST the turn pushed through ``delivery`` and read its envelopes as they arrive,
    to the terminal: (the 202 answer, every envelope the transport delivered)."""
    frames: list[dict[str, Any]] = []
    if delivery == "pusher":
        assert stack.soketi is not None
        client = PusherJs(
            stack.soketi, f"private-thread-{thread}", stack.url("/pusher/auth"), TIMEOUT
        )
        try:
            answer = stack.push(path, body, delivery)
            while not frames or frames[-1]["type"] != "stream.completed":
                line = client.next_line(TIMEOUT)
                if line["kind"] == "event":
                    frames.append(line["data"])
        finally:
            client.close()
        return answer, frames
    grant = stack.get("/mercure/token", threadId=thread).json()
    assert stack.hub is not None
    subscription = HubSubscription(stack.hub, grant["topic"], grant["token"], TIMEOUT)
    try:
        answer = stack.push(path, body, delivery)
        while not frames or frames[-1]["type"] != "stream.completed":
            frames += json.loads(subscription.next_update(TIMEOUT))
    finally:
        subscription.close()
    return answer, frames


def consume(stack: PushStack, thread: str, frames: list[dict[str, Any]], keep: Keep) -> Any:
    """Feed the frames ``keep`` lets through (the fault injection) to a consumer that
    recovers from the web: (what it delivered, the gaps it reported)."""
    delivered: list[Envelope] = []
    gaps: list[str] = []
    recover = EnvelopesOverHttp(stack.url(f"/api/threads/{thread}"), stack.headers)
    consumer = Consumer(delivered.append, gaps.append, recover=recover)
    for frame in frames:
        if keep(frame):
            consumer.feed(frame)
    return delivered, gaps


def stored(stack: PushStack, segment_id: str) -> list[Envelope]:
    return [Envelope.parse(text) for text in entries(redis_of(stack), segment_id)]


def dropped(*sequences: int) -> Keep:
    return lambda frame: frame["sequence"] not in sequences


@pytest.mark.parametrize(
    ("delivery", "protocol"),
    [("pusher", "native"), ("pusher", "agui"), ("pusher", "vercel"), ("mercure", "agui")],
)
def test_dropped_events_are_recovered_from_the_log(
    stack: PushStack, delivery: str, protocol: str
) -> None:
    thread = new_thread(f"drop-{delivery}-{protocol}")
    answer, frames = pushed_frames(stack, delivery, thread, *user_turn(protocol, thread, "hi"))
    history = stored(stack, answer["streamId"])
    assert len(history) > 6, history  # 3-5 lie inside the segment
    delivered, gaps = consume(stack, thread, frames, dropped(3, 4, 5))

    assert gaps == []
    assert delivered == history


def test_without_recovery_the_same_drop_is_a_gap(stack: PushStack) -> None:
    """The control: the hole is real, and only the log fills it."""
    thread = new_thread("drop-control")
    _, frames = pushed_frames(stack, "pusher", thread, *user_turn("native", thread, "hi"))
    consumer = Consumer(gap_timeout=0.0)
    with pytest.raises(GapError, match="Missing channel events"):
        for frame in frames:
            if dropped(3, 4, 5)(frame):
                consumer.feed(frame)
        consumer.poll()  # the deadline (0 s) has passed


def test_a_late_subscriber_catches_up(stack: PushStack) -> None:
    thread = new_thread("late")
    answer, frames = pushed_frames(stack, "pusher", thread, *user_turn("vercel", thread, "hi"))
    delivered, gaps = consume(stack, thread, frames, lambda frame: frame["sequence"] >= 4)
    assert gaps == []
    assert delivered == stored(stack, answer["streamId"])
    assert delivered[0].sequence == 0


def test_a_hole_the_log_no_longer_holds_is_a_gap(stack: PushStack) -> None:
    thread = new_thread("expired")
    answer, frames = pushed_frames(stack, "pusher", thread, *user_turn("native", thread, "hi"))
    redis_of(stack).delete(log_key(answer["streamId"]))  # the retention ran out
    delivered, gaps = consume(stack, thread, frames, dropped(3, 4, 5))
    assert gaps == ["Missing channel events"]
    assert [e.sequence for e in delivered] == [0, 1, 2]


# The route ----------------------------------------------------------------------------


def test_the_route_answers_what_is_kept_after_the_cursor(stack: PushStack) -> None:
    thread = new_thread("route")
    answer, _ = pushed_frames(stack, "mercure", thread, *user_turn("vercel", thread, "hi"))
    history = [json.loads(text) for text in entries(redis_of(stack), answer["streamId"])]
    url = f"/api/threads/{thread}/segments/{answer['streamId']}/envelopes"
    assert answer["envelopesUrl"] == url

    assert stack.get(url).json() == {"envelopes": history, "ended": True}
    assert stack.get(url, after="2").json() == {"envelopes": history[3:], "ended": True}
    last = str(history[-1]["sequence"])
    assert stack.get(url, after=last).json() == {"envelopes": [], "ended": True}

    for bad in ("x", "1.5", "-2", "", "٣"):
        refused = stack.get(url, after=bad)
        assert refused.status_code == 400, (bad, refused.text)
        assert "'after' must be a sequence number" in refused.json()["error"]
    refused = stack.get(f"/api/threads/{thread}/segments/NOT-HEX/envelopes")
    assert refused.status_code == 400

    other = "0" * 32  # well-formed, but not a segment of this thread
    for missing in (
        stack.get(f"/api/threads/{thread}/segments/{other}/envelopes"),
        stack.get(f"/api/threads/{new_thread('nobody')}/segments/{answer['streamId']}/envelopes"),
    ):
        assert missing.status_code == 404, missing.text

    client = redis_of(stack)
    client.xtrim(log_key(answer["streamId"]), maxlen=2, approximate=False)  # the last two kept
    trimmed = stack.get(url, after="0")
    assert trimmed.status_code == 410, trimmed.text
    assert "the cursor 0 is older" in trimmed.json()["error"]
    client.delete(log_key(answer["streamId"]))
    assert stack.get(url).status_code == 410
    assert stack.get(url, after="3").status_code == 410


def test_the_route_is_the_owners_only(
    tmp_path_factory: pytest.TempPathFactory, redis_databases: RedisDatabases, hub: MercureHub
) -> None:
    folder = tmp_path_factory.mktemp("push-recovery-token")
    with push_stack(
        folder, redis_databases, hub=hub, RELAYLINE_AUTH="token", SECRET_KEY=SECRET
    ) as token_stack:
        ann = token_stack.as_user({"Authorization": f"Bearer {mint_token(SECRET, 'ann')}"})
        bob = token_stack.as_user({"Authorization": f"Bearer {mint_token(SECRET, 'bob')}"})
        thread = new_thread("ann")
        answer, frames = pushed_frames(ann, "mercure", thread, *user_turn("native", thread, "hi"))
        url = answer["envelopesUrl"]

        assert ann.get(url).json()["ended"] is True
        foreign = bob.get(url)
        assert foreign.status_code == 404
        assert foreign.json() == {"error": f"Thread '{thread}' was not found.", "type": "NotFound"}
        assert token_stack.get(url).status_code == 401
        # Bob's consumer, given Bob's credentials, cannot fill Ann's hole.
        delivered, gaps = consume(bob, thread, frames, dropped(3, 4, 5))
        assert gaps == ["Missing channel events"]
        delivered, gaps = consume(ann, thread, frames, dropped(3, 4, 5))
        assert gaps == [] and delivered[-1].type == "stream.completed"
