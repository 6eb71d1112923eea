// subscribeToPusher against a pusher-js channel stand-in fed by the PusherChannel wire
// format (batch_events bodies, fragments sized for 10 KB events). Catalogue I: 146.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { subscribeToPusher } from '../../../web/static/relayline-consumer.js';
import {
  ID, OTHER, MULTIBYTE, FakePusherChannel, frame, installClock, produce, pusherTransport, recorder, shuffled,
  useManualClock,
} from './helpers.mjs';

useManualClock();

const segmentEvents = (label) => [
  ['RUN_STARTED', { threadId: 't1', runId: label }],
  ['TEXT_MESSAGE_CONTENT', { messageId: `m-${label}`, delta: `${label}: ${MULTIBYTE.repeat(400)}` }],
  ['RUN_FINISHED', { threadId: 't1', runId: label }],
  ['stream.completed', { workflowId: 't1' }],
];

test('146: simultaneous streams are routed and duplicates of completed streams suppressed', (t) => {
  installClock(t);
  const channel = new FakePusherChannel();
  const record = recorder();
  const subscription = subscribeToPusher(channel, record);
  const tr = pusherTransport(channel.name);
  const a = produce(tr, ID, segmentEvents('a'));
  const b = produce(tr, OTHER, segmentEvents('b'));
  assert.ok(a.length > 2, 'several batches per segment');
  channel.emit('pusher:subscription_succeeded', {});
  channel.emit('pusher_internal:subscription_count', { subscription_count: 1 });
  // Batches are ordered only within themselves: deliver them interleaved and reversed.
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[a.length - 1 - i]) channel.deliver(a[a.length - 1 - i]);
    if (b[i]) channel.deliver(b[i]);
  }
  for (const body of [...a, ...b]) channel.deliver(body); // replays after completion
  assert.deepEqual(record.gaps, []);
  for (const [id, label] of [[ID, 'a'], [OTHER, 'b']]) {
    const mine = record.events.filter((e) => e.streamId === id);
    assert.deepEqual(mine.map((e) => [e.sequence, e.type, e.data]), segmentEvents(label).map(([type, data], i) => [i, type, data]));
  }
  assert.equal(record.events.length, 8);
  subscription.close();
  assert.equal(channel.globalCallbacks.length, 0);
});

test('146: the terminal delivered first waits for every earlier sequence', (t) => {
  installClock(t);
  const channel = new FakePusherChannel();
  const record = recorder();
  subscribeToPusher(channel, record);
  const batches = produce(pusherTransport(channel.name), ID, segmentEvents('x'));
  channel.deliver(batches.at(-1)); // stream.completed, flushed alone
  assert.deepEqual(record.events, []);
  for (const body of shuffled(batches.slice(0, -1), 3)) channel.deliver(body);
  assert.deepEqual(record.events.map((e) => e.type), ['RUN_STARTED', 'TEXT_MESSAGE_CONTENT', 'RUN_FINISHED', 'stream.completed']);
});

test('146: the buffer budget is shared between streams and a gap detaches only our listener', (t) => {
  installClock(t);
  const channel = new FakePusherChannel();
  const unrelated = () => {};
  channel.bind_global(unrelated);
  const record = recorder();
  subscribeToPusher(channel, record);
  for (let i = 0; i < 1024; i++) channel.emit('event', frame(1 + (i >> 1), {}, 'event', i % 2 ? ID : OTHER));
  assert.deepEqual(record.gaps, []);
  channel.emit('event', frame(600, {}, 'event', ID));
  assert.deepEqual(record.gaps, ['Channel buffer limit exceeded']);
  assert.deepEqual(channel.globalCallbacks, [unrelated]);
});

test('146: close detaches only its own listener, and only once', () => {
  const channel = new FakePusherChannel();
  const other = subscribeToPusher(channel, recorder());
  const record = recorder();
  const subscription = subscribeToPusher(channel, record);
  subscription.close();
  subscription.close();
  assert.equal(channel.globalCallbacks.length, 1);
  channel.emit('text-delta', frame(0));
  assert.deepEqual(record.events, []);
  other.close();
  assert.equal(channel.globalCallbacks.length, 0);
});

for (const [label, limit, type, sequence] of [
  ['64 active', 64, 'event', 1],
  ['1024 remembered', 1024, 'stream.completed', 0],
]) {
  test(`146: the limit of ${label} streams holds`, (t) => {
    installClock(t);
    const channel = new FakePusherChannel();
    const record = recorder();
    subscribeToPusher(channel, record);
    for (let n = 0; n < limit; n++) channel.emit(type, frame(sequence, {}, type, n.toString(16).padStart(32, '0')));
    assert.deepEqual(record.gaps, []);
    channel.emit(type, frame(sequence, {}, type, limit.toString(16).padStart(32, '0')));
    assert.deepEqual(record.gaps, ['Channel stream limit exceeded']);
    assert.equal(channel.globalCallbacks.length, 0);
  });
}

test('146: an event name that differs from the envelope type is a gap', () => {
  const channel = new FakePusherChannel();
  const record = recorder();
  subscribeToPusher(channel, record);
  channel.emit('other-name', frame(0));
  channel.emit('text-delta', frame(0));
  assert.deepEqual(record.gaps, ['Invalid channel envelope']);
  assert.deepEqual(record.events, []);
  assert.equal(channel.globalCallbacks.length, 0);
});

for (const [label, data] of [['text that is not JSON', 'not json'], ['a number', 7], ['null', null], ['an array', [frame(0)]]]) {
  test(`146: data that is ${label} is a gap`, () => {
    const channel = new FakePusherChannel();
    const record = recorder();
    subscribeToPusher(channel, record);
    channel.emit('text-delta', data);
    assert.deepEqual(record.gaps, ['Invalid channel envelope']);
  });
}

test('146: an envelope still in JSON text is accepted (clients that do not parse data)', () => {
  const channel = new FakePusherChannel();
  const record = recorder();
  subscribeToPusher(channel, record);
  channel.emit('text-delta', JSON.stringify(frame(0)));
  assert.deepEqual(record.events, [frame(0)]);
});

test('146: it cleans up when the application throws', (t) => {
  const clock = installClock(t);
  const channel = new FakePusherChannel();
  subscribeToPusher(channel, { onEvent() { throw new Error('application'); }, onGap: assert.fail });
  channel.emit('text-delta', frame(2));
  assert.throws(() => channel.emit('text-delta', frame(0)), /application/);
  assert.equal(channel.globalCallbacks.length, 0);
  assert.equal(clock.pending, 0);
});

test('146: a gap closes all streams and cancels their timers', (t) => {
  const clock = installClock(t);
  const channel = new FakePusherChannel();
  const record = recorder();
  subscribeToPusher(channel, record);
  channel.emit('event', frame(1, {}, 'event'));
  channel.emit('event', frame(1, {}, 'event', OTHER));
  assert.equal(clock.pending, 2);
  clock.advance(60_000);
  assert.deepEqual(record.gaps, ['Missing channel events']);
  assert.equal(clock.pending, 0);
  assert.equal(channel.globalCallbacks.length, 0);
  channel.emit('event', frame(0, {}, 'event', OTHER));
  assert.deepEqual(record.events, []);
});

test('146: one segment can be selected', () => {
  const channel = new FakePusherChannel();
  const record = recorder();
  subscribeToPusher(channel, record, ID);
  channel.emit('event', frame(0, {}, 'event', OTHER));
  channel.emit('text-delta', frame(0));
  assert.deepEqual(record.events, [frame(0)]);
  assert.throws(() => subscribeToPusher(channel, recorder(), 'not-an-id'), /stream ID/);
  assert.equal(channel.globalCallbacks.length, 1, 'a rejected selection binds nothing');
});
