"""The running pipeline with push delivery, and the subscribers that read it.

A ``PushStack`` is the real pipeline of ``tests.support.stack`` (a Celery worker
process and the web app on a real port, SQLite, Redis) whose environment points at a
real soketi and a real Mercure hub. Subscribers are what a browser would use, authorized
by *our* endpoints:

- ``PusherListener``: the official pusher-js 8 client (``tests/node/pusher-client``)
  subscribed to ``private[-encrypted]-thread-<id>`` with ``channelAuthorization`` at the
  stack's ``/pusher/auth`` (so pusher-js also decrypts end-to-end encrypted channels);
- ``MercureListener``: an SSE client on the hub holding the subscriber JWT that the
  stack's ``GET /mercure/token`` hands out.

Both feed what arrives into ``relayline.channels.Consumer``, which orders, joins and checks it:
a test reads whole segments (``segment()``: the logical events up to the terminal).
Push has no replay, so a listener is ready (subscribed) when its constructor returns,
and tests POST only after that.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from relayline.channels import Consumer, Envelope
from tests.support.mercure_hub import MercureHub
from tests.support.mercure_sse import HubSubscription
from tests.support.pusher_js import PusherJs
from tests.support.redis_server import RedisDatabases
from tests.support.soketi import Soketi
from tests.support.stack import WebServer, Worker, running_stack, stack_env

#: generous bounds for a loaded machine: a wait that runs out is a failure, never a pause
TIMEOUT = 60.0
#: where threads' Mercure topics live (``<RELAYLINE_PUBLIC_URL>/threads/<id>``)
PUBLIC_URL = "https://relayline.test"


def push_env(
    soketi: Soketi | None = None,
    hub: MercureHub | None = None,
    *,
    master_key: str | None = None,
) -> dict[str, str]:
    """The settings of docs/DESIGN.md section 8 that configure push delivery."""
    env = {"RELAYLINE_PUBLIC_URL": PUBLIC_URL}
    if soketi is not None:
        env |= {
            "PUSHER_APP_ID": soketi.app_id,
            "PUSHER_KEY": soketi.key,
            "PUSHER_SECRET": soketi.secret,
            "PUSHER_HOST": soketi.host,
            "PUSHER_PORT": str(soketi.port),
        }
        if master_key is not None:
            env["PUSHER_ENCRYPTION_MASTER_KEY_BASE64"] = master_key
    if hub is not None:
        env |= {
            "MERCURE_HUB_URL": hub.url,
            "MERCURE_PUBLISHER_JWT_KEY": hub.publisher_key,
            "MERCURE_SUBSCRIBER_JWT_KEY": hub.subscriber_key,
        }
    return env


def new_thread(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class PushStack:
    """The running stack and its servers; ``headers`` go with every request (a Bearer
    token when the stack runs with RELAYLINE_AUTH=token)."""

    def __init__(
        self,
        web: WebServer,
        workers: list[Worker],
        counts: Path,
        soketi: Soketi | None,
        hub: MercureHub | None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.web = web
        self.workers = workers
        self.counts = counts
        self.soketi = soketi
        self.hub = hub
        self.headers = dict(headers or {})

    def as_user(self, headers: Mapping[str, str]) -> PushStack:
        """The same stack, asking as someone else."""
        return PushStack(self.web, self.workers, self.counts, self.soketi, self.hub, headers)

    def url(self, path: str, delivery: str | None = None) -> str:
        query = f"?delivery={delivery}" if delivery else ""
        return f"{self.web.url}{path}{query}"

    def post(self, path: str, body: Any, delivery: str | None = None) -> requests.Response:
        return requests.post(
            self.url(path, delivery), json=body, headers=self.headers, timeout=TIMEOUT
        )

    def get(self, path: str, **params: str) -> requests.Response:
        return requests.get(self.url(path), params=params, headers=self.headers, timeout=TIMEOUT)

    def push(self, path: str, body: Any, delivery: str) -> dict[str, Any]:
        """POST with ``?delivery=``: the 202 answer naming where to listen."""
        response = self.post(path, body, delivery)
        assert response.status_code == 202, response.text
        assert response.headers["Content-Type"].startswith("application/json")
        answer: dict[str, Any] = response.json()
        return answer

    def relay(self, path: str, body: Any) -> list[dict[str, Any]]:
        """POST with ``?delivery=relay`` and read the SSE response to its end."""
        response = requests.post(
            self.url(path, "relay"),
            json=body,
            headers=self.headers,
            timeout=TIMEOUT,
            stream=True,
        )
        assert response.status_code == 200, response.text
        assert response.headers["Content-Type"].startswith("text/event-stream")
        return [
            json.loads(line[len("data: ") :])
            for line in response.iter_lines(decode_unicode=True)
            if line and line.startswith("data: ")
        ]

    def received_tasks(self) -> int:
        """Tasks the workers have received so far, from their logs."""
        return sum(worker.log.read_text().count("] received") for worker in self.workers)

    def pusher_listener(self, thread: str, *, encrypted: bool = False) -> PusherListener:
        assert self.soketi is not None, "this stack has no soketi"
        prefix = "private-encrypted-" if encrypted else "private-"
        return PusherListener(self.soketi, f"{prefix}thread-{thread}", self.url("/pusher/auth"))

    def mercure_listener(self, thread: str) -> MercureListener:
        assert self.hub is not None, "this stack has no Mercure hub"
        access = self.get("/mercure/token", threadId=thread)
        assert access.status_code == 200, access.text
        grant: dict[str, str] = access.json()
        assert grant["hubUrl"] == self.hub.url
        assert grant["topic"] == f"{PUBLIC_URL}/threads/{thread}"
        return MercureListener(self.hub, grant["topic"], grant["token"])


@contextmanager
def push_stack(
    tmp_path: Path,
    redis_databases: RedisDatabases,
    *,
    soketi: Soketi | None = None,
    hub: MercureHub | None = None,
    master_key: str | None = None,
    **env: str,
) -> Iterator[PushStack]:
    """A stack of its own, on a Redis database it holds while it runs."""
    from relayline.shared.persistence import Store

    database_url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    Store(database_url).dispose()  # migrate before any worker touches the database
    with redis_databases.database(f"push stack {tmp_path.name}") as redis_url:
        full_env = {
            **stack_env(redis_url, database_url, tmp_path),
            **push_env(soketi, hub, master_key=master_key),
            **env,
        }
        with running_stack(full_env, workers=1) as (web, workers):
            yield PushStack(web, workers, tmp_path, soketi, hub)


# ---------------------------------------------------------------------------------------
# Subscribers
# ---------------------------------------------------------------------------------------


class _Listener:
    """Frames in, whole segments out: a Consumer over everything the transport gave."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []  # as they arrived, for transport checks
        self._delivered: list[Envelope] = []
        self._gaps: list[str] = []
        self._consumer = Consumer(self._delivered.append, self._gaps.append)

    def _feed(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)
        self._consumer.feed(frame)
        assert not self._gaps, f"the consumer found a gap: {self._gaps}"

    def _wait(self, timeout: float) -> None:
        """Block until the transport gives more frames (fed in by the subclass)."""
        raise NotImplementedError

    def segment(self, timeout: float = TIMEOUT) -> list[Envelope]:
        """The next segment's logical events, in order, its terminal last."""
        deadline = time.monotonic() + timeout
        while not any(e.is_terminal for e in self._delivered):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"no terminal within {timeout}s; delivered {len(self._delivered)} events"
                )
            self._wait(remaining)
        end = next(i for i, e in enumerate(self._delivered) if e.is_terminal) + 1
        found, self._delivered[:end] = self._delivered[:end], []
        return found


class PusherListener(_Listener):
    """pusher-js subscribed to ``channel``, authorized by ``auth_endpoint``."""

    def __init__(self, soketi: Soketi, channel: str, auth_endpoint: str) -> None:
        super().__init__()
        self.channel = channel
        self.client = PusherJs(soketi, channel, auth_endpoint, TIMEOUT)
        self.logs = self.client.logs

    def _wait(self, timeout: float) -> None:
        line = self.client.next_line(timeout)
        if line["kind"] == "log":  # pusher-js could not decrypt something
            raise AssertionError(f"pusher-js: {line['message']}")
        # The Pusher event name is the envelope type (reference 2.6, subscribeToPusher).
        assert line["event"] == line["data"]["type"], line
        self._feed(line["data"])

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> PusherListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class MercureListener(_Listener):
    """An SSE subscription to ``topic`` on the hub with a subscriber ``token``.

    The hub registers a subscriber before answering but sends the response headers
    only with the first update, so readiness is observed, not assumed: the listener
    also subscribes to a public probe topic and publishes probes there until one comes
    back. From then on the hub is dispatching to it. Each update's data must be a JSON
    array of envelopes (reference 3.4)."""

    def __init__(self, hub: MercureHub, topic: str, token: str) -> None:
        super().__init__()
        self.topic = topic
        self.updates: list[str] = []  # every update on ``topic`` as the hub sent it
        self.hub = HubSubscription(hub, topic, token, TIMEOUT)

    def _wait(self, timeout: float) -> None:
        update = self.hub.next_update(timeout)
        self.updates.append(update)
        envelopes = json.loads(update)
        assert isinstance(envelopes, list), "a Mercure update is a JSON array of envelopes"
        for envelope in envelopes:
            self._feed(envelope)

    def updates_until(self, marker: str, timeout: float = TIMEOUT) -> list[str]:
        """Updates on the topic before the next one whose data is ``marker`` (a public
        update the test publishes after the ones it expects: everything dispatched
        earlier has arrived once the marker has)."""
        before: list[str] = []
        while (update := self.hub.next_update(timeout)) != marker:
            before.append(update)
        return before

    def close(self) -> None:
        self.hub.close()

    def __enter__(self) -> MercureListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------
# Comparing pushed output with relayed output
# ---------------------------------------------------------------------------------------


def protocol_events(segment: list[Envelope]) -> list[dict[str, Any]]:
    """A pushed segment as the relay would frame it: ``{type, ...data}`` for every event
    but the terminal (the relay ends its response instead of sending one)."""
    assert segment and segment[-1].is_terminal
    return [{"type": e.type, **e.data} for e in segment[:-1]]


def shape(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """What must match between deliveries of the same turn: each event's type and its
    text (``delta`` or ``content``), not the ids minted per run."""
    texts = []
    for event in events:
        text = event.get("delta", event.get("content"))
        texts.append((event["type"], text if isinstance(text, str) else None))
    return texts


def text(events: list[dict[str, Any]], *types: str) -> str:
    """The concatenated ``delta``/``content`` of the events of ``types``."""
    return "".join(
        str(event.get("delta", event.get("content", "")))
        for event in events
        if event["type"] in types
    )
