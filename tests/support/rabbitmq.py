"""A RabbitMQ broker for the tests that prove it is supported: the machine's (127.0.0.1:5672,
or RELAYLINE_TEST_AMQP_URL), started with Debian's ``rabbitmq-server -detached`` when it
is installed but not running. Each user gets a virtual host of its own (made and removed
with ``rabbitmqctl``), so its queues are apart from everything else on the broker."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import kombu

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/"


def _reachable(url: str) -> bool:
    connection = kombu.Connection(url, connect_timeout=2)
    try:
        connection.ensure_connection(max_retries=1)
        return True
    except Exception:
        return False
    finally:
        connection.release()


@contextmanager
def rabbitmq_vhost() -> Iterator[str]:
    """An AMQP URL on a fresh virtual host of the test broker, deleted afterwards."""
    base = os.environ.get("RELAYLINE_TEST_AMQP_URL", DEFAULT_URL).rstrip("/")
    ctl = shutil.which("rabbitmqctl")
    if not _reachable(f"{base}/"):
        server = shutil.which("rabbitmq-server")
        if server is None:
            raise RuntimeError(
                "No RabbitMQ at 127.0.0.1:5672 and none installed "
                "(apt-get install rabbitmq-server, or set RELAYLINE_TEST_AMQP_URL)."
            )
        subprocess.run([server, "-detached"], check=True, timeout=60)
        deadline = time.monotonic() + 90
        while not _reachable(f"{base}/"):
            if time.monotonic() > deadline:
                raise RuntimeError("rabbitmq-server did not come up within 90 s.")
            time.sleep(0.5)  # polling a starting broker, bounded by the deadline
    if ctl is None:
        yield f"{base}/"  # a remote broker: its default virtual host
        return
    vhost = f"relayline-test-{uuid.uuid4().hex[:8]}"
    subprocess.run([ctl, "add_vhost", vhost], check=True, capture_output=True, timeout=60)
    subprocess.run(
        [ctl, "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    try:
        yield f"{base}/{vhost}"
    finally:
        subprocess.run([ctl, "delete_vhost", vhost], capture_output=True, timeout=60)
