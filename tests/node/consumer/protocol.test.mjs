// createProtocolStream, encodeSSE and toSSEStream (spec §2.1, §2.6). Catalogue I: 152.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  createChannelConsumer, createProtocolStream, encodeSSE, subscribeToPusher, toSSEStream,
} from '../../../web/static/relayline-consumer.js';
import {
  ID, OTHER, MULTIBYTE, FakePusherChannel, b64url, collect, frame, installClock, produce, pusherTransport,
  settle, shuffled, useManualClock,
} from './helpers.mjs';

useManualClock();

/** A bridge over a bare core, with a count of subscription closes. */
function bridge(parse) {
  let consumer;
  let closes = 0;
  const stream = createProtocolStream((callbacks) => {
    consumer = createChannelConsumer(callbacks);
    return { close() { closes++; consumer.close(); } };
  }, parse);
  return { stream, accept: (value) => consumer.accept(value), closes: () => closes };
}

const whole = (sequence, type, data) => frame(sequence, data, type);
const fragmentOf = (sequence, type, data) =>
  frame(sequence, { event: type, index: 0, total: 1, part: b64url(Buffer.from(JSON.stringify(data))) }, 'stream.fragment');

for (const outcome of ['completed', 'interrupted']) {
  test(`152: fragmented payloads are decoded, validated in order, and the stream closes on ${outcome}`, async () => {
    const seen = [];
    const c = bridge(async (event) => {
      seen.push(event.type);
      await new Promise((resolve) => setImmediate(resolve)); // a slow async validator
      return event;
    });
    c.accept(whole(3, `stream.${outcome}`, { workflowId: 't1' }));
    c.accept(fragmentOf(1, 'TEXT_MESSAGE_CONTENT', { messageId: 'm', delta: '日本語 🌍', type: 'payload-type' }));
    c.accept(whole(2, 'TEXT_MESSAGE_END', { messageId: 'm' }));
    c.accept(whole(0, 'TEXT_MESSAGE_START', { messageId: 'm', role: 'assistant' }));
    const values = await collect(c.stream);
    assert.deepEqual(values, [
      { type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: '日本語 🌍' }, // the envelope type wins
      { type: 'TEXT_MESSAGE_END', messageId: 'm' },
    ]);
    assert.deepEqual(Object.keys(values[1]), ['type', 'messageId', 'delta'], 'type first, as on SSE');
    assert.deepEqual(seen, ['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END']);
    assert.equal(c.closes(), 1);
  });
}

test('152: failure errors the stream only after the preceding events', async () => {
  const c = bridge();
  const reader = c.stream.getReader();
  c.accept(whole(2, 'stream.failed', { workflowId: 't1' }));
  c.accept(whole(1, 'error', { errorText: 'The run failed.' }));
  c.accept(whole(0, 'start', { messageId: 'msg_1' }));
  assert.equal(c.closes(), 1);
  assert.deepEqual((await reader.read()).value, { type: 'start', messageId: 'msg_1' });
  assert.deepEqual((await reader.read()).value, { type: 'error', errorText: 'The run failed.' });
  await assert.rejects(reader.read(), /Backend stream failed/);
});

test('152: cancellation releases the subscription and its pending gap timer', async (t) => {
  const clock = installClock(t);
  const c = bridge();
  c.accept(frame(1));
  assert.equal(clock.pending, 1);
  await c.stream.cancel();
  await settle(); // the cancel travels up the pipe asynchronously
  assert.equal(c.closes(), 1);
  assert.equal(clock.pending, 0);
});

for (const [label, parse] of [
  ['a throwing parse', () => { throw new Error('Invalid SDK event'); }],
  ['a rejecting parse', async () => { throw new Error('Invalid SDK event'); }],
]) {
  test(`152: ${label} errors the stream and cancels upstream`, async () => {
    const c = bridge(parse);
    c.accept(frame(0));
    await assert.rejects(collect(c.stream), /Invalid SDK event/);
    await settle();
    assert.equal(c.closes(), 1);
  });
}

for (const data of [false, 0, 'text', null, ['unexpected'], [[]]]) {
  test(`152: a non-object payload ${JSON.stringify(data)} is rejected`, async () => {
    const c = bridge();
    c.accept(frame(0, data));
    await assert.rejects(collect(c.stream), /Protocol event payload must be an object/);
    await settle();
    assert.equal(c.closes(), 1);
  });
}

test('152: payload keys are copied as data, so "__proto__" cannot change the prototype', async () => {
  const c = bridge();
  c.accept(JSON.parse(`{"streamId":"${ID}","sequence":0,"type":"CUSTOM","data":{"name":"n","__proto__":{"polluted":true}}}`));
  c.accept(frame(1, {}, 'stream.completed'));
  const [value] = await collect(c.stream);
  assert.equal(Object.getPrototypeOf(value), Object.prototype);
  assert.equal(value.polluted, undefined);
  assert.deepEqual(Object.keys(value), ['type', 'name', '__proto__']);
});

test('152: PHP empty payloads ([]) are accepted as empty objects', async () => {
  const c = bridge();
  c.accept(frame(0, [], 'start-step'));
  c.accept(frame(1, {}, 'finish-step'));
  c.accept(frame(2, [], 'finish'));
  c.accept(frame(3, {}, 'stream.completed'));
  assert.deepEqual(await collect(c.stream), [{ type: 'start-step' }, { type: 'finish-step' }, { type: 'finish' }]);
});

for (const [status, terminal] of [['completed', 'stream.completed'], ['interrupted', 'stream.interrupted'], ['failed', 'stream.failed']]) {
  test(`a native segment's done (${status}) reaches the reader as its last protocol object`, async () => {
    const c = bridge();
    const done = { status, runId: 'run_1' };
    c.accept(frame(0, { messageId: 'm', content: 'Hi' }, 'text'));
    c.accept(frame(1, done, 'done'));
    c.accept(frame(2, {}, terminal));
    const reader = c.stream.getReader();
    assert.deepEqual((await reader.read()).value, { type: 'text', messageId: 'm', content: 'Hi' });
    assert.deepEqual((await reader.read()).value, { type: 'done', ...done });
    if (terminal === 'stream.failed') await assert.rejects(reader.read(), /Backend stream failed/);
    else assert.equal((await reader.read()).done, true);
  });
}

test('152: a second segment is rejected, not merged', async () => {
  const c = bridge();
  c.accept(frame(0));
  c.accept(frame(0, {}, 'event', OTHER));
  await assert.rejects(collect(c.stream), /Protocol streams require one execution segment/);
  assert.equal(c.closes(), 1);
});

test('152: a gap errors the stream with its reason', async (t) => {
  const clock = installClock(t);
  const c = bridge();
  c.accept(frame(1));
  clock.advance(30_000);
  await assert.rejects(collect(c.stream), /Missing channel events/);
  assert.equal(c.closes(), 1);
});

test('152: a slow reader cannot make the bridge buffer without bound', async () => {
  for (const [payload, fits] of [[{ small: true }, 1000], [{ large: 'a'.repeat(1024 * 1024) }, 7]]) {
    // Under the limit: nothing is lost while nobody reads.
    const ok = bridge();
    for (let sequence = 0; sequence < fits; sequence++) ok.accept(frame(sequence, payload));
    ok.accept(frame(fits, {}, 'stream.completed'));
    assert.equal((await collect(ok.stream)).length, fits);
    // Over it: an error, and the subscription is released.
    const c = bridge();
    for (let sequence = 0; sequence < 2048 && !c.closes(); sequence++) c.accept(frame(sequence, payload));
    assert.equal(c.closes(), 1);
    await assert.rejects(collect(c.stream), /Protocol stream buffer limit exceeded/);
  }
});

test('152: a subscription may finish or fail synchronously during setup', async () => {
  for (const fail of [false, true]) {
    let closes = 0;
    const stream = createProtocolStream((callbacks) => {
      callbacks.onEvent(frame(0, { id: 'x' }, 'text-start'));
      if (fail) callbacks.onGap('Disconnected');
      else callbacks.onEvent(frame(1, {}, 'stream.completed'));
      return { close() { closes++; } };
    });
    if (fail) await assert.rejects(collect(stream), /Disconnected/);
    else assert.deepEqual(await collect(stream), [{ type: 'text-start', id: 'x' }]);
    assert.equal(closes, 1);
  }
  await assert.rejects(collect(createProtocolStream(() => { throw new Error('Cannot subscribe'); })), /Cannot subscribe/);
});

test('152: through Pusher, a fragmented AG-UI run with an early terminal reaches the reader intact', async () => {
  const channel = new FakePusherChannel();
  const stream = createProtocolStream((callbacks) => subscribeToPusher(channel, callbacks));
  const text = MULTIBYTE.repeat(800); // ~48 KB: several 10 KB Pusher events
  const agui = [
    ['RUN_STARTED', { threadId: 't1', runId: 'r1' }],
    ['TEXT_MESSAGE_START', { messageId: 'm1', role: 'assistant' }],
    ['TEXT_MESSAGE_CONTENT', { messageId: 'm1', delta: text }],
    ['TEXT_MESSAGE_END', { messageId: 'm1' }],
    ['RUN_FINISHED', { threadId: 't1', runId: 'r1' }],
  ];
  const batches = produce(pusherTransport(channel.name, { batchSize: 1 }), ID, [...agui, ['stream.completed', { workflowId: 't1' }]]);
  channel.deliver(batches.at(-1));
  for (const body of shuffled(batches.slice(0, -1), 11)) channel.deliver(body);
  assert.equal(channel.globalCallbacks.length, 0, 'released at the terminal');
  assert.deepEqual(await collect(stream), agui.map(([type, data]) => ({ type, ...data })));
});

test('encodeSSE frames an event exactly as relayline relays it (§2.1)', () => {
  assert.equal(encodeSSE({ type: 'text-delta', id: 'text_4c2', delta: 'Ciao è 😀' }),
    'data: {"type":"text-delta","id":"text_4c2","delta":"Ciao è 😀"}\n\n');
  assert.equal(encodeSSE({ type: 'finish' }), 'data: {"type":"finish"}\n\n');
  assert.equal(encodeSSE({ type: 'x', text: 'a\nb' }), 'data: {"type":"x","text":"a\\nb"}\n\n', 'one data line per frame');
});

test('toSSEStream turns a protocol stream into SSE bytes', async () => {
  const c = bridge();
  c.accept(frame(0, { messageId: 'msg_1' }, 'start'));
  c.accept(frame(1, { id: 't', delta: MULTIBYTE }, 'text-delta'));
  c.accept(frame(2, [], 'finish'));
  c.accept(frame(3, {}, 'stream.completed'));
  const chunks = await collect(toSSEStream(c.stream));
  assert.ok(chunks.every((chunk) => chunk instanceof Uint8Array));
  assert.equal(Buffer.concat(chunks).toString('utf8'),
    'data: {"type":"start","messageId":"msg_1"}\n\n'
    + `data: {"type":"text-delta","id":"t","delta":${JSON.stringify(MULTIBYTE)}}\n\n`
    + 'data: {"type":"finish"}\n\n');
});
