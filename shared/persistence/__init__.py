"""Durable storage: threads, messages and runs."""

from shared.persistence.store import RunRecord, Store, ThreadRecord

__all__ = ["RunRecord", "Store", "ThreadRecord"]
