"""The application around the core: the ``relayline`` command and the demo agent.

This package wires ``shared``, ``channels``, ``web`` and ``worker`` together (it names the
web and worker modules it starts); ``shared`` never imports it."""
