"""The tests never use the services of the shell that runs them (issue 32): a developer's
REDIS_URL or DATABASE_URL names their own data. The session drops them
(tests.support.isolation); services are named by RELAYLINE_TEST_* variables or started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from relayline.shared.settings import child_environment
from tests.support.isolation import SERVICE_VARIABLES

ROOT = Path(__file__).resolve().parents[2]


def test_no_service_url_of_the_shell_reaches_a_test() -> None:
    assert set(SERVICE_VARIABLES) & set(child_environment()) == set()


def test_a_session_started_with_a_developers_urls_does_not_see_them() -> None:
    shell = {
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/1",
        "DATABASE_URL": "postgresql://someone@127.0.0.1:5432/their_data",
    }
    probe = f"{Path(__file__).relative_to(ROOT)}::test_no_service_url_of_the_shell_reaches_a_test"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", probe, "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env={**child_environment(), **shell},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:]
