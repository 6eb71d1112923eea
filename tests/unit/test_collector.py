"""The collector tuning both long-running processes apply (shared.collector)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from celery.signals import worker_process_init, worker_ready

from relayline.process import collector


@pytest.fixture
def restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_tuning_freezes_what_the_process_holds_and_raises_the_first_threshold(
    restored: None,
) -> None:
    gc.unfreeze()
    collector.tune()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == collector.FIRST_GENERATION


def test_a_ready_worker_and_each_prefork_child_tune_it(
    restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # worker.app builds its module-level app from the environment on import.
    monkeypatch.setenv("CELERY_BROKER_URL", "memory://")
    from relayline.worker.app import _tune_collector

    for signal in (worker_ready, worker_process_init):
        # Only this handler is called: another (worker.tasks' sweeper) would start work.
        assert _tune_collector in signal._live_receivers(None), signal  # type: ignore[attr-defined]
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    _tune_collector()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == collector.FIRST_GENERATION
