// Test doubles for the JS consumer: the publishing side of spec §2.2-2.5 (envelope,
// fragment sizing, batching), plain stand-ins for a pusher-js channel and an EventSource,
// and a manual clock. Not a test file itself (node --test only runs *.test.mjs).
import assert from 'node:assert/strict';
import { afterEach, beforeEach } from 'node:test';

export const ID = '3f9a0c2e7b6d4e18a5c1f0b2d4e6a8c0';
export const OTHER = 'b'.repeat(32);
export const TERMINAL_TYPES = ['stream.completed', 'stream.interrupted', 'stream.failed'];

const utf8 = (text) => Buffer.byteLength(text, 'utf8');

/** A plain envelope object. */
export const frame = (sequence, data = { value: sequence }, type = 'text-delta', streamId = ID) =>
  ({ streamId, sequence, type, data });

/** A hand-made fragment envelope object (for malformed-input tests). */
export const fragment = (sequence, part, index = 0, total = 1, event = 'text-delta', streamId = ID) =>
  frame(sequence, { event, index, total, part }, 'stream.fragment', streamId);

/** URL-safe base64 that keeps `=` padding (§2.4); Node's 'base64url' would drop it. */
export const b64url = (bytes) => Buffer.from(bytes).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');

/** PHP's wire JSON (§2.1): non-ASCII as lowercase \uXXXX, `/` as `\/`. */
export const phpJson = (value) => JSON.stringify(value)
  .replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  .replace(/\//g, '\\/');

// ---------------------------------------------------------------------------------
// Transports: the hooks of AbstractChannel (§2.5) for the three channels we emulate.

/** No wrapper; batch = concatenation (the AbstractChannel defaults). */
export function identityTransport({ budget, eventBudget, batchSize = 1, json = JSON.stringify } = {}) {
  return {
    budget, eventBudget, batchSize, json,
    encode: (_type, envelope) => envelope,
    batch: (items) => items.join(''),
    batchBytes: (items) => utf8(items.join('')),
  };
}

/** PusherChannel (§3.3), unencrypted: items `{"channel","name","data":<envelope string>}`. */
export function pusherTransport(channel = 'private-thread-t1', { budget = 10000, eventBudget = 10000, batchSize = 10, json = JSON.stringify } = {}) {
  const batch = (items) => `{"batch":[${items.join(',')}]}`;
  return {
    budget, eventBudget, batchSize, json, batch,
    encode: (type, envelope) => JSON.stringify({ channel, name: type, data: envelope }),
    batchBytes: (items) => utf8(batch(items)),
  };
}

/** MercureChannel (§3.4): one update = JSON array of envelopes, sized as the form POST. */
export function mercureTransport(topic = 'https://example.test/threads/t1', { budget = 1_048_576, batchSize = 1, json = JSON.stringify } = {}) {
  const batch = (items) => `[${items.join(',')}]`;
  return {
    budget, eventBudget: undefined, batchSize, json, batch,
    encode: (_type, envelope) => envelope,
    batchBytes: (items) => new URLSearchParams({ topic, data: batch(items) }).toString().length + '&private=on'.length,
  };
}

// ---------------------------------------------------------------------------------
// The envelope and fragment codec of §2.2 and §2.4, sizing search included.

function envelopeJson(t, streamId, sequence, type, dataJson) {
  // Header first, its `}` dropped, then the pre-encoded data: the data is encoded once.
  return `${t.json({ streamId, sequence, type }).slice(0, -1)},"data":${dataJson}}`;
}

function fits(t, type, envelope) {
  return (t.eventBudget === undefined || utf8(envelope) <= t.eventBudget)
    && (t.budget === undefined || t.batchBytes([t.encode(type, envelope)]) <= t.budget);
}

/**
 * One logical event as the envelope strings a channel would send: the whole envelope
 * when it fits, else `stream.fragment` envelopes sized by the deterministic search.
 */
export function encodeEvent(t, streamId, sequence, type, data) {
  const dataJson = t.json(data);
  const whole = envelopeJson(t, streamId, sequence, type, dataJson);
  if (fits(t, type, whole)) return [whole];

  const bytes = Buffer.from(dataJson, 'utf8');
  const maxF = Math.ceil(bytes.length / 3);
  // The probe carries the widest index/total digits any real fragment can have.
  const probe = (part) => envelopeJson(t, streamId, sequence, 'stream.fragment',
    t.json({ event: type, index: maxF, total: maxF, part }));
  let capacity = Infinity;
  if (t.eventBudget !== undefined) capacity = Math.min(capacity, t.eventBudget - utf8(probe('')));
  if (t.budget !== undefined) capacity = Math.min(capacity, t.budget - t.batchBytes([t.encode('stream.fragment', probe(''))]));
  let low = 1;
  let high = Math.min(maxF, Math.floor(capacity / 4));
  let groups = 0;
  while (low <= high) {
    const mid = Math.floor((low + high) / 2);
    if (fits(t, 'stream.fragment', probe('A'.repeat(4 * mid)))) {
      groups = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  if (groups === 0) throw new RangeError('Channel byte limits cannot fit a fragment envelope and its data.');

  const sliceBytes = 3 * groups;
  const total = Math.ceil(bytes.length / sliceBytes);
  return Array.from({ length: total }, (_, index) => {
    const part = b64url(bytes.subarray(index * sliceBytes, (index + 1) * sliceBytes));
    const envelope = envelopeJson(t, streamId, sequence, 'stream.fragment', t.json({ event: type, index, total, part }));
    if (!fits(t, 'stream.fragment', envelope)) throw new RangeError('Transport encoding exceeds the channel fragment byte limits.');
    return envelope;
  });
}

/**
 * A whole segment through the batching policy of §2.5: returns the deliveries (each a
 * `batch(items)` string) in the order the channel makes them. `events` are
 * `[type, data]` pairs; a terminal type is flushed alone, after whatever is pending.
 */
export function produce(t, streamId, events) {
  const deliveries = [];
  let queue = [];
  const flush = () => {
    if (queue.length) deliveries.push(t.batch(queue));
    queue = [];
  };
  events.forEach(([type, data], sequence) => {
    const terminal = TERMINAL_TYPES.includes(type);
    if (terminal) flush();
    for (const envelope of encodeEvent(t, streamId, sequence, type, data)) {
      const item = t.encode(JSON.parse(envelope).type, envelope);
      if (queue.length && t.budget !== undefined && t.batchBytes([...queue, item]) > t.budget) flush();
      queue.push(item);
      if (queue.length >= t.batchSize) flush();
    }
    if (terminal) flush();
  });
  flush();
  return deliveries;
}

/** Envelope objects of a segment, one per wire envelope (fragments separate). */
export function envelopes(t, streamId, events) {
  return events.flatMap(([type, data], sequence) =>
    encodeEvent(t, streamId, sequence, type, data).map((text) => JSON.parse(text)));
}

// ---------------------------------------------------------------------------------
// Transport stand-ins.

/** The slice of a pusher-js 8 Channel we use: global bindings and their dispatch. */
export class FakePusherChannel {
  constructor(name = 'private-thread-t1') {
    this.name = name;
    this.globalCallbacks = [];
  }
  bind_global(callback) { this.globalCallbacks.push(callback); return this; }
  unbind_global(callback) {
    this.globalCallbacks = callback ? this.globalCallbacks.filter((c) => c !== callback) : [];
    return this;
  }
  /** Dispatch one event to the global callbacks as pusher-js does. */
  emit(name, data) {
    for (const callback of [...this.globalCallbacks]) callback(name, data, { user_id: undefined });
  }
  /** pusher-js JSON-parses the `data` string of a socket message when it can. */
  receiveRaw(name, dataText) {
    let data = dataText;
    try { data = JSON.parse(dataText); } catch { /* kept as text */ }
    this.emit(name, data);
  }
  /** Fan out one HTTP `batch_events` body, as the Pusher server would. */
  deliver(body) {
    for (const item of JSON.parse(body).batch) {
      assert.equal(item.channel, this.name);
      this.receiveRaw(item.name, item.data);
    }
  }
}

/** An EventSource stand-in: `message` listeners, each update's data is a string. */
export class FakeEventSource {
  constructor() { this.listeners = new Map(); }
  addEventListener(type, listener) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(listener);
  }
  removeEventListener(type, listener) { this.listeners.get(type)?.delete(listener); }
  count(type = 'message') { return this.listeners.get(type)?.size ?? 0; }
  /** Deliver one update with this `data` (what a hub publish becomes). */
  publish(data, lastEventId = '') {
    for (const listener of [...(this.listeners.get('message') ?? [])]) listener({ type: 'message', data, lastEventId });
  }
  /** One update holding these envelopes (objects or JSON strings). */
  send(...items) {
    this.publish(`[${items.map((item) => (typeof item === 'string' ? item : JSON.stringify(item))).join(',')}]`);
  }
}

// ---------------------------------------------------------------------------------
// A manual clock replacing setTimeout/clearTimeout for one test; no real sleeps.

function install() {
  const real = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout };
  const timers = new Map();
  let now = 0;
  let nextId = 1;
  const clock = {
    get now() { return now; },
    /** Live timers: a released consumer leaves none. */
    get pending() { return timers.size; },
    advance(ms) {
      const target = now + ms;
      for (;;) {
        let due;
        for (const [id, timer] of timers) if (timer.at <= target && (!due || timer.at < due[1].at)) due = [id, timer];
        if (!due) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].callback(...due[1].args);
      }
      now = target;
    },
  };
  globalThis.setTimeout = Object.assign((callback, delay = 0, ...args) => {
    const id = nextId++;
    timers.set(id, { at: now + delay, callback, args });
    return id;
  }, { clock });
  globalThis.clearTimeout = (id) => { timers.delete(id); };
  return { clock, restore: () => Object.assign(globalThis, real) };
}

/**
 * Every test of a file that calls this runs on a fresh manual clock, so no real 30 s
 * gap timer can outlive a test (even a failing one).
 */
export function useManualClock() {
  let restore;
  beforeEach(() => { ({ restore } = install()); });
  afterEach(() => restore());
}

/** The current test's manual clock (installed now, for this test, if no hook did). */
export function installClock(t) {
  if (globalThis.setTimeout.clock) return globalThis.setTimeout.clock;
  const { clock, restore } = install();
  t.after(restore);
  return clock;
}

// ---------------------------------------------------------------------------------
// Small utilities.

/** A recording consumer callback pair. */
export function recorder() {
  const events = [];
  const gaps = [];
  return { events, gaps, onEvent: (event) => events.push(event), onGap: (reason) => gaps.push(reason) };
}

/** Deterministic shuffle (mulberry32), so failures reproduce. */
export function shuffled(items, seed = 1) {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

export async function collect(stream) {
  const values = [];
  for await (const value of stream) values.push(value);
  return values;
}

/** Let pending promise jobs (stream pipes) run. */
export const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A long text whose UTF-8 slices are sure to cut multibyte characters. */
export const MULTIBYTE = 'こんにちは 🌍 Perugia è bella / Ωμέγα ✓ 日本語 — ';
