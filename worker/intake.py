"""The worker's Redis transport: kombu's, taking the turns that wait in batches.

Kombu's Redis transport takes one message per BRPOP and then records it as unacked
with one more round trip. Under the gevent pool each round trip yields to the hub,
which first runs every other greenlet that is ready: with hundreds of turns streaming,
a worker received about 70 tasks a second while 400 waited in the broker, so a burst of
turns waited seconds for their first byte behind the streaming of the earlier ones
(bench/scale.py, 500 turns posted at once).

Here, once BRPOP has delivered a message, one Lua script takes up to ``BATCH`` more
(no more than the consumer's prefetch credit) from the same queue keys in the same
priority order, and records each in kombu's unacked index and hash in the same atomic
step, exactly as kombu's QoS would (its visibility timeout restores them the same
way). The window kombu leaves between popping a message and recording it (a worker
killed there loses that message) does not exist for these. An envelope the script
cannot decode is pushed back where it was and left to the BRPOP path, one at a time.

The batch is off (BRPOP only) when kombu's ack emulation is off or a global key prefix
is set (keys this script would not prefix).

Every item, BRPOP's or the script's, is checked (worker.envelopes) before kombu parses
it: one kombu could not deliver (not JSON, not an envelope, too large) is dead-lettered
(worker.dead_letter) and dropped, where kombu raised out of the transport and the
worker exited. The BRPOP read is kombu's own, with that check in it.
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from kombu.transport import redis as kombu_redis
from kombu.transport import virtual
from kombu.utils.encoding import bytes_to_str

from relayline.process.redis_channel import ReusingChannel
from relayline.worker.dead_letter import Refusal, dead_letter
from relayline.worker.envelopes import unpack

#: messages one script call takes beyond the one BRPOP delivered
BATCH = 64

# KEYS: unacked index, unacked hash, then the queue keys in BRPOP's order.
# ARGV: how many to take, the time kombu's QoS would stamp.
# Returns key, delivery tag, envelope, key, delivery tag, envelope, ...
_TAKE = """
local out = {}
local want = tonumber(ARGV[1])
local taken = 0
for i = 3, #KEYS do
  while taken < want do
    local item = redis.call('RPOP', KEYS[i])
    if not item then break end
    local ok, message = pcall(cjson.decode, item)
    local properties = ok and type(message) == 'table' and message['properties']
    local info = type(properties) == 'table' and properties['delivery_info']
    local tag = type(properties) == 'table' and properties['delivery_tag']
    if type(info) ~= 'table' or type(tag) ~= 'string' then
      redis.call('RPUSH', KEYS[i], item)  -- back where it was: kombu's path takes it
      return out
    end
    redis.call('ZADD', KEYS[1], ARGV[2], tag)
    redis.call('HSET', KEYS[2], tag, '[' .. item .. ',' .. cjson.encode(info['exchange'])
      .. ',' .. cjson.encode(info['routing_key']) .. ']')
    out[#out + 1] = KEYS[i]
    out[#out + 1] = tag
    out[#out + 1] = item
    taken = taken + 1
  end
end
return out
"""


class QoS(kombu_redis.QoS):
    """Kombu's QoS, which does not write again what the take script recorded."""

    channel: Channel

    def append(self, message: Any, delivery_tag: str) -> None:
        if delivery_tag in self.channel.recorded:
            self.channel.recorded.discard(delivery_tag)
            virtual.QoS.append(self, message, delivery_tag)  # the in-memory bookkeeping
            return
        super().append(message, delivery_tag)


class Channel(ReusingChannel):
    """Kombu's channel taking the waiting turns in batches, with one Redis client for
    its commands (shared.redis_channel: kombu built one per acknowledgement and per
    unacked record)."""

    QoS = QoS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: delivery tags the take script recorded as unacked, not yet appended to QoS
        self.recorded: set[str] = set()
        self._take: Any = None

    def _brpop_read(self, **options: Any) -> bool:
        """Kombu's read of one BRPOP reply (``kombu.transport.redis.Channel._brpop_read``),
        the popped item checked before it is parsed; then the batch."""
        kombu: Any = self  # kombu's stubs lack its private helpers
        try:
            try:
                dest_item = kombu.client.parse_response(kombu.client.connection, "BRPOP", **options)
            except kombu.connection_errors:
                kombu.client.connection.disconnect()  # the next poll reconnects
                raise
            if not dest_item:
                raise Empty()
            dest, item = dest_item
            queue = bytes_to_str(dest).rsplit(self.sep, 1)[0]
            kombu._queue_cycle.rotate(queue)
            self._deliver_checked(queue, item)
        finally:
            kombu._in_poll = None
            # kombu 5.7 sends a pending re-authentication once BRPOP's reply is read
            flush = getattr(kombu, "_flush_brpop_reauth", None)
            if flush is not None:
                flush()
        if self.ack_emulation and not self.global_keyprefix:
            self._take_waiting()
        return True

    def _deliver_checked(self, queue: str, item: bytes) -> None:
        unpacked = unpack(item)
        if isinstance(unpacked, Refusal):
            dead_letter(unpacked, item, queue=queue)  # popped, never recorded: gone
            return
        self.connection._deliver(unpacked.envelope, queue)

    def _take_waiting(self) -> None:
        credit = self.qos.can_consume_max_estimate()
        want = BATCH if credit is None else min(BATCH, credit)
        queues = list(self.active_queues)
        if want <= 0 or not queues:
            return
        # kombu's stubs lack its private helpers: BRPOP's keys, in BRPOP's order
        kombu: Any = self
        keys = [kombu._q_for_pri(queue, pri) for pri in self.priority_steps for queue in queues]
        with self.conn_or_acquire() as client:
            if self._take is None:
                self._take = client.register_script(_TAKE)
            taken = self._take(
                keys=[self.unacked_index_key, self.unacked_key, *keys],
                args=[want, time.time()],
                client=client,
            )
        batch: list[tuple[str, dict[str, Any]]] = []
        tags: list[str] = []
        refused: list[str] = []
        for i in range(0, len(taken), 3):
            queue, tag = bytes_to_str(taken[i]).rsplit(self.sep, 1)[0], bytes_to_str(taken[i + 1])
            unpacked = unpack(taken[i + 2])
            if isinstance(unpacked, Refusal):
                refused.append(tag)
                dead_letter(unpacked, taken[i + 2], queue=queue)
                continue
            batch.append((queue, unpacked.envelope))
            tags.append(tag)
        if refused:
            self._forget(refused)
        self.recorded.update(tags)
        for index, (dest, message) in enumerate(batch):
            try:
                kombu._queue_cycle.rotate(dest)
                self.connection._deliver(message, dest)
            except BaseException:
                # What was taken and not handed over goes back to its queue now, not
                # after the visibility timeout.
                for tag in tags[index + 1 :]:
                    self.recorded.discard(tag)
                    kombu.qos.restore_by_tag(tag)
                raise

    def _forget(self, tags: list[str]) -> None:
        """Drop what the script recorded as unacknowledged for items refused since: they
        are dead-lettered, never to be restored."""
        with self.conn_or_acquire() as client:
            pipe = client.pipeline(transaction=False)
            pipe.zrem(self.unacked_index_key, *tags)
            pipe.hdel(self.unacked_key, *tags)
            pipe.execute()


class Transport(kombu_redis.Transport):
    Channel = Channel
