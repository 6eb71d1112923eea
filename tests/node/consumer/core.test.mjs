// The neutral core (spec §2.6): ordering, reassembly, duplicates, segments.
// Catalogue I: 136, 137, 143, 144, 147, 150.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createChannelConsumer } from '../../../web/static/relayline-consumer.js';
import {
  ID, OTHER, MULTIBYTE, encodeEvent, envelopes, fragment, frame, identityTransport, phpJson,
  pusherTransport, recorder, shuffled, useManualClock,
} from './helpers.mjs';

useManualClock();

const selected = (streamId = ID) => {
  const record = recorder();
  return { ...record, ...createChannelConsumer(record, streamId) };
};

test('the module is dependency-free: no imports, only web-platform globals', () => {
  const source = readFileSync(new URL('../../../web/static/relayline-consumer.js', import.meta.url), 'utf8');
  assert.doesNotMatch(source, /^\s*import\s/m);
  assert.doesNotMatch(source, /\brequire\(|\bBuffer\b|\bprocess\./);
});

test('136: interleaved fragments are ordered, UTF-8 decoded, and delivered before an early terminal', () => {
  const t = identityTransport({ budget: 300 });
  const text = { messageId: 'm1', delta: MULTIBYTE.repeat(5) };
  const second = { toolCallId: 'call_7', output: 'Ωμέγα 🌍 '.repeat(60) };
  const [s0] = encodeEvent(t, ID, 0, 'TEXT_MESSAGE_START', { messageId: 'm1', role: 'assistant' });
  const s1 = encodeEvent(t, ID, 1, 'TEXT_MESSAGE_CONTENT', text).map((e) => JSON.parse(e));
  const s2 = encodeEvent(t, ID, 2, 'TOOL_CALL_RESULT', second).map((e) => JSON.parse(e));
  const [s3] = encodeEvent(t, ID, 3, 'stream.completed', { workflowId: 'thread-42' });
  assert.ok(s1.length > 3 && s2.length > 3, 'the payloads really are fragmented');
  // A slice boundary cuts a multibyte character: only the joined bytes decode.
  assert.ok(s1.some(({ data }) => {
    try { new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(data.part, 'base64')); return false; } catch { return true; }
  }));

  const c = selected();
  c.accept(JSON.parse(s3)); // Pusher may deliver the terminal before the data
  const interleaved = [];
  for (let i = 0; i < Math.max(s1.length, s2.length); i++) {
    if (s2[s2.length - 1 - i]) interleaved.push(s2[s2.length - 1 - i]);
    if (s1[i]) interleaved.push(s1[i]);
  }
  for (const envelope of interleaved) c.accept(envelope);
  assert.deepEqual(c.events, [], 'nothing before sequence 0');
  c.accept(JSON.parse(s0));
  assert.deepEqual(c.events.map((e) => [e.sequence, e.type]), [
    [0, 'TEXT_MESSAGE_START'], [1, 'TEXT_MESSAGE_CONTENT'], [2, 'TOOL_CALL_RESULT'], [3, 'stream.completed'],
  ]);
  assert.deepEqual(c.events[1].data, text);
  assert.deepEqual(c.events[2].data, second);
  assert.deepEqual(c.events[3], { streamId: ID, sequence: 3, type: 'stream.completed', data: { workflowId: 'thread-42' } });
  // The terminal ended the segment: a later frame is not delivered.
  c.accept(frame(4));
  assert.equal(c.events.length, 4);
  assert.deepEqual(c.gaps, []);
});

test('136: a long multibyte payload survives Pusher-sized fragments in any order, duplicated', () => {
  const t = pusherTransport();
  const data = { type: 'ignored-by-core', delta: MULTIBYTE.repeat(1500) }; // ~90 KB of UTF-8
  const wire = envelopes(t, ID, [['text-delta', { delta: 'a' }], ['text-delta', data], ['stream.completed', { workflowId: 't1' }]]);
  assert.ok(wire.length > 9, `expected many fragments, got ${wire.length}`);
  const c = selected();
  for (const envelope of shuffled([...wire, ...wire], 7)) c.accept(envelope);
  assert.deepEqual(c.events.map((e) => e.data), [{ delta: 'a' }, data, { workflowId: 't1' }]);
  assert.deepEqual(c.gaps, []);
});

test('136: the spec worked example (PHP escapes, \\u00e8 and \\/) reassembles', () => {
  const t = identityTransport({ budget: 300, json: phpJson });
  const output = { toolCallId: 'call_7', output: 'Perugia è bella / '.repeat(8) };
  const wire = envelopes(t, ID, [['text-delta', { id: 'text_k2', delta: 'Ciao' }], ['tool-output-available', output],
    ['stream.completed', { workflowId: 'thread-42' }]]);
  assert.deepEqual(wire.slice(1, 4).map((e) => [e.data.index, e.data.total]), [[0, 3], [1, 3], [2, 3]]);
  assert.equal(wire[3].data.part, 'dTAwZTggYmVsbGEgXC8gIn0=');
  const c = selected();
  for (const envelope of wire.reverse()) c.accept(envelope);
  assert.deepEqual(c.events.map((e) => e.data), [{ id: 'text_k2', delta: 'Ciao' }, output, { workflowId: 'thread-42' }]);
});

test('137: other segments and already delivered duplicates are ignored', () => {
  const c = selected();
  c.accept(frame(0, { value: 'other' }, 'text-delta', OTHER));
  c.accept(frame(0));
  c.accept(frame(0));
  c.accept(frame(0, { changed: true })); // already delivered: not even a conflict
  c.accept(frame(1, { value: 'other' }, 'text-delta', OTHER));
  c.accept(frame(1));
  assert.deepEqual(c.events, [frame(0), frame(1)]);
  assert.deepEqual(c.gaps, []);
  c.close();
});

test('143: payloads are snapshotted when they arrive, not when they are delivered', () => {
  const c = selected();
  const data = { value: 1, nested: { list: [1] } };
  c.accept(frame(1, data));
  data.value = 99;
  data.nested.list.push(2);
  c.accept(frame(0));
  assert.deepEqual(c.events[1].data, { value: 1, nested: { list: [1] } });
  assert.notEqual(c.events[1].data, data);
});

test('144: a callback may feed frames or close without recursive delivery', () => {
  const log = [];
  const c = createChannelConsumer({
    onEvent(event) {
      log.push(event.sequence);
      if (event.sequence === 0) {
        c.accept(frame(1));
        log.push('fed 1');
      }
      if (event.sequence === 1) c.close();
    },
    onGap: assert.fail,
  }, ID);
  c.accept(frame(2));
  c.accept(frame(0));
  // Sequence 1 is delivered after the callback for 0 returned; close stops 2.
  assert.deepEqual(log, [0, 'fed 1', 1]);
  c.accept(frame(3));
  assert.deepEqual(log, [0, 'fed 1', 1]);
});

test('147: scalar, array and null payloads are preserved', () => {
  const c = selected();
  const values = [false, 0, null, 'text', ['nested', { a: 1 }], [], {}];
  values.forEach((value, sequence) => c.accept(frame(sequence, value)));
  assert.deepEqual(c.events.map((e) => e.data), values);
  assert.deepEqual(c.gaps, []);
});

for (const [label, make] of [
  ['undefined', () => undefined],
  ['a cyclic object', () => { const value = {}; value.self = value; return value; }],
  ['a BigInt', () => 1n],
  ['a function', () => () => 1],
]) {
  test(`147: an unserializable payload (${label}) is reported once`, () => {
    let calls = 0;
    const c = createChannelConsumer({ onEvent: assert.fail, onGap() { calls++; throw new Error('recovery'); } }, ID);
    assert.throws(() => c.accept({ ...frame(0), data: make() }), /recovery/);
    assert.equal(calls, 1);
    c.accept(frame(0));
    c.accept({ ...frame(1), data: make() });
    assert.equal(calls, 1);
  });
}

test('150: the core discovers segments, keeps their identity, and suppresses finished duplicates', () => {
  const record = recorder();
  const c = createChannelConsumer(record);
  c.accept(frame(1, {}, 'stream.completed'));
  c.accept(frame(0, { n: 'b0' }, 'text-delta', OTHER));
  c.accept(frame(1, { workflowId: 't' }, 'stream.interrupted', OTHER));
  c.accept(frame(0));
  // Late duplicates of both finished segments, including a conflicting one.
  c.accept(frame(0));
  c.accept(frame(5, { changed: true }));
  c.accept(frame(0, { n: 'b0' }, 'text-delta', OTHER));
  assert.deepEqual(record.events, [
    frame(0, { n: 'b0' }, 'text-delta', OTHER), frame(1, { workflowId: 't' }, 'stream.interrupted', OTHER),
    frame(0), frame(1, {}, 'stream.completed'),
  ]);
  assert.deepEqual(record.gaps, []);
  // A third (new) segment is still welcome.
  c.accept(frame(0, { n: 'c' }, 'text-delta', 'c'.repeat(32)));
  assert.equal(record.events.at(-1).streamId, 'c'.repeat(32));
});

test('150: limits are shared across segments', () => {
  const record = recorder();
  const c = createChannelConsumer(record);
  for (let i = 0; i < 1024; i++) c.accept(frame(1 + (i >> 1), {}, 'event', i % 2 ? ID : OTHER));
  assert.deepEqual(record.gaps, [], '1024 queued events fit');
  c.accept(frame(999, {}, 'event', 'c'.repeat(32)));
  assert.deepEqual(record.gaps, ['Channel buffer limit exceeded']);
});

test('150: malformed input and an invalid selection are rejected', () => {
  for (const bad of ['invalid', 'A'.repeat(32), 'a'.repeat(31), 'a'.repeat(33), 42]) {
    assert.throws(() => createChannelConsumer(recorder(), bad), /Invalid channel stream ID/);
  }
  assert.throws(() => createChannelConsumer({ onEvent() {} }), TypeError);
  for (const value of [null, undefined, 'text', 7, [], {}, { streamId: 'invalid' },
    { ...frame(0), streamId: ID.toUpperCase() }, { ...frame(0), streamId: `${ID}0` }]) {
    const record = recorder();
    const c = createChannelConsumer(record);
    c.accept(value);
    c.accept(value);
    c.accept(frame(0));
    assert.deepEqual(record.gaps, ['Invalid channel envelope'], JSON.stringify(value));
    assert.deepEqual(record.events, []);
  }
});
