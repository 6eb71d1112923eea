"""relayline core: agent loop, tools, providers, messages, stream chunks, adapters,
translators, SSE encoding, persistence and settings. Imports none of the other packages."""
