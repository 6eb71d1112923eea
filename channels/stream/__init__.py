"""The segment log: each segment's protocol events as envelopes in one Redis stream.

``log`` writes it (``SegmentLog``, the thread's active and latest pointers) and reads it
(``LogReader``, ``kept_after``); ``group_commit`` and ``flusher`` batch a worker's appends
across its segments; ``reader`` is the web's multiplexed reader that serves every relayed
and resumed response from one blocking connection; ``splice`` turns a logged envelope
into its SSE frame without decoding it."""
