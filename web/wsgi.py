"""The WSGI entry point: ``gunicorn -k gevent web.wsgi:app`` (what ``relayline web`` runs)."""

from shared import collector
from web import create_app

app = create_app()

collector.tune()  # the startup objects frozen, the per-event garbage collected less often
