"""The WSGI entry point: ``gunicorn -k gevent web.wsgi:app`` (what ``relayline web`` runs)."""

import gc

from web import create_app

app = create_app()

# A relaying web process holds thousands of streams, each with its greenlet, socket and
# request objects, and allocates a few short-lived objects per relayed event. With the
# default thresholds the cyclic collector then runs so often that it took about a fifth
# of the process's CPU in bench/relay.py part 3. The startup objects (the app, its
# modules) never become garbage: frozen, no collection walks them again; and a larger
# first generation collects the per-event garbage less often (cycles are still freed).
gc.freeze()
gc.set_threshold(50_000, 20, 20)
