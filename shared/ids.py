"""Ids: the rules thread, run and message ids follow, and minting new ones.

A thread id appears in URL paths, Pusher channel names and Mercure topics, so it keeps
to characters all three accept. The patterns are plain strings as well as compiled, so
the web can hand the thread id rule to a browser (``GET /demo/config``) instead of the
page restating it; they use only syntax Python and JavaScript read alike.
"""

from __future__ import annotations

import re
import secrets
import uuid
from typing import Final, TypeGuard

#: 1-128 letters, digits, '_', '.' or '-', starting with a letter, a digit or '_'
#: (assistant-ui's local thread ids look like ``__LOCALID_72bo6t6k2b``); never with '.'
#: or '-', so no id is a path segment like '..' or reads as a command-line option
THREAD_ID_PATTERN: Final = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
#: as a thread id, without '.'
RUN_ID_PATTERN: Final = r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}"
#: 1-64 characters, no control characters
MESSAGE_ID_PATTERN: Final = r"[^\x00-\x1f]{1,64}"
#: a segment's stream id (envelopes, logs): 32 lowercase hex digits
SEGMENT_ID_PATTERN: Final = r"[a-f0-9]{32}"

# Anchored with \A and \Z: ``match`` then accepts no prefix and, unlike ``$``, no
# trailing newline.
THREAD_ID: Final = re.compile(rf"\A{THREAD_ID_PATTERN}\Z")
RUN_ID: Final = re.compile(rf"\A{RUN_ID_PATTERN}\Z")
MESSAGE_ID: Final = re.compile(rf"\A{MESSAGE_ID_PATTERN}\Z")
SEGMENT_ID: Final = re.compile(rf"\A{SEGMENT_ID_PATTERN}\Z")


def is_thread_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and THREAD_ID.match(value) is not None


def invalid_thread_id(value: object) -> str:
    """The error text for a value that is not a thread id."""
    return (
        f"Invalid thread id {value!r}: use 1-128 letters, digits, '_', '.' or '-', "
        "starting with a letter, a digit or '_'."
    )


def new_id(prefix: str) -> str:
    """A fresh id such as ``msg_<24 hex digits>`` (messages, calls, adapter runs)."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def new_run_id() -> str:
    """A fresh run id for a turn the web enqueues: ``run_<32 hex digits>``."""
    return f"run_{uuid.uuid4().hex}"


def new_segment_id() -> str:
    """16 random bytes as 32 lowercase hex: names a segment, never a thread or a secret."""
    return secrets.token_hex(16)
