// subscribeToMercure against an EventSource stand-in fed by MercureChannel updates
// (each update's data is a JSON array of envelopes). Catalogue I: 151.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createProtocolStream, subscribeToMercure } from '../../../web/static/relayline-consumer.js';
import {
  ID, OTHER, MULTIBYTE, FakeEventSource, b64url, collect, fragment, frame, installClock, mercureTransport,
  produce, recorder, useManualClock,
} from './helpers.mjs';

useManualClock();

test('151: updates are unwrapped in order and replayed updates ignored', () => {
  const source = new FakeEventSource();
  const record = recorder();
  const subscription = subscribeToMercure(source, record);
  const encoded = b64url(Buffer.from(JSON.stringify({ text: 'こんにちは 🌍' })));
  source.send(frame(0));
  source.send(frame(1), fragment(2, encoded.slice(0, 8), 0, 2), frame(3, {}, 'stream.completed'));
  assert.deepEqual(record.events.map((e) => e.sequence), [0, 1]);
  source.send(fragment(2, encoded.slice(8), 1, 2));
  // A reconnecting EventSource replays what the hub kept (Last-Event-ID).
  source.send(frame(0));
  source.send(frame(1), fragment(2, encoded.slice(0, 8), 0, 2));
  assert.deepEqual(record.events.map((e) => [e.sequence, e.type, e.data]), [
    [0, 'text-delta', { value: 0 }], [1, 'text-delta', { value: 1 }], [2, 'text-delta', { text: 'こんにちは 🌍' }],
    [3, 'stream.completed', {}],
  ]);
  assert.deepEqual(record.gaps, []);
  subscription.close();
  assert.equal(source.count(), 0);
});

test('151: packed and fragmented MercureChannel updates, each delivered twice, reassemble', () => {
  const source = new FakeEventSource();
  const record = recorder();
  subscribeToMercure(source, record);
  const events = [
    ['start', { messageId: 'msg_1' }],
    ['text-start', { id: 'text_1' }],
    ['text-delta', { id: 'text_1', delta: MULTIBYTE.repeat(60) }],
    ['text-delta', { id: 'text_1', delta: 'fine' }],
    ['text-end', { id: 'text_1' }],
    ['finish', {}],
    ['stream.completed', { workflowId: 't1' }],
  ];
  // A 1 KB request budget and unbounded packing (a rate-limited hub) give both
  // multi-envelope updates and fragments one per request.
  const updates = produce(mercureTransport(undefined, { budget: 1024, batchSize: Infinity }), ID, events);
  assert.ok(updates.some((u) => JSON.parse(u).length > 1), 'some update packs several envelopes');
  assert.ok(updates.some((u) => JSON.parse(u)[0].type === 'stream.fragment'), 'some update carries a fragment');
  for (const update of updates) {
    source.publish(update);
    source.publish(update);
  }
  assert.deepEqual(record.gaps, []);
  assert.deepEqual(record.events.map((e) => [e.type, e.data]), events);
});

for (const [label, data] of [
  ['text that is not JSON', 'not json'],
  ['a single envelope', JSON.stringify(frame(0))],
  ['an array holding something else', '[1]'],
  ['an object wrapping the array', JSON.stringify({ envelopes: [frame(0)] })],
  ['no data at all', undefined],
  ['a parsed array rather than text', [frame(0)]],
]) {
  test(`151: an update with ${label} is a gap and detaches only its own listener`, () => {
    const source = new FakeEventSource();
    const unrelated = () => {};
    source.addEventListener('message', unrelated);
    const record = recorder();
    subscribeToMercure(source, record);
    source.publish(data);
    source.send(frame(0));
    assert.deepEqual(record.gaps, ['Invalid channel envelope']);
    assert.deepEqual(record.events, []);
    assert.deepEqual([...source.listeners.get('message')], [unrelated]);
  });
}

test('151: an envelope without data inside an update is a gap', () => {
  const source = new FakeEventSource();
  const record = recorder();
  subscribeToMercure(source, record);
  source.send({ streamId: ID, sequence: 0, type: 'text-delta' });
  assert.deepEqual(record.gaps, ['Invalid channel envelope']);
});

test('151: simultaneous segments are routed, and one can be selected', () => {
  const source = new FakeEventSource();
  const all = recorder();
  const selected = recorder();
  subscribeToMercure(source, all);
  subscribeToMercure(source, selected, ID);
  source.send(frame(0, {}, 'event', OTHER), frame(0), frame(1, {}, 'event', OTHER));
  assert.deepEqual(all.events.map((e) => [e.streamId, e.sequence]), [[OTHER, 0], [ID, 0], [OTHER, 1]]);
  assert.deepEqual(selected.events, [frame(0)]);
});

test('151: it cleans up when the application throws, mid-update', (t) => {
  const clock = installClock(t);
  const source = new FakeEventSource();
  let calls = 0;
  subscribeToMercure(source, { onEvent() { calls++; throw new Error('application'); }, onGap: assert.fail });
  assert.throws(() => source.send(frame(2), frame(0), frame(1)), /application/);
  assert.equal(calls, 1, 'the rest of the update is dropped');
  assert.equal(source.count(), 0);
  assert.equal(clock.pending, 0);
});

test('151: a gap closes the subscription and cancels its timers', (t) => {
  const clock = installClock(t);
  const source = new FakeEventSource();
  const record = recorder();
  subscribeToMercure(source, record);
  source.send(frame(1), frame(1, {}, 'event', OTHER));
  clock.advance(30_000);
  assert.deepEqual(record.gaps, ['Missing channel events']);
  assert.equal(clock.pending, 0);
  assert.equal(source.count(), 0);
});

test('151: it feeds a protocol bridge, which releases the subscription at the terminal', async () => {
  const source = new FakeEventSource();
  const stream = createProtocolStream((callbacks) => subscribeToMercure(source, callbacks));
  source.send(frame(0, { id: 't', delta: 'Hel' }), frame(2, { workflowId: 't1' }, 'stream.completed'));
  assert.equal(source.count(), 1, 'still listening until the earlier sequences arrive');
  source.send(frame(1, { id: 't', delta: 'lo' }));
  assert.equal(source.count(), 0);
  assert.deepEqual(await collect(stream), [
    { type: 'text-delta', id: 't', delta: 'Hel' }, { type: 'text-delta', id: 't', delta: 'lo' },
  ]);
});
