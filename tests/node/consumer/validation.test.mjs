// Conflicts and malformed frames (spec §2.4, §2.6). Catalogue I: 140, 141.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createChannelConsumer } from '../../../web/static/relayline-consumer.js';
import { ID, b64url, fragment, frame, recorder, useManualClock } from './helpers.mjs';

useManualClock();

const selected = () => {
  const record = recorder();
  return { ...record, ...createChannelConsumer(record, ID) };
};
const part = (text) => b64url(Buffer.from(text, 'utf8'));

for (const [label, first, second] of [
  ['payload', frame(1), frame(1, { changed: true })],
  ['type', frame(1), frame(1, { value: 1 }, 'other')],
  ['fragment content', fragment(1, part('{}')), fragment(1, part('[]'))],
  ['fragment total', fragment(1, part('{}')), fragment(1, part('{}'), 1, 2)],
  ['fragment event name', fragment(1, part('{}')), fragment(1, part('{}'), 0, 1, 'other')],
  ['representation (fragment vs whole)', fragment(1, part('{}')), frame(1, {})],
  ['representation (whole vs fragment)', frame(1, {}), fragment(1, part('{}'))],
  // The same text in both forms: a whole 1234 and a fragment part '1234'.
  ['representation with identical text', frame(1, 1234), fragment(1, '1234')],
]) {
  test(`140: a conflicting queued ${label} is a gap`, () => {
    const c = selected();
    c.accept(first);
    c.accept(second);
    assert.deepEqual(c.gaps, ['Conflicting channel events']);
    c.accept(frame(0));
    assert.deepEqual(c.events, []);
  });
}

test('140: identical queued copies are not conflicts (content, not arrival, decides)', () => {
  const c = selected();
  for (const envelope of [frame(2, { a: [1, 'è'] }), fragment(1, 'eyJh', 0, 2), frame(2, { a: [1, 'è'] }),
    fragment(1, 'eyJh', 0, 2), fragment(1, 'IjoxfQ==', 1, 2)]) c.accept(envelope);
  c.accept(frame(0));
  assert.deepEqual(c.gaps, []);
  assert.deepEqual(c.events.map((e) => e.data), [{ value: 0 }, { a: 1 }, { a: [1, 'è'] }]);
});

const malformed = [
  // Envelope (§2.2): 'Invalid channel envelope'.
  ['negative sequence', { ...frame(0), sequence: -1 }, 'Invalid channel envelope'],
  ['fractional sequence', { ...frame(0), sequence: 0.5 }, 'Invalid channel envelope'],
  ['unsafe sequence', { ...frame(0), sequence: Number.MAX_SAFE_INTEGER + 1 }, 'Invalid channel envelope'],
  ['string sequence', { ...frame(0), sequence: '0' }, 'Invalid channel envelope'],
  ['NaN sequence', { ...frame(0), sequence: Number.NaN }, 'Invalid channel envelope'],
  ['empty type', { ...frame(0), type: '' }, 'Invalid channel envelope'],
  ['non-string type', { ...frame(0), type: 7 }, 'Invalid channel envelope'],
  ['missing data', { streamId: ID, sequence: 0, type: 'event' }, 'Invalid channel envelope'],
  ['inherited data only', Object.assign(Object.create({ data: {} }), { streamId: ID, sequence: 0, type: 'event' }), 'Invalid channel envelope'],
  // Fragment (§2.4, §2.6): 'Invalid channel fragment'.
  ['fragment data not an object', frame(0, 'eyJ9', 'stream.fragment'), 'Invalid channel fragment'],
  ['fragment without event', frame(0, { index: 0, total: 1, part: 'e30=' }, 'stream.fragment'), 'Invalid channel fragment'],
  ['fragment of a fragment', fragment(0, 'e30=', 0, 1, 'stream.fragment'), 'Invalid channel fragment'],
  ['empty part', fragment(0, ''), 'Invalid channel fragment'],
  ['non-string part', fragment(0, 123), 'Invalid channel fragment'],
  ['part outside the URL-safe alphabet', fragment(0, 'e3+='), 'Invalid channel fragment'],
  ['standard-alphabet slash', fragment(0, 'ab/c'), 'Invalid channel fragment'],
  ['padding inside a part', fragment(0, 'e3=0'), 'Invalid channel fragment'],
  ['padding on a non-final part', fragment(0, 'e30=', 0, 2), 'Invalid channel fragment'],
  ['non-final part not whole 3-byte groups', fragment(0, 'eyJhIj', 0, 2), 'Invalid channel fragment'],
  ['total above 4096', fragment(0, 'AAAA', 0, 4097), 'Invalid channel fragment'],
  ['total 0', fragment(0, 'e30=', 0, 0), 'Invalid channel fragment'],
  ['fractional total', fragment(0, 'e30=', 0, 1.5), 'Invalid channel fragment'],
  ['negative index', fragment(0, 'e30=', -1), 'Invalid channel fragment'],
  ['index equal to total', fragment(0, 'e30=', 1, 1), 'Invalid channel fragment'],
  ['string index', fragment(0, 'e30=', '0'), 'Invalid channel fragment'],
  // Reassembly: 'Invalid reassembled payload'.
  ['bad base64 length', fragment(0, 'a'), 'Invalid reassembled payload'],
  ['not JSON', fragment(0, part('not JSON')), 'Invalid reassembled payload'],
  ['truncated JSON', fragment(0, part('{"a":')), 'Invalid reassembled payload'],
  ['invalid UTF-8', fragment(0, b64url([0x22, 0xff, 0x22])), 'Invalid reassembled payload'],
  ['overlong UTF-8', fragment(0, b64url([0x22, 0xc0, 0xaf, 0x22])), 'Invalid reassembled payload'],
  ['UTF-8 surrogate', fragment(0, b64url([0x22, 0xed, 0xa0, 0x80, 0x22])), 'Invalid reassembled payload'],
  ['byte order mark', fragment(0, b64url([0xef, 0xbb, 0xbf, 0x7b, 0x7d])), 'Invalid reassembled payload'],
];

for (const [label, envelope, reason] of malformed) {
  test(`141: ${label} is a gap (${reason})`, () => {
    const c = selected();
    c.accept(envelope);
    c.accept(envelope);
    c.accept(frame(0));
    c.accept(frame(1));
    assert.deepEqual(c.gaps, [reason]);
    assert.deepEqual(c.events, []);
  });
}

test('141: boundary values are accepted (total 4096, unpadded last part, index total-1)', () => {
  const c = selected();
  c.accept(fragment(0, part('{"a":1}').replace(/=+$/, '')));
  c.accept(fragment(1, 'e30=', 4095, 4096));
  assert.deepEqual(c.gaps, []);
  assert.deepEqual(c.events.map((e) => e.data), [{ a: 1 }]);
  c.close();
});

test('141: a malformed frame in a sequence already delivered is ignored like any replay', () => {
  const c = selected();
  c.accept(frame(0));
  c.accept(fragment(0, '!'));
  c.accept(frame(1));
  assert.deepEqual(c.gaps, []);
  assert.equal(c.events.length, 2);
});
