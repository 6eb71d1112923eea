"""The calling shell's service URLs are not the tests': a developer's REDIS_URL or
DATABASE_URL names their own data, which a test that read it (a ``Settings.from_env()``
in this process, or a child inheriting the environment) would write to or flush. Tests
name their services by RELAYLINE_TEST_REDIS_URL, RELAYLINE_TEST_POSTGRES_URL and
RELAYLINE_TEST_AMQP_URL, or start their own."""

from __future__ import annotations

import os

#: what relayline itself reads as its services
SERVICE_VARIABLES = ("REDIS_URL", "CELERY_BROKER_URL", "DATABASE_URL")


def forget_service_urls() -> list[str]:
    """Drop the service variables from this process's environment; the names dropped."""
    return [name for name in SERVICE_VARIABLES if os.environ.pop(name, None) is not None]
