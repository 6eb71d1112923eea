"""The WSGI entry point: ``gunicorn -k gevent web.wsgi:app`` (what ``relayline web`` runs)."""

from relayline.process import collector
from relayline.web import create_app

app = create_app()

collector.tune()  # the startup objects frozen, the per-event garbage collected less often
