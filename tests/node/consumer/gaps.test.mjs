// Gap deadlines and resource release (spec §2.6), on a manual clock: no real sleeps.
// Catalogue I: 138, 139, 145; also spec J 156 (a missing fragment) at the core level.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createChannelConsumer } from '../../../web/static/relayline-consumer.js';
import { ID, encodeEvent, fragment, frame, identityTransport, installClock, recorder, useManualClock } from './helpers.mjs';

useManualClock();

const selected = (options) => {
  const record = recorder();
  return { ...record, ...createChannelConsumer(record, ID, options) };
};

test('138: later events and duplicates cannot renew the 30 s gap deadline', (t) => {
  const clock = installClock(t);
  const c = selected();
  c.accept(frame(1));
  clock.advance(20_000);
  c.accept(frame(2));
  c.accept(frame(1));
  clock.advance(9_999);
  assert.deepEqual(c.gaps, []);
  clock.advance(1); // 30 s after the first hole, not after the latest arrival
  assert.deepEqual(c.gaps, ['Missing channel events']);
  assert.equal(clock.pending, 0);
  c.accept(frame(0));
  assert.deepEqual(c.events, [], 'a gap closes the consumer');
});

test('138: a duplicate fragment does not renew the deadline of an incomplete event', (t) => {
  const clock = installClock(t);
  const c = selected();
  c.accept(fragment(0, 'eyJh', 0, 2)); // '{"a' of '{"a":1}'
  clock.advance(20_000);
  c.accept(fragment(0, 'eyJh', 0, 2));
  clock.advance(10_000);
  assert.deepEqual(c.gaps, ['Missing channel events']);
});

test('139: progress starts a fresh deadline', (t) => {
  const clock = installClock(t);
  const c = selected();
  c.accept(frame(2));
  clock.advance(20_000);
  c.accept(frame(0)); // delivered: progress, but 1 is still missing
  clock.advance(20_000); // 40 s after the first hole: the old deadline has passed
  assert.deepEqual(c.gaps, []);
  clock.advance(10_000);
  assert.deepEqual(c.gaps, ['Missing channel events']);
  assert.deepEqual(c.events.map((e) => e.sequence), [0]);
});

test('139: no deadline runs while nothing is pending', (t) => {
  const clock = installClock(t);
  const c = selected();
  c.accept(frame(0));
  c.accept(frame(1));
  assert.equal(clock.pending, 0);
  clock.advance(120_000);
  assert.deepEqual(c.gaps, []);
  c.accept(frame(3));
  assert.equal(clock.pending, 1);
  c.accept(frame(2)); // fills the hole: the deadline is cancelled
  assert.equal(clock.pending, 0);
  assert.deepEqual(c.events.map((e) => e.sequence), [0, 1, 2, 3]);
});

test('a missing fragment delivers only the prefix, then reports the gap and nothing after', (t) => {
  const clock = installClock(t);
  const tr = identityTransport({ budget: 200 });
  const parts = encodeEvent(tr, ID, 1, 'text-delta', { delta: 'è'.repeat(200) }).map((e) => JSON.parse(e));
  assert.ok(parts.length >= 3);
  const c = selected();
  c.accept(frame(0));
  for (const part of parts.filter((_, index) => index !== 1)) c.accept(part);
  c.accept(frame(2, { workflowId: 't' }, 'stream.completed'));
  assert.deepEqual(c.events.map((e) => e.sequence), [0]);
  clock.advance(30_000);
  assert.deepEqual(c.gaps, ['Missing channel events']);
  c.accept(parts[1]);
  assert.deepEqual(c.events.map((e) => e.sequence), [0]);
});

test('the gap deadline is configurable', (t) => {
  const clock = installClock(t);
  const c = selected({ gapTimeoutMs: 5_000 });
  c.accept(frame(1));
  clock.advance(4_999);
  assert.deepEqual(c.gaps, []);
  clock.advance(1);
  assert.deepEqual(c.gaps, ['Missing channel events']);
  for (const gapTimeoutMs of [0, -1, Number.NaN, Infinity, '5']) {
    assert.throws(() => createChannelConsumer(recorder(), ID, { gapTimeoutMs }), TypeError);
  }
});

test('145: close releases timers and buffers and stops delivery', (t) => {
  const clock = installClock(t);
  const c = selected();
  c.accept(frame(1));
  assert.equal(clock.pending, 1);
  c.close();
  c.close();
  assert.equal(clock.pending, 0);
  clock.advance(60_000);
  c.accept(frame(0));
  assert.deepEqual(c.gaps, []);
  assert.deepEqual(c.events, []);
});

test('145: a throwing callback closes the consumer, releases timers, and propagates', (t) => {
  const clock = installClock(t);
  let calls = 0;
  const c = createChannelConsumer({ onEvent() { calls++; throw new Error('application'); }, onGap: assert.fail });
  c.accept(frame(2));
  c.accept(frame(5, {}, 'event', 'c'.repeat(32)));
  assert.equal(clock.pending, 2);
  assert.throws(() => c.accept(frame(0)), /application/);
  assert.equal(clock.pending, 0, 'every segment timer is released, not only the throwing one');
  c.accept(frame(1));
  c.accept(frame(0, {}, 'event', 'c'.repeat(32)));
  clock.advance(60_000);
  assert.equal(calls, 1);
});

test('145: a throwing onGap still leaves no timer behind', (t) => {
  const clock = installClock(t);
  const c = createChannelConsumer({ onEvent() {}, onGap() { throw new Error('recovery'); } });
  c.accept(frame(1));
  c.accept(frame(1, {}, 'event', 'c'.repeat(32)));
  assert.equal(clock.pending, 2);
  assert.throws(() => clock.advance(30_000), /recovery/);
  assert.equal(clock.pending, 0);
});
