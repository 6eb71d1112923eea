// Bounded buffers and segment bookkeeping (spec §2.6). Catalogue I: 142, 148, 149 (and
// the stream limits that 146 and 150 name).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createChannelConsumer } from '../../../web/static/relayline-consumer.js';
import { ID, fragment, frame, recorder, useManualClock } from './helpers.mjs';

useManualClock();

const MiB = 1024 * 1024;
const selected = () => {
  const record = recorder();
  return { ...record, ...createChannelConsumer(record, ID) };
};
const streamId = (n) => n.toString(16).padStart(32, '0');

test('142: at most 1024 logical events are queued', () => {
  const c = selected();
  for (let sequence = 1; sequence <= 1024; sequence++) c.accept(frame(sequence));
  assert.deepEqual(c.gaps, []);
  c.accept(frame(1025));
  assert.deepEqual(c.gaps, ['Channel buffer limit exceeded']);
});

test('142: the queue drains, so a long in-order stream never hits the event limit', () => {
  const c = selected();
  for (let sequence = 0; sequence < 5000; sequence++) c.accept(frame(sequence));
  assert.equal(c.events.length, 5000);
  assert.deepEqual(c.gaps, []);
});

test('142: queued bytes are bounded at 8 MiB (payload JSON plus event name)', () => {
  // JSON of the string is its length + 2 quotes; the type 'x' is 1 byte.
  const exact = selected();
  exact.accept(frame(0, 'a'.repeat(8 * MiB - 3), 'x'));
  assert.deepEqual(exact.gaps, [], 'exactly 8 MiB fits');
  assert.equal(exact.events[0].data.length, 8 * MiB - 3);

  const over = selected();
  over.accept(frame(1, 'a'.repeat(8 * MiB - 2), 'x'));
  assert.deepEqual(over.gaps, ['Channel buffer limit exceeded']);

  const cumulative = selected();
  cumulative.accept(frame(1, 'a'.repeat(5 * MiB)));
  assert.deepEqual(cumulative.gaps, []);
  cumulative.accept(frame(2, 'a'.repeat(4 * MiB)));
  assert.deepEqual(cumulative.gaps, ['Channel buffer limit exceeded']);
});

test('142: delivered events give their bytes back', () => {
  const c = selected();
  for (let sequence = 0; sequence < 8; sequence += 2) {
    c.accept(frame(sequence + 1, 'a'.repeat(5 * MiB))); // queued behind the hole at `sequence`
    c.accept(frame(sequence)); // fills it: both leave the queue
  }
  assert.deepEqual(c.gaps, []);
  assert.equal(c.events.length, 8);
});

test('148: aggregate parts are bounded at 4096, independently of the event count', () => {
  const c = selected();
  for (let index = 0; index < 4095; index++) c.accept(fragment(1, 'AAAA', index, 4096));
  c.accept(frame(2));
  assert.deepEqual(c.gaps, [], '4096 parts fit');
  c.accept(frame(3)); // only 3 events queued, but 4097 parts
  assert.deepEqual(c.gaps, ['Channel buffer limit exceeded']);
});

test('148: parts of several fragmented events count together', () => {
  const c = selected();
  for (let index = 0; index < 2048; index++) {
    c.accept(fragment(1, 'AAAA', index, 4096));
    c.accept(fragment(2, 'AAAA', index, 4096));
  }
  assert.deepEqual(c.gaps, []);
  c.accept(fragment(3, 'AAAA', 0, 2));
  assert.deepEqual(c.gaps, ['Channel buffer limit exceeded']);
});

test('149: buffer accounting includes event names', () => {
  const exact = selected();
  exact.accept(frame(1, {}, 'a'.repeat(8 * MiB - 2))); // '{}' + name = 8 MiB
  assert.deepEqual(exact.gaps, []);
  const over = selected();
  over.accept(frame(1, {}, 'a'.repeat(8 * MiB - 1)));
  assert.deepEqual(over.gaps, ['Channel buffer limit exceeded']);
  // A fragment's event name counts too, once per logical event.
  const named = selected();
  named.accept(fragment(1, 'A'.repeat(4 * MiB), 0, 2, 'e'.repeat(4 * MiB - 10))); // 8 MiB - 10
  named.accept(fragment(1, 'AAAAAAAA', 1, 2, 'e'.repeat(4 * MiB - 10))); // + 8: the name is not charged twice
  assert.deepEqual(named.gaps, []);
  named.accept(fragment(2, 'AAAA', 0, 2, 'x')); // + 4 + 1 > 8 MiB
  assert.deepEqual(named.gaps, ['Channel buffer limit exceeded']);
});

test('149: multibyte payloads are counted in UTF-8 bytes, not UTF-16 units', () => {
  const over = selected();
  over.accept(frame(1, '世'.repeat(3 * MiB))); // 3 Mi units, 9 MiB of UTF-8
  assert.deepEqual(over.gaps, ['Channel buffer limit exceeded']);
  const under = selected();
  under.accept(frame(1, '世'.repeat(2 * MiB))); // 6 MiB
  assert.deepEqual(under.gaps, []);
  const astral = selected();
  astral.accept(frame(1, '🌍'.repeat(2 * MiB + 1))); // 4 bytes each: just over 8 MiB
  assert.deepEqual(astral.gaps, ['Channel buffer limit exceeded']);
  const name = selected();
  name.accept(frame(1, {}, 'é'.repeat(4 * MiB))); // 4 Mi units, 8 MiB + 2 bytes
  assert.deepEqual(name.gaps, ['Channel buffer limit exceeded']);
});

test('at most 64 segments are active at once', () => {
  const record = recorder();
  const c = createChannelConsumer(record);
  for (let n = 0; n < 64; n++) c.accept(frame(1, {}, 'event', streamId(n)));
  assert.deepEqual(record.gaps, []);
  c.accept(frame(1, {}, 'event', streamId(64)));
  assert.deepEqual(record.gaps, ['Channel stream limit exceeded']);
});

test('finished segments free their active slot but stay remembered (1024 known)', () => {
  const record = recorder();
  const c = createChannelConsumer(record);
  for (let n = 0; n < 1024; n++) c.accept(frame(0, { workflowId: 't' }, 'stream.completed', streamId(n)));
  assert.deepEqual(record.gaps, [], 'far more than 64 segments, one after the other');
  assert.equal(record.events.length, 1024);
  c.accept(frame(0, { workflowId: 't' }, 'stream.completed', streamId(3))); // remembered: ignored
  assert.deepEqual(record.gaps, []);
  c.accept(frame(0, {}, 'event', streamId(1024)));
  assert.deepEqual(record.gaps, ['Channel stream limit exceeded']);
});
