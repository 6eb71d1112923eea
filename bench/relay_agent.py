"""The agent bench/relay.py's part 6 worker runs: a scripted model that streams one
answer of N chunks as fast as it can (no delay, no tool).

The message ``flood <N>`` (N one of ``SIZES``) answers ``answer(N)``: N chunks of
``CHUNK`` characters, chunk i being ``i`` zero-padded, so the client can check that
every chunk arrived once and in order."""

from __future__ import annotations

from relayline.shared.agent import AgentSpec
from relayline.shared.providers import ScriptedProvider

#: the turn sizes the bench asks for: a warm-up, --quick and the full size
SIZES = (100, 2_000, 20_000)
CHUNK = 5


def answer(chunks: int) -> str:
    return "".join(f"{index:0{CHUNK}d}" for index in range(chunks))


def message(chunks: int) -> str:
    return f"flood {chunks}"


SCRIPT: dict[str, object] = {
    "chunk_size": CHUNK,
    "rules": [{"match": f"^{message(n)}$", "steps": [{"text": answer(n)}]} for n in SIZES],
}


def build() -> AgentSpec:
    return AgentSpec(provider=ScriptedProvider(SCRIPT), system_prompt="Relay bench agent.")
