"""The agent bench/scale.py's workers run: a scripted model and one backend tool.

``three``/``five``: a backend tool call, then 100 text chunks over 3 or 5 seconds (a
real model's pace); ``quiet``: one tiny answer and no tool, the turn whose cost is the
fixed cost of a turn. Each answer's last chunk is ``[end]``, which the bench checks."""

from __future__ import annotations

from relayline.shared.agent import AgentSpec, tool
from relayline.shared.providers import ScriptedProvider

#: chunks of a realistic answer, and the characters of each
CHUNKS = 100
CHUNK_SIZE = 5
END = "[end]"
ANSWER = "word " * (CHUNKS - 1) + END


@tool
def lookup(key: str) -> str:
    """Read a value.

    Args:
        key: The key.
    """
    return f"value of {key}"


def _paced(match: str, seconds: float) -> dict[str, object]:
    return {
        "match": match,
        "steps": [
            {"tool_calls": [{"name": "lookup", "arguments": {"key": "k"}}]},
            {"chunk_delay_ms": round(seconds * 1000 / CHUNKS), "text": ANSWER},
        ],
    }


SCRIPT: dict[str, object] = {
    "chunk_size": CHUNK_SIZE,
    "rules": [
        _paced("^three", 3.0),
        _paced("^five", 5.0),
        {"match": "^quiet", "steps": [{"text": END}]},
    ],
}


def build() -> AgentSpec:
    return AgentSpec(
        provider=ScriptedProvider(SCRIPT), tools=[lookup], system_prompt="Bench agent."
    )
