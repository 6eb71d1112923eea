"""The three frontend protocols by name, in one table: which adapter a segment gets,
built from the client's seed (JSON, so a Celery task can carry it), and the headers
its HTTP response starts with.

Unknown names are refused with the known ones listed (kombu's transport aliases work
the same way), so adding a protocol is one row here and one package beside this one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from relayline.shared.events import ProtocolEvent
from relayline.shared.jobs import PROTOCOL_NAMES, ClientSeed, ProtocolName
from relayline.shared.protocols.adapter import StreamAdapter
from relayline.shared.protocols.agui.adapter import AGUIAdapter
from relayline.shared.protocols.native.adapter import NativeAdapter
from relayline.shared.protocols.vercel.adapter import VercelAIAdapter

PROTOCOLS = PROTOCOL_NAMES


@dataclasses.dataclass(frozen=True)
class ProtocolEntry:
    """One protocol: its adapter built from (thread id, seed), and response headers."""

    adapter: Callable[[str, ClientSeed], StreamAdapter]
    headers: Mapping[str, str]


def _agui(thread_id: str, seed: ClientSeed) -> StreamAdapter:
    return AGUIAdapter(
        thread_id, seed.get("runId"), seed.get("messages") or (), seed.get("state") or {}
    )


def _vercel(thread_id: str, seed: ClientSeed) -> StreamAdapter:
    return VercelAIAdapter(seed.get("messageId"), seed.get("parts") or ())


def _native(thread_id: str, seed: ClientSeed) -> StreamAdapter:
    return NativeAdapter()


REGISTRY: Mapping[ProtocolName, ProtocolEntry] = {
    "agui": ProtocolEntry(_agui, AGUIAdapter.HEADERS),
    "vercel": ProtocolEntry(_vercel, VercelAIAdapter.HEADERS),
    "native": ProtocolEntry(_native, NativeAdapter.HEADERS),
}


def protocol(name: str) -> ProtocolEntry:
    """The protocol called ``name``; a clear error naming the known ones otherwise."""
    try:
        return REGISTRY[name]  # type: ignore[index]
    except KeyError:
        raise ValueError(f"Unknown protocol {name!r}; expected one of {PROTOCOLS}.") from None


def adapter_factory(
    protocol_name: str, thread_id: str, seed: ClientSeed
) -> Callable[[], StreamAdapter]:
    """A factory of fresh adapters for ``protocol_name``, seeded with what the client
    holds (AG-UI: ``runId``, ``messages``, ``state``; Vercel: ``messageId`` and
    ``parts`` of the assistant message a continuation extends)."""
    entry = protocol(protocol_name)
    return lambda: entry.adapter(thread_id, seed)


def failure_frames(
    protocol_name: str,
    thread_id: str,
    seed: ClientSeed,
    error: BaseException,
    *,
    started: bool,
    ended_run: str | None = None,
) -> list[ProtocolEvent]:
    """The protocol's error frames for a failure outside the run (admission refused,
    task lost, relay broken). ``started``: the client already got the start frames.

    ``ended_run``: the run this failure ends for good (a worker refusing it), else
    None: the run may go on (the stream broke, another request carries it), so the
    native frames carry no ``done`` and the client knows to resume."""
    adapter = adapter_factory(protocol_name, thread_id, seed)()
    if ended_run is not None:
        adapter.bind_run(ended_run)
    frames = [] if started else adapter.start()
    return frames + adapter.error(error)
