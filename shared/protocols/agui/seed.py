"""The AG-UI snapshot seed: what the client holds, completed from storage.

A client that sends only its latest message (stateful backend) and one that sends its
whole history must see the same MESSAGES_SNAPSHOT, with no message twice. The work is
split so that the web's job stays small:

- the web keeps only the client's messages the store may not hold (``unstored``),
  using one indexed lookup of ids (``lookup_ids``), so the job does not grow with
  the thread;
- the worker puts the stored snapshot first and appends those it still does not
  hold (``snapshot``), matched exactly against the hydrated history.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from relayline.shared.jobs import ClientSeed
from relayline.shared.persistence.store import Store
from relayline.shared.protocols.agui.hydrate import Redact, hydrate

REASONING_PREFIX = "reasoning_"


def _client_id(message: object) -> str | None:
    if isinstance(message, Mapping) and isinstance(message.get("id"), str):
        return str(message["id"])
    return None


def lookup_ids(client: Sequence[Any]) -> list[str]:
    """The stored message ids worth asking for: each client message id, and the stored
    message a derived reasoning id (``reasoning_<id>``) stands for."""
    ids: list[str] = []
    for message in client:
        found = _client_id(message)
        if found is None:
            continue
        ids.append(found)
        if found.startswith(REASONING_PREFIX):
            ids.append(found.removeprefix(REASONING_PREFIX))
    return ids


def unstored(client: Sequence[Any], stored_ids: Collection[str]) -> list[dict[str, Any]]:
    """The client's messages the store may not hold. ``stored_ids``: which of
    ``lookup_ids(client)`` the thread stores.

    Dropped: messages stored under their own id, reasoning derived from a stored
    message, and tool messages older than the newest stored message the client holds
    (they answer a batch that settled, whose results the store holds). What remains is
    bounded by what the client added itself, not by the length of the thread."""
    anchor = -1
    for index, message in enumerate(client):
        if _client_id(message) in stored_ids:
            anchor = index
    kept: list[dict[str, Any]] = []
    for index, message in enumerate(client):
        found = _client_id(message)
        if not isinstance(message, Mapping) or found in stored_ids:
            continue
        derived = found is not None and found.removeprefix(REASONING_PREFIX) != found
        if derived and str(found).removeprefix(REASONING_PREFIX) in stored_ids:
            continue  # the reasoning of a stored message
        if message.get("role") == "tool" and index < anchor:
            continue
        kept.append(dict(message))
    return kept


def snapshot(
    stored: Sequence[Mapping[str, Any]], client: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The hydrated ``stored`` messages, then the client's that they do not hold.

    A result the client sent under its own message id is stored as ``result_<callId>``:
    only the stored copy is kept, or snapshots would show the result twice."""
    known = {m.get("id") for m in stored}
    answered = {m.get("toolCallId") for m in stored if m.get("role") == "tool"}
    extra = [
        dict(m)
        for m in client
        if m.get("id") not in known
        and not (m.get("role") == "tool" and m.get("toolCallId") in answered)
    ]
    return [*(dict(m) for m in stored), *extra]


def agui_seed(store: Store, thread_id: str, seed: ClientSeed, redact: Redact) -> ClientSeed:
    """The job's seed with ``messages`` completed into the full snapshot from ``store``
    (the thread's history and current run, as a reload would show them)."""
    stored = hydrate(store.messages(thread_id), store.current_run(thread_id), redact=redact)
    return {**seed, "messages": snapshot(stored["messages"], seed.get("messages") or [])}
