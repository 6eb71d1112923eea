"""The WSGI entry point: ``gunicorn -k gevent web.wsgi:app`` (what ``relayline web`` runs)."""

from web import create_app

app = create_app()
