"""The scripted agent of the push-client contract suite (``tests/contract/push``).

It answers every user message with :data:`LONG_ANSWER`: about 30 kB of UTF-8 mixing
scripts, combining marks, emoji (astral code points, ZWJ sequences, flags, skin tones)
and the characters JSON must escape. The model streams it in large chunks, so each text
event is well over Pusher's 10 kB event limit and reaches the client only as
``stream.fragment`` envelopes, cut at byte offsets that fall inside multibyte characters.
"""

from __future__ import annotations

from typing import Any

from relayline.shared.agent import AgentSpec
from relayline.shared.providers import ScriptedProvider

#: one line of every kind of text the answer is made of
_LINES = (
    "Ünïcödé façade — naïve café, smørrebrød, Łódź, Ærøskøbing. ",
    "Ελληνικά: Καλημέρα κόσμε, ξεσκεπάζω την ψυχοφθόρα βδελυγμία. ",
    "Кириллица: Съешь же ещё этих мягких французских булок, да выпей чаю. ",
    "العربية: نص حكيم له سر قاطع وذو شأن عظيم. ",
    "עברית: דג סקרן שט בים מאוכזב ולפתע מצא חברה. ",
    "हिन्दी: ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश। ",
    "中文：我能吞下玻璃而不伤身体。日本語：いろはにほへと ちりぬるを。 ",  # noqa: RUF001 (fullwidth colons)
    "한국어: 키스의 고유조건은 입술끼리 만나야 하고. ไทย: เป็นมนุษย์สุดประเสริฐเลิศคุณค่า ",
    "Emoji: 👩‍👩‍👧‍👦 🏳️‍🌈 🇳🇴🇯🇵 👍🏽 🧑🏿‍🚀 😀😃😄 🫠 𝄞 𝕏 🀄 ",  # noqa: RUF001 (a mathematical X)
    "Combining: e\u0301 a\u0308 n\u0303 Z\u0335\u0328\u0300a\u0336lg\u0337o; ",
    'JSON: "quoted" \\back\\slash\\ tab\there/slash \u2028 \u2029 <tag> &amp; ',
    "Zero width:\u200b\u200c\u200d\ufeff end.\n",
)


def _answer(size: int) -> str:
    parts: list[str] = []
    total, index = 0, 0
    while total < size:
        line = f"{index:04d} {_LINES[index % len(_LINES)]}"
        parts.append(line)
        total += len(line.encode("utf-8"))
        index += 1
    return "".join(parts)


#: the answer to every message (UTF-8 size just over 30 000 bytes)
LONG_ANSWER = _answer(30_000)

#: characters per text delta: each full delta is about 13 kB of UTF-8
CHUNK_SIZE = 7_000

PUSH_SCRIPT: dict[str, Any] = {
    "chunk_size": CHUNK_SIZE,
    "rules": [{"match": "", "steps": [{"text": LONG_ANSWER}]}],
}


def push_spec() -> AgentSpec:
    return AgentSpec(provider=ScriptedProvider(PUSH_SCRIPT), system_prompt="Push test agent.")
