"""Durable storage: threads, messages and runs."""

from relayline.shared.persistence.store import RunRecord, Store, ThreadRecord

__all__ = ["RunRecord", "Store", "ThreadRecord"]
