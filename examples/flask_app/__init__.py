"""A host application that embeds relayline: its own users (Flask-Login), its own
Celery app, and relayline's endpoints and demo page under ``/ai`` (README.md here)."""
