"""Whether an item popped off a Redis queue list is an envelope kombu can deliver.

Kombu's Redis transport parses each item it pops and builds a message of it with no
check: bytes that are not JSON, or JSON that is not kombu's envelope (``{"a":1}``
pushed onto the list by hand), raised inside the transport, so the worker exited, and
the item, already popped and never recorded as unacknowledged, was gone.
``unpack`` parses and checks an item the way kombu will read it, without raising;
``worker.intake`` dead-letters what it refuses (``not-an-envelope``, ``too-large``).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads

from relayline.worker.dead_letter import Refusal
from relayline.worker.task_messages import MAX_BODY_BYTES

#: an envelope carries a body of at most MAX_BODY_BYTES, base64 encoded (4/3), and its
#: headers: twice the body bound leaves room for both, and spares parsing a giant item
MAX_ENVELOPE_BYTES = 2 * MAX_BODY_BYTES


@dataclass(frozen=True)
class Unpacked:
    """An item kombu can deliver: the envelope as kombu parses it."""

    envelope: dict[str, Any]


def unpack(item: bytes) -> Unpacked | Refusal:
    """The envelope in ``item``, or why kombu could not deliver it."""
    if len(item) > MAX_ENVELOPE_BYTES:
        return Refusal("too-large", f"item of {len(item)} bytes exceeds {MAX_ENVELOPE_BYTES}")
    try:
        envelope = loads(bytes_to_str(item))  # as kombu parses it
    except Exception as exc:  # not JSON, kombu's object hook refused it, nested too deep
        return Refusal("not-an-envelope", f"not JSON: {type(exc).__name__}: {str(exc)[:200]}")
    fault = envelope_fault(envelope)
    if fault is not None:
        return Refusal("not-an-envelope", fault)
    return Unpacked(envelope)


def envelope_fault(envelope: object) -> str | None:
    """What in a parsed item would make kombu raise as it builds and records the message."""
    if not isinstance(envelope, dict):
        return "not a JSON object"
    properties = envelope.get("properties")
    if not isinstance(properties, dict):
        return "no properties object"
    if not isinstance(properties.get("delivery_tag"), str):
        return "no delivery tag"
    info = properties.get("delivery_info")
    if not isinstance(info, dict) or not all(
        isinstance(info.get(key), str) for key in ("exchange", "routing_key")
    ):
        return "no delivery_info with exchange and routing_key"
    if not isinstance(envelope.get("headers"), dict | None):
        return "headers is not an object"
    for key in ("content-type", "content-encoding"):
        if not isinstance(envelope.get(key), str | None):
            return f"{key} is not a string"
    body = envelope.get("body")
    if not isinstance(body, str | None):
        return "body is not a string"
    encoding = properties.get("body_encoding")
    if encoding not in (None, "base64"):
        return f"unknown body_encoding {encoding!r:.50}"
    if encoding == "base64" and body:
        try:
            base64.b64decode(body.encode())  # as kombu's codec decodes it
        except (binascii.Error, ValueError) as exc:
            return f"body is not base64: {exc}"
    return None
