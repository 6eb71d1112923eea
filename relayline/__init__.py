"""The application around the core: the ``relayline`` command, the demo agent, and
the entry points of an application that embeds relayline:

    from relayline import Relayline           # the Flask extension (web.extension)
    from relayline.worker import register     # relayline's tasks on the host's Celery app

This package wires ``shared``, ``channels``, ``web`` and ``worker`` together; none of them
imports it. ``Relayline`` is imported on first use, so the worker (which loads the demo
agent from here by name) never imports Flask's side."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relayline.web.extension import Relayline

__all__ = ["Relayline"]


def __getattr__(name: str) -> object:
    if name == "Relayline":
        from relayline.web.extension import Relayline

        return Relayline
    raise AttributeError(f"module 'relayline' has no attribute {name!r}")
