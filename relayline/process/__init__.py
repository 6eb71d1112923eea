"""Process plumbing for the web and worker processes, outside the core: the garbage
collector's tuning (``collector``), kombu's Redis channel with one shared client
(``redis_channel``) and redis-py's version read once (``redis_version``)."""
