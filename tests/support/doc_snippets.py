"""The code blocks of the README and of docs/, each with the marker that says how a test
runs it, so that no snippet of the docs can rot.

A marker is an HTML comment on the line before the fence (invisible when rendered)::

    <!-- test: python -->      executed (Python, the public API only)
    <!-- test: python F -->    executed, and saved as F for a later ``run`` block
    <!-- test: shell -->       executed by bash in a scratch copy of the repository
    <!-- test: run -->         a command that serves: started, /readyz and the agent
                               answer, stopped (``run F``: F from a python block beside it)
    <!-- test: curl -->        executed against the stack the README's run block started
    <!-- test: ci -->          the command .ci/run executes (the test command itself)
    <!-- test: excerpt -->     JS/TS: parses as a module, or (JSX) is a verbatim excerpt
                               of a page a test drives
    <!-- test: text -->        not code: a picture or a listing (``text`` fences only)

The pages are README.md and the guide's pages in docs/ (docs/*.md). docs/DESIGN.md and
docs/reference/ are design records, not instructions: their blocks are not run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.stack import ROOT

KINDS = ("python", "shell", "run", "curl", "ci", "excerpt", "text")
#: design records whose blocks describe rather than instruct
NOT_PAGES = frozenset({"DESIGN.md"})

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<lang>[^`\s]*)[^\n]*$")
_MARKER = re.compile(r"^\s*<!-- test: (?P<kind>[a-z]+)(?P<args>(?: [^\s>]+)*) -->\s*$")


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    kind: str | None  # None: no marker before the fence
    args: tuple[str, ...]
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of docs/ (not the design records)."""
    docs = sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in NOT_PAGES)
    return [ROOT / "README.md", *docs]


def snippets(page: Path) -> list[Snippet]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Snippet] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = [line[indent:] for line in lines[index + 1 : end]]
        before = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        marker = _MARKER.match(before)
        found.append(
            Snippet(
                page=page,
                line=index + 1,
                lang=opening["lang"],
                kind=marker["kind"] if marker else None,
                args=tuple(marker["args"].split()) if marker else (),
                code="\n".join(body) + "\n",
            )
        )
        index = end + 1
    return found


def every_snippet() -> list[Snippet]:
    return [snippet for page in pages() for snippet in snippets(page)]


def of_kind(kind: str) -> list[Snippet]:
    return [s for s in every_snippet() if s.kind == kind]
