"""PusherChannel against a real soketi, read by the official pusher-js 8 client
(catalogue D, J 153-160): the shared behaviour suite on a private and on an end-to-end
encrypted channel, plus ordering, mixing and decryption checks."""

from __future__ import annotations

import base64
import json
import os
import threading
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pusher.crypto
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui

from relayline.channels import AbstractChannel, Consumer, Envelope, PublishError, PusherChannel
from relayline.channels.envelope import FRAGMENT, TERMINALS
from relayline.shared.agent import Agent, AgentSpec
from relayline.shared.events import ProtocolEvent
from relayline.shared.persistence import Store
from relayline.shared.protocols.adapter import StreamAdapter
from relayline.shared.protocols.agui import AGUIAdapter
from relayline.shared.protocols.vercel import VercelAIAdapter
from relayline.shared.providers import ScriptedProvider
from tests.support.channel_behaviour import ChannelBehaviour, terminal_arrived
from tests.support.channel_support import State
from tests.support.pusher_js import PusherJs
from tests.support.soketi import Soketi

pytestmark = pytest.mark.integration

KEY = base64.b64encode(os.urandom(32)).decode()
LONG = "Perugia è bella / 😀 日本語 " * 300
DONE = State("thread-42")


def pusher_name(name: str, encrypted: bool) -> str:
    """A Pusher channel for a suite name (``relayline:test:<hex>`` has colons)."""
    return ("private-encrypted-" if encrypted else "private-") + name.replace(":", "-")


class FlakyPusher:
    """A real client whose n-th batch is signed with a wrong secret: soketi refuses it
    (as HTTP 200 with an error body), the way a misconfigured deployment would."""

    def __init__(self, soketi: Soketi, fail_on: int | None) -> None:
        self.client = soketi.client(encryption_master_key_base64=KEY)
        self.wrong = Soketi(soketi.host, soketi.port, soketi.app_id, soketi.key, "wrong").client(
            encryption_master_key_base64=KEY
        )
        self.fail_on = fail_on
        self.batches = 0

    def __getattr__(self, name: str) -> Any:  # the master key lives on the real client
        return getattr(self.client, name)

    def trigger_batch(self, batch: list[dict[str, str]], already_encoded: bool = False) -> Any:
        self.batches += 1
        sender = self.wrong if self.batches == self.fail_on else self.client
        return sender.trigger_batch(batch, already_encoded=already_encoded)


class PusherSubscription:
    """pusher-js subscribed to one channel, authorized by a local endpoint that signs
    with ``signer`` (the SDK's ``authenticate``, ``shared_secret`` included)."""

    def __init__(self, soketi: Soketi, channel: str, signer: Any, timeout: float = 20.0) -> None:
        self.auth = _auth_server(signer)
        threading.Thread(target=self.auth.serve_forever, args=(0.05,), daemon=True).start()
        endpoint = f"http://127.0.0.1:{self.auth.server_port}/pusher/auth"
        try:
            self.client = PusherJs(soketi, channel, endpoint, timeout)
        except BaseException:
            self._stop_auth()
            raise
        self.logs = self.client.logs

    def _next(self, timeout: float) -> dict[str, Any]:
        return self.client.next_line(timeout)

    def events(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The next ``count`` events as envelopes; the Pusher event name is the type."""
        frames: list[dict[str, Any]] = []
        while len(frames) < count:
            line = self._next(timeout)
            if line["kind"] == "event":
                assert line["event"] == line["data"]["type"]
                frames.append(line["data"])
        return frames

    def receive(self, timeout: float) -> list[dict[str, Any]]:
        frames: list[dict[str, Any]] = []
        while not terminal_arrived(frames):
            frames.extend(self.events(1, timeout))
        return frames

    def wait_for_logs(self, pattern: str, count: int, timeout: float = 10.0) -> list[str]:
        """Wait for ``count`` decryption messages containing ``pattern``; fail on events."""
        while sum(pattern in log for log in self.logs) < count:
            line = self._next(timeout)
            assert line["kind"] == "log", f"unexpected {line}"
        return self.logs

    def close(self) -> None:
        self.client.close()
        self._stop_auth()

    def _stop_auth(self) -> None:
        self.auth.shutdown()
        self.auth.server_close()


def _auth_server(signer: Any) -> ThreadingHTTPServer:
    class Auth(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            form = dict(pair.split("=", 1) for pair in self.rfile.read(length).decode().split("&"))
            signed = signer.authenticate(form["channel_name"], form["socket_id"])
            body = json.dumps(
                {k: v.decode() if isinstance(v, bytes) else v for k, v in signed.items()}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return ThreadingHTTPServer(("127.0.0.1", 0), Auth)


class TestPusherBehaviour(ChannelBehaviour):
    encrypted = False

    @pytest.fixture(autouse=True)
    def _soketi(self, soketi: Soketi) -> None:
        self.soketi = soketi

    def make_channel(
        self, name: str, *, fragmenting: bool = False, fail_delivery: int | None = None
    ) -> AbstractChannel:
        return PusherChannel(
            FlakyPusher(self.soketi, fail_delivery),
            pusher_name(name, self.encrypted),
            max_request_bytes=2000 if fragmenting else 10_000,
            # The suite counts failed deliveries in events: one event per batch then.
            batch_size=1 if fail_delivery else 10,
        )

    def subscribe(self, name: str) -> PusherSubscription:
        signer = self.soketi.client(encryption_master_key_base64=KEY)
        return PusherSubscription(self.soketi, pusher_name(name, self.encrypted), signer)


class TestEncryptedPusherBehaviour(TestPusherBehaviour):
    """J159: every suite scenario on ``private-encrypted-*``, decrypted by pusher-js."""

    encrypted = True


def test_a_batch_soketi_refuses_is_a_publish_error(soketi: Soketi) -> None:  # D38
    wrong = Soketi(soketi.host, soketi.port, soketi.app_id, soketi.key, "wrong").client()
    channel = PusherChannel(wrong, "private-refused", batch_size=1)
    with pytest.raises(PublishError, match="Pusher refused the batch") as refused:
        channel.send(ProtocolEvent("text", {"content": "a"}))
    assert not refused.value.retryable and channel.stopped


def publish_segment(channel: PusherChannel, terminal: str) -> list[tuple[str, Any]]:
    """A short event, two long (fragmented) ones, then ``terminal``: the logical events."""
    events = [
        ProtocolEvent("TEXT_MESSAGE_START", {"messageId": "m1", "role": "assistant"}),
        ProtocolEvent("TEXT_MESSAGE_CONTENT", {"messageId": "m1", "delta": LONG}),
        ProtocolEvent("TOOL_CALL_RESULT", {"toolCallId": "c1", "content": LONG[::-1]}),
    ]
    for event in events:
        channel.send(event)
    {
        "stream.completed": lambda: channel.completed(DONE, "thread-42"),
        "stream.interrupted": lambda: channel.interrupted(DONE, "thread-42"),
        "stream.failed": lambda: channel.failed(RuntimeError("boom"), "thread-42"),
    }[terminal]()
    return [(e.type, e.data) for e in events] + [(terminal, {"workflowId": "thread-42"})]


def delivered(frames: list[dict[str, Any]], segment_id: str | None = None) -> list[Envelope]:
    found: list[Envelope] = []
    gaps: list[str] = []
    consumer = Consumer(found.append, gaps.append, segment_id=segment_id)
    for frame in frames:
        consumer.feed(frame)
    assert not gaps
    return found


@pytest.mark.parametrize("encrypted", [False, True], ids=["private", "encrypted"])
@pytest.mark.parametrize("terminal", sorted(TERMINALS))
def test_terminal_first_then_reversed_duplicated_fragments_gives_the_exact_events(
    soketi: Soketi, encrypted: bool, terminal: str
) -> None:
    # J153: what pusher-js delivered, replayed in the worst order a consumer may see.
    name = pusher_name(f"j153:{uuid.uuid4().hex}", encrypted)
    client = soketi.client(encryption_master_key_base64=KEY)
    subscription = PusherSubscription(soketi, name, client)
    try:
        expected = publish_segment(PusherChannel(client, name), terminal)
        frames = subscription.receive(10)
    finally:
        subscription.close()
    fragments = [f for f in frames if f["type"] == FRAGMENT]
    assert len({f["sequence"] for f in fragments}) == 2
    last, first = frames[-1], frames[0]
    assert last["type"] == terminal and frames == [first, *fragments, last]
    replay = [last, *(fragments + fragments)[::-1], first]
    assert [(e.type, e.data) for e in delivered(replay)] == expected


def test_independent_streams_on_one_channel_never_mix(soketi: Soketi) -> None:  # J155
    name = pusher_name(f"j155:{uuid.uuid4().hex}", False)
    client = soketi.client()
    subscription = PusherSubscription(soketi, name, client)
    try:
        first, second = PusherChannel(client, name, batch_size=1), PusherChannel(client, name)
        for n in range(3):
            first.send(ProtocolEvent("text", {"from": "first", "n": n}))
            second.send(ProtocolEvent("text", {"from": "second", "n": n, "long": LONG}))
        second.completed(DONE, "thread-b")
        first.completed(DONE, "thread-a")
        frames = subscription.receive(10) + subscription.receive(10)
    finally:
        subscription.close()
    for channel, label, thread in ((first, "first", "thread-a"), (second, "second", "thread-b")):
        events = delivered(frames, channel.segment_id)
        assert [e.data.get("from") for e in events[:-1]] == [label] * 3
        assert events[-1].data == {"workflowId": thread}


def test_a_wrong_key_or_altered_ciphertext_yields_no_plaintext(soketi: Soketi) -> None:  # J159
    name = pusher_name(f"j159:{uuid.uuid4().hex}", True)
    client = soketi.client(encryption_master_key_base64=KEY)
    other_key = base64.b64encode(os.urandom(32)).decode()
    stranger = PusherSubscription(
        soketi, name, soketi.client(encryption_master_key_base64=other_key)
    )
    reader = PusherSubscription(soketi, name, client)
    try:
        channel = PusherChannel(client, name, batch_size=1)
        channel.send(ProtocolEvent("text", {"secret": "plaintext"}))
        # pusher-js retries with a fresh key, then drops the event it cannot open.
        stranger.wait_for_logs("Failed to decrypt event with new key", 1)
        # An altered ciphertext, sent as is, is refused by the right key too.
        altered = _altered(channel, ProtocolEvent("text", {"secret": "altered"}))
        client.trigger_batch([altered], already_encoded=True)
        channel.completed(DONE, "thread-42")
        frames = reader.receive(10)
        reader.wait_for_logs("Failed to decrypt event with new key", 1)
        stranger.wait_for_logs("Failed to decrypt event with new key", 3)
    finally:
        stranger.close()
        reader.close()
    assert [(f["sequence"], f["type"], f["data"]) for f in frames] == [
        (0, "text", {"secret": "plaintext"}),
        (1, "stream.completed", {"workflowId": "thread-42"}),
    ]


def _altered(channel: PusherChannel, event: ProtocolEvent) -> dict[str, str]:
    """``event`` encrypted like the channel does, with one ciphertext byte flipped."""
    envelope = Envelope(channel.segment_id, 99, event.type, event.data).to_json()
    sealed = pusher.crypto.encrypt(channel.channel, envelope, base64.b64decode(KEY))
    ciphertext = bytearray(base64.b64decode(sealed["ciphertext"]))
    ciphertext[0] ^= 1
    sealed["ciphertext"] = base64.b64encode(bytes(ciphertext)).decode()
    return {"channel": channel.channel, "name": event.type, "data": json.dumps(sealed)}


#: one long answer in a few big chunks, so its deltas fragment
LONG_SCRIPT = {"chunk_size": 6000, "rules": [{"match": "", "steps": [{"text": LONG * 2}]}]}
ADAPTERS: dict[str, Callable[[str], StreamAdapter]] = {
    "agui": lambda thread: AGUIAdapter(thread, "client-run-1"),
    "vercel": lambda thread: VercelAIAdapter(),
}


@pytest.mark.parametrize("protocol", sorted(ADAPTERS))
def test_protocol_output_fragmented_through_pusher_arrives_intact(  # J160
    soketi: Soketi, sqlite_store: Store, protocol: str
) -> None:
    name = pusher_name(f"j160:{uuid.uuid4().hex}", False)
    client = soketi.client()
    agent = Agent(
        f"thread-{uuid.uuid4().hex[:8]}", AgentSpec(ScriptedProvider(LONG_SCRIPT)), sqlite_store
    )
    agent.set_stream_adapter(lambda: ADAPTERS[protocol](agent.thread_id))
    agent.set_channel(lambda: PusherChannel(client, name))
    subscription = PusherSubscription(soketi, name, client)
    try:
        pulled = list(agent.stream("Tell me about Perugia"))
        frames = subscription.receive(10)
    finally:
        subscription.close()
    assert sum(1 for f in frames if f["type"] == FRAGMENT) > 2
    events = delivered(frames)
    assert [(e.type, e.data) for e in events] == [(p.type, p.data) for p in pulled] + [
        ("stream.completed", {"workflowId": agent.thread_id})
    ]
    text = "".join(
        e.data.get("delta", "") for e in events if "CONTENT" in e.type or e.type == "text-delta"
    )
    assert text == LONG * 2
    if protocol == "agui":
        assert_valid_agui([{"type": e.type, **e.data} for e in events[:-1]])
