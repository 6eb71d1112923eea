"""Native adapter + SSE encoding of 100,000 text chunks against a bare json.dumps loop.

    .venv/bin/python bench/native_stream.py

Prints both timings and their ratio, measured in the same run (target: at most 3x).
"""

from __future__ import annotations

import json
import time

from relayline.shared.adapters import NativeAdapter

from relayline.shared.chunks import TextChunk
from relayline.shared.sse import encode_sse

COUNT = 100_000


def bare(chunks: list[TextChunk]) -> float:
    started = time.perf_counter()
    for chunk in chunks:
        payload = {"type": "text", "messageId": chunk.message_id, "content": chunk.content}
        _ = "data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n\n"
    return time.perf_counter() - started


def adapted(chunks: list[TextChunk]) -> float:
    adapter = NativeAdapter()
    started = time.perf_counter()
    for _ in encode_sse(event for chunk in chunks for event in adapter.transform(chunk)):
        pass
    return time.perf_counter() - started


def main() -> None:
    chunks = [TextChunk("msg_0123456789abcdef01234567", f"tok{i} é ") for i in range(COUNT)]
    bare(chunks[:1000]), adapted(chunks[:1000])  # warm up
    baseline = min(bare(chunks) for _ in range(3))
    ours = min(adapted(chunks) for _ in range(3))
    print(f"bare json.dumps loop : {baseline * 1000:8.1f} ms for {COUNT} events")
    print(f"native adapter + SSE : {ours * 1000:8.1f} ms for {COUNT} events")
    print(f"ratio                : {ours / baseline:8.2f}x (target <= 3x)")


if __name__ == "__main__":
    main()
