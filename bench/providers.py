"""The model provider layer: CPU per streamed delta, import time and memory.

    .venv/bin/python bench/providers.py [--chunks 2000] [--rounds 5]

A local server (its own process, so that its CPU is not counted) replays one OpenAI chat
completion of ``--chunks`` content chunks in OpenAI's documented SSE wire format. In the
same run, this process reads it through:

- ``pydantic_ai.direct.model_request_stream_sync`` with ``OpenAIChatModel``, iterated bare
  (the baseline the provider layer is judged against: target at most 1.5x);
- ``PydanticAIProvider`` around the same model (our mapping, the cancel watch);
- ``OpenAIProvider`` (requests and our own SSE parsing, no pydantic-ai).

CPU is ``time.process_time`` of this process per streamed delta (best of ``--rounds``). The
same comparison runs without HTTP on pydantic-ai's ``FunctionModel``, which isolates the
layer from the wire. Then fresh interpreters measure what each path costs to import and
to hold after one call (peak RSS), against a bare interpreter importing ``requests``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pydantic_ai import messages as pai  # noqa: E402
from pydantic_ai.direct import model_request_stream_sync  # noqa: E402
from pydantic_ai.models import ModelRequestParameters  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider as PaiOpenAI  # noqa: E402

from relayline.shared.messages import Message  # noqa: E402
from relayline.shared.providers import ModelRequest, OpenAIProvider, PydanticAIProvider  # noqa: E402
from tests.support.model_wire import API_KEY, ModelWire, Reply, openai_text  # noqa: E402

REQUEST = ModelRequest("Be brief.", (Message.user("Count.", id="m1"),), ())


def _serve(chunks: int, pipe: Connection) -> None:
    wire = ModelWire()
    wire.queue(Reply(openai_text(chunks)))
    wire.start()
    pipe.send(wire.server_port)
    pipe.recv()  # until the parent is done
    wire.stop()


def cpu_per_delta(run: Callable[[], int], rounds: int) -> tuple[float, int]:
    """Best CPU seconds per delta over ``rounds`` runs, and the deltas of one run."""
    best, deltas = float("inf"), 0
    run()  # warm up: imports, connection setup, caches
    for _ in range(rounds):
        started = time.process_time()
        deltas = run()
        best = min(best, (time.process_time() - started) / max(deltas, 1))
    return best, deltas


def direct(model: Any) -> Callable[[], int]:
    messages = [
        pai.ModelRequest(parts=[pai.SystemPromptPart("Be brief."), pai.UserPromptPart("Count.")])
    ]

    def run() -> int:
        count = 0
        params = ModelRequestParameters(allow_text_output=True)
        with model_request_stream_sync(model, messages, model_request_parameters=params) as stream:
            for event in stream:
                if isinstance(event, pai.PartDeltaEvent | pai.PartStartEvent):
                    count += 1
            _ = stream.usage
        return count

    return run


def provider(instance: Any) -> Callable[[], int]:
    def run() -> int:
        return sum(1 for _ in instance.stream(REQUEST)) - 1  # less the Usage delta

    return run


def function_model(chunks: int) -> FunctionModel:
    async def stream(messages: list[pai.ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        for _ in range(chunks):
            yield "tok "

    return FunctionModel(stream_function=stream)


IMPORTS = {
    "bare interpreter + requests": "import requests",
    "OpenAIProvider": "from shared.providers.openai import OpenAIProvider",
    "PydanticAIProvider (openai-chat)": textwrap.dedent(
        """
        from relayline.shared.providers.pydantic_ai import PydanticAIProvider
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
        """
    ),
}

CALLS = {
    "bare interpreter + requests": "",
    "OpenAIProvider": (
        "p = OpenAIProvider('gpt-4o-mini', api_key=KEY, base_url=URL + '/v1')\n"
        "list(p.stream(REQUEST))"
    ),
    "PydanticAIProvider (openai-chat)": (
        "p = PydanticAIProvider(OpenAIChatModel('gpt-4o-mini', "
        "provider=OpenAIProvider(base_url=URL + '/v1', api_key=KEY)))\n"
        "list(p.stream(REQUEST))"
    ),
}


def footprint(name: str, url: str) -> tuple[float, float, float]:
    """Import seconds, peak RSS after the import and after one call (MB), in a fresh
    interpreter (the best of three runs)."""
    code = "\n".join(
        [
            "import sys, time",
            f"sys.path.insert(0, {str(ROOT)!r})",
            "started = time.perf_counter()",
            IMPORTS[name].strip(),
            "imported = time.perf_counter() - started",
            # peak resident set of this interpreter (ru_maxrss would count the forked parent)
            "def hwm(): return int(next(line for line in open('/proc/self/status')"
            " if line.startswith('VmHWM')).split()[1])",
            "after_import = hwm()",
            "from shared.messages import Message",
            "from shared.providers.base import ModelRequest",
            "REQUEST = ModelRequest(None, (Message.user('Count.', id='m1'),), ())",
            f"URL, KEY = {url!r}, {API_KEY!r}",
            CALLS[name],
            "after_call = hwm()",
            "print(imported, after_import / 1024, after_call / 1024)",
        ]
    )
    runs = []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout
        runs.append(tuple(float(x) for x in out.split()))
    return min(r[0] for r in runs), min(r[1] for r in runs), min(r[2] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=_serve, args=(args.chunks, child), daemon=True)
    server.start()
    port = parent.recv()
    url = f"http://127.0.0.1:{port}"
    try:
        model = OpenAIChatModel(
            "gpt-4o-mini", provider=PaiOpenAI(base_url=f"{url}/v1", api_key=API_KEY)
        )
        ours = PydanticAIProvider(model)
        legacy = OpenAIProvider("gpt-4o-mini", api_key=API_KEY, base_url=f"{url}/v1")
        wire = {
            "pydantic-ai direct (baseline)": cpu_per_delta(direct(model), args.rounds),
            "PydanticAIProvider": cpu_per_delta(provider(ours), args.rounds),
            "OpenAIProvider": cpu_per_delta(provider(legacy), args.rounds),
        }
        fmodel = function_model(args.chunks)
        local = {
            "pydantic-ai direct (baseline)": cpu_per_delta(direct(fmodel), args.rounds),
            "PydanticAIProvider": cpu_per_delta(provider(PydanticAIProvider(fmodel)), args.rounds),
        }
        sizes = {name: footprint(name, url) for name in IMPORTS}
    finally:
        parent.send("done")
        server.join(timeout=10)

    print(f"CPU per streamed delta, {args.chunks} chunks of OpenAI chat SSE over HTTP:")
    base = wire["pydantic-ai direct (baseline)"][0]
    for name, (cpu, deltas) in wire.items():
        print(f"  {name:32s} {cpu * 1e6:8.1f} µs  ({deltas} deltas)  {cpu / base:5.2f}x")
    ratio = wire["PydanticAIProvider"][0] / base
    print(f"  provider layer over pydantic-ai: {ratio:.2f}x (target <= 1.5x)")
    print(f"CPU per streamed delta, {args.chunks} chunks from FunctionModel (no HTTP):")
    base = local["pydantic-ai direct (baseline)"][0]
    for name, (cpu, deltas) in local.items():
        print(f"  {name:32s} {cpu * 1e6:8.1f} µs  ({deltas} deltas)  {cpu / base:5.2f}x")
    print("Import and memory, fresh interpreter each:")
    print(f"  {'':32s} {'import':>9s} {'RSS after import':>17s} {'RSS after 1 call':>17s}")
    for name, (seconds, imported, called) in sizes.items():
        print(f"  {name:32s} {seconds * 1000:7.0f} ms {imported:14.0f} MB {called:14.0f} MB")


if __name__ == "__main__":
    main()
