// @ts-check
/**
 * relayline push consumer: turns the envelopes that Pusher or a Mercure hub deliver
 * back into the ordered protocol events of one run segment.
 *
 * Dependency-free ES module for browsers and Node >= 20.19; no build step. Behaviour and
 * limits follow the reference spec (`docs/reference/neuron-streaming-spec.md` §2.2-2.6, the
 * JS `@neuron-core/streaming` core), the contract the Python channels write to.
 *
 *   transport SDK (pusher-js channel, EventSource on the hub)
 *        │ envelopes {streamId, sequence, type, data}, any order, maybe duplicated
 *   subscribeToPusher / subscribeToMercure  →  createChannelConsumer
 *        │ one callback per logical event, in sequence order, fragments joined
 *   createProtocolStream  →  ReadableStream of {type, ...data} objects
 *        │ (optionally toSSEStream / encodeSSE for clients that read SSE text)
 *   @ag-ui/client AbstractAgent, Vercel AI SDK ChatTransport / readUIMessageStream
 *
 * Failure model: every problem (malformed frame, conflict, missing events after the
 * gap deadline, a buffer limit) is a *gap*. A gap closes the whole consumer and calls
 * `onGap(reason)` once; the application reloads from history (`GET /agui/threads/<id>`,
 * `GET /api/chat/<id>`) and builds a new consumer. Nothing here reconnects.
 *
 * Recovery: with `options.recovery` (e.g. `envelopesRecovery('/api/threads/<id>')`), a
 * *hole* (a later sequence arrived while an earlier one is missing: dropped events, or
 * a subscription made after the segment began) is first filled from the segment's log,
 * `GET <thread>/segments/<streamId>/envelopes?after=<n>` (the 202 push answer's
 * `envelopesUrl`): asked at once, then with backoff, at most `attempts` times without
 * progress. Only a log that cannot supply it (404/410, 400) or the gap deadline makes it
 * a gap ('Missing channel events').
 *
 * Usage (browser; subscribe, and wait for `pusher:subscription_succeeded` or the
 * EventSource `open`, *before* POSTing the turn with `?delivery=pusher|mercure`):
 *
 *   import { subscribeToPusher, createProtocolStream } from '/static/relayline-consumer.js';
 *   // (or from '@relayline/client', this file as an npm package: client/ in the repository)
 *   const channel = pusher.subscribe(`private-thread-${threadId}`);
 *   const stream = createProtocolStream((callbacks) => subscribeToPusher(channel, callbacks));
 *   const reader = stream.getReader();   // {type: 'TEXT_MESSAGE_CONTENT', messageId, delta}, ...
 *
 * Feeding the official clients: the stream yields parsed protocol *objects*, the same
 * objects the relayed SSE response carries in its `data:` lines.
 * - Vercel AI SDK: return it from a custom `ChatTransport.sendMessages` (it is a
 *   `ReadableStream<UIMessageChunk>`), or pass it to `readUIMessageStream({stream})`;
 *   give `uiMessageChunkSchema` validation as `parse`.
 * - AG-UI: in an `AbstractAgent` subclass, `run(input)` returns an Observable that reads
 *   the stream and calls `observer.next(event)`; `EventSchemas.parse` can be `parse`.
 * - Anything that only reads `text/event-stream`: `toSSEStream(stream)` gives the bytes.
 */

/**
 * @typedef {{streamId: string, sequence: number, type: string, data: unknown}} ChannelEvent
 *   One logical event as the backend sent it (fragments already joined).
 * @typedef {{onEvent(event: ChannelEvent): void, onGap(reason: string): void}} ChannelCallbacks
 *   Synchronous callbacks. A throwing `onEvent` closes the consumer and the error propagates.
 * @typedef {{accept(frame: unknown): void, close(): void}} ChannelConsumer
 * @typedef {{close(): void}} Subscription
 * @typedef {{url(streamId: string, after: number): string | URL, init?: RequestInit | undefined,
 *            attempts?: number, backoffMs?: number, fetch?: typeof fetch}} Recovery
 *   Where a hole is filled from: `url` names the segment's envelopes after `after`;
 *   `init` carries the credentials the app's auth endpoints use (headers, `credentials`).
 *   `attempts` (default 5) asks without progress, the second `backoffMs` (default 100)
 *   after the first, doubled each time.
 * @typedef {{gapTimeoutMs?: number, recovery?: Recovery | undefined}} ConsumerOptions
 *   `gapTimeoutMs`: how long a hole in the sequence may stay open (default 30 000).
 * @typedef {{type: string, [key: string]: unknown}} ProtocolObject
 *   A protocol event as SSE carries it: `type` first, then the payload's fields.
 * @typedef {{bind_global(cb: (name: string, data: unknown) => void): unknown,
 *            unbind_global(cb: (name: string, data: unknown) => void): unknown}} PusherChannelLike
 *   A pusher-js 8 `Channel` (or anything with the same two methods).
 * @typedef {{addEventListener(type: 'message', cb: (message: {data: unknown}) => void): unknown,
 *            removeEventListener(type: 'message', cb: (message: {data: unknown}) => void): unknown}} MessageSourceLike
 *   An `EventSource` opened on the Mercure hub (or anything dispatching `message` events).
 */

/** Terminal lifecycle types (§2.3); each closes its segment after its own delivery. */
const TERMINALS = new Set(['stream.completed', 'stream.interrupted', 'stream.failed']);
const FRAGMENT = 'stream.fragment';
const STREAM_ID = /^[a-f0-9]{32}$/;
const PART = /^[A-Za-z0-9_-]+={0,2}$/;

// Limits of §2.6. They bound what a hostile or broken publisher can make a page hold.
const MAX_ACTIVE_STREAMS = 64;
const MAX_KNOWN_STREAMS = 1024; // active plus finished
const MAX_QUEUED_EVENTS = 1024;
const MAX_QUEUED_PARTS = 4096;
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;
const MAX_FRAGMENTS = 4096;
const GAP_TIMEOUT_MS = 30_000;
// The protocol bridge cannot push back on a push transport, so its queue is bounded too.
const PROTOCOL_QUEUE_BYTES = 8 * 1024 * 1024;
const PROTOCOL_MIN_EVENT_BYTES = 8 * 1024;
const RECOVER_ATTEMPTS = 5;
const RECOVER_BACKOFF_MS = 100;
// Answers no later ask can change: the log cannot supply the events.
const RECOVER_FINAL = new Set([400, 401, 403, 404, 410]);

/**
 * The `recovery` option for a thread's segments, from the thread's URL
 * (`/api/threads/<id>`, under the app's mount point).
 * @param {string} threadUrl
 * @param {RequestInit} [init]  the credentials of the app's auth endpoints
 * @returns {Recovery}
 */
export function envelopesRecovery(threadUrl, init) {
  const base = String(threadUrl).replace(/\/+$/, '');
  return {
    url: (streamId, after) => `${base}/segments/${encodeURIComponent(streamId)}/envelopes?after=${after}`,
    init,
  };
}

/**
 * Order, join, dedupe and gap-check envelopes from any source.
 *
 * Without `streamId`, each new stream id opens its own segment (a resumed run is a new
 * segment with a new id). With it, frames of other segments are ignored.
 *
 * @param {ChannelCallbacks} callbacks
 * @param {string} [streamId] select one segment (32 lowercase hex)
 * @param {ConsumerOptions} [options]
 * @returns {ChannelConsumer}
 */
export function createChannelConsumer(callbacks, streamId, options = {}) {
  checkCallbacks(callbacks);
  if (streamId !== undefined && !isStreamId(streamId)) throw new TypeError('Invalid channel stream ID');
  const gapTimeoutMs = options.gapTimeoutMs ?? GAP_TIMEOUT_MS;
  if (!(gapTimeoutMs > 0 && Number.isFinite(gapTimeoutMs))) throw new TypeError('gapTimeoutMs must be a positive number');
  const { recovery } = options;
  if (recovery !== undefined && typeof recovery?.url !== 'function') throw new TypeError('recovery.url must be a function');

  /** @type {Map<string, ChannelConsumer>} */
  const active = new Map();
  // Finished ids are kept so that a late duplicate cannot reopen a segment.
  const finished = new Set();
  /** @type {Budget} */
  const budget = { events: 0, parts: 0, bytes: 0 };
  let closed = false;

  function close() {
    if (closed) return;
    closed = true;
    for (const segment of active.values()) segment.close();
    active.clear();
    finished.clear();
  }

  /** @param {string} reason */
  function fail(reason) {
    if (closed) return;
    close();
    callbacks.onGap(reason);
  }

  /** @param {unknown} frame */
  function accept(frame) {
    if (closed) return;
    const reason = envelopeProblem(frame);
    if (reason) return fail(reason);
    const envelope = /** @type {ChannelEvent} */ (frame);
    const id = envelope.streamId;
    if ((streamId !== undefined && id !== streamId) || finished.has(id)) return;
    let segment = active.get(id);
    if (!segment) {
      if (active.size >= MAX_ACTIVE_STREAMS || active.size + finished.size >= MAX_KNOWN_STREAMS) {
        return fail('Channel stream limit exceeded');
      }
      const onEvent = (/** @type {ChannelEvent} */ event) => callbacks.onEvent(event);
      segment = createSegment(id, { onEvent, onGap: fail }, budget, { gapTimeoutMs, recovery }, () => {
        active.delete(id);
        if (!closed) finished.add(id);
      });
      active.set(id, segment);
    }
    try {
      segment.accept(envelope);
    } catch (error) {
      close();
      throw error;
    }
  }

  return { accept, close };
}

/**
 * @typedef {{events: number, parts: number, bytes: number}} Budget  shared by all segments
 * @typedef {{type: string, fragment: boolean, total: number, parts: Map<number, string>, bytes: number}} Entry
 *   One queued logical event; `parts` holds base64url slices, or one JSON snapshot.
 */

/**
 * One segment: a map of queued sequences and the next one to deliver.
 *
 * @param {string} streamId
 * @param {ChannelCallbacks} callbacks
 * @param {Budget} budget
 * @param {{gapTimeoutMs: number, recovery: Recovery | undefined}} options
 * @param {() => void} onClose
 * @returns {ChannelConsumer}
 */
function createSegment(streamId, callbacks, budget, { gapTimeoutMs, recovery }, onClose) {
  /** @type {Map<number, Entry>} */
  const pending = new Map();
  let next = 0;
  let closed = false;
  let draining = false;
  // Asks of the log since the last progress; whether one is on its way or scheduled.
  let asks = 0;
  let asking = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let deadline;

  /** @param {Entry} entry */
  function release(entry) {
    budget.events -= 1;
    budget.parts -= entry.parts.size;
    budget.bytes -= entry.bytes;
  }

  function stopDeadline() {
    if (deadline !== undefined) clearTimeout(deadline);
    deadline = undefined;
  }

  function close() {
    if (closed) return;
    closed = true;
    stopDeadline();
    if (askTimer !== undefined) clearTimeout(askTimer);
    for (const entry of pending.values()) release(entry);
    pending.clear();
    onClose();
  }

  /** @param {string} reason */
  function fail(reason) {
    close();
    callbacks.onGap(reason);
  }

  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let askTimer;

  /** A later sequence arrived while `next` is missing (parts of one event come in order). */
  function holed() {
    for (const sequence of pending.keys()) if (sequence > next) return true;
    return false;
  }

  function scheduleAsk() {
    if (!recovery || closed || asking || !holed()) return;
    const attempts = recovery.attempts ?? RECOVER_ATTEMPTS;
    if (asks >= attempts) return; // the gap deadline decides from here
    asking = true;
    const delay = asks === 0 ? 0 : (recovery.backoffMs ?? RECOVER_BACKOFF_MS) * 2 ** (asks - 1);
    asks += 1;
    askTimer = setTimeout(() => {
      askTimer = undefined;
      ask().catch((error) => {
        // Only a throwing onEvent lands here; the segment is closed already.
        queueMicrotask(() => { throw error; });
      });
    }, delay);
  }

  async function ask() {
    const before = next;
    /** @type {unknown} */
    let answer;
    try {
      const response = await (recovery?.fetch ?? fetch)(/** @type {Recovery} */ (recovery).url(streamId, before - 1), recovery?.init);
      if (closed) return;
      if (RECOVER_FINAL.has(response.status)) return fail('Missing channel events');
      if (response.ok) answer = await response.json();
    } catch {
      // a failed ask (network, an unreadable body): asked again when due
    }
    if (closed) return;
    const envelopes = isRecord(answer) && Array.isArray(answer.envelopes) ? answer.envelopes : [];
    for (const frame of envelopes) {
      if (closed) return;
      if (envelopeProblem(frame)) return fail('Invalid channel envelope');
      if (/** @type {ChannelEvent} */ (frame).streamId === streamId) accept(/** @type {ChannelEvent} */ (frame), true);
    }
    if (next > before) asks = 0; // progress: whatever is still missing is asked at once
    asking = false;
    scheduleAsk();
  }

  /**
   * @param {ChannelEvent} envelope
   * @param {boolean} [recovered]  from the log, which keeps events whole: a whole event
   *   replaces the fragments collected for its sequence so far
   */
  function accept(envelope, recovered = false) {
    if (closed) return;
    const { sequence } = envelope;
    if (sequence < next) return; // already delivered: a replay or a duplicate
    const item = readItem(envelope);
    if (typeof item === 'string') return fail(item);

    let entry = pending.get(sequence);
    if (recovered && entry?.fragment && !item.fragment) {
      release(entry);
      pending.delete(sequence);
      entry = undefined;
    }
    if (entry && (entry.type !== item.type || entry.fragment !== item.fragment || entry.total !== item.total)) {
      return fail('Conflicting channel events');
    }
    const queued = entry?.parts.get(item.index);
    if (queued !== undefined) {
      // An identical copy is harmless; it must not count as progress (see drain).
      if (queued !== item.part) fail('Conflicting channel events');
      return;
    }
    const bytes = (item.fragment ? item.part.length : utf8Length(item.part)) + (entry ? 0 : utf8Length(item.type));
    if (budget.events + (entry ? 0 : 1) > MAX_QUEUED_EVENTS || budget.parts + 1 > MAX_QUEUED_PARTS
      || budget.bytes + bytes > MAX_QUEUED_BYTES) {
      return fail('Channel buffer limit exceeded');
    }
    if (!entry) {
      entry = { type: item.type, fragment: item.fragment, total: item.total, parts: new Map(), bytes: 0 };
      pending.set(sequence, entry);
      budget.events += 1;
    }
    entry.parts.set(item.index, item.part);
    entry.bytes += bytes;
    budget.parts += 1;
    budget.bytes += bytes;
    drain();
  }

  function drain() {
    // A callback that feeds more frames re-enters here; the outer loop delivers them.
    if (draining) return;
    draining = true;
    try {
      while (!closed) {
        const entry = pending.get(next);
        if (!entry || entry.parts.size !== entry.total) break;
        let data;
        try {
          data = JSON.parse(entry.fragment ? decodeParts(entry) : /** @type {string} */ (entry.parts.get(0)));
        } catch {
          return fail('Invalid reassembled payload');
        }
        pending.delete(next);
        release(entry);
        const sequence = next++;
        stopDeadline(); // progress: the next hole gets a fresh deadline
        // The segment ends before its terminal is handed out, so a callback that feeds
        // a late duplicate cannot reopen it.
        if (TERMINALS.has(entry.type)) close();
        callbacks.onEvent({ streamId, sequence, type: entry.type, data });
      }
      // Only delivery restarts the clock: duplicates and later arrivals cannot postpone a gap.
      if (!closed && pending.size > 0 && deadline === undefined) {
        deadline = setTimeout(() => fail('Missing channel events'), gapTimeoutMs);
      }
      scheduleAsk();
    } catch (error) {
      close();
      throw error;
    } finally {
      draining = false;
    }
  }

  return { accept, close };
}

/**
 * Check the envelope shape of §2.2; returns the gap reason, or '' when valid.
 * @param {unknown} frame
 */
function envelopeProblem(frame) {
  if (!isRecord(frame) || !isStreamId(frame.streamId)) return 'Invalid channel envelope';
  const { sequence, type } = frame;
  if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 0
    || typeof type !== 'string' || type === '' || !Object.hasOwn(frame, 'data')) {
    return 'Invalid channel envelope';
  }
  return '';
}

/**
 * Validate one envelope's payload and reduce it to what the queue stores: a fragment's
 * base64url part, or a JSON snapshot of a whole event (so later mutation of the caller's
 * object cannot change what is delivered). Returns a gap reason on failure.
 *
 * @param {ChannelEvent} envelope
 * @returns {{type: string, fragment: boolean, index: number, total: number, part: string} | string}
 */
function readItem({ type, data }) {
  if (type !== FRAGMENT) {
    let json;
    try {
      json = JSON.stringify(data);
    } catch {
      return 'Invalid channel payload'; // cyclic, BigInt
    }
    if (json === undefined) return 'Invalid channel payload'; // undefined, a function
    if (json.length + type.length > MAX_QUEUED_BYTES) return 'Channel buffer limit exceeded';
    return { type, fragment: false, index: 0, total: 1, part: json };
  }
  if (!isRecord(data)) return 'Invalid channel fragment';
  const { event, index, total, part } = data;
  if (typeof event !== 'string' || event === '' || event === FRAGMENT
    || typeof part !== 'string' || part === ''
    || typeof index !== 'number' || !Number.isSafeInteger(index)
    || typeof total !== 'number' || !Number.isSafeInteger(total)
    || total < 1 || total > MAX_FRAGMENTS || index < 0 || index >= total) {
    return 'Invalid channel fragment';
  }
  // Size first, so a huge part is refused before the regular expression scans it.
  if (part.length + event.length > MAX_QUEUED_BYTES) return 'Channel buffer limit exceeded';
  // Every part but the last is whole 3-byte groups: 4k characters, no padding (§2.4).
  if (!PART.test(part) || (index < total - 1 && (part.includes('=') || part.length % 4 !== 0))) {
    return 'Invalid channel fragment';
  }
  return { type: event, fragment: true, index, total, part };
}

/**
 * Join the parts in index order and decode base64url, then UTF-8 *strictly*: a slice
 * boundary may cut a multibyte character, so only the joined bytes are meaningful.
 * @param {Entry} entry
 */
function decodeParts(entry) {
  let joined = '';
  for (let index = 0; index < entry.total; index++) joined += entry.parts.get(index);
  const binary = atob(joined.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  // ignoreBOM keeps a leading BOM in the text, where JSON.parse rejects it.
  return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
}

/**
 * Receive envelopes from a pusher-js channel (`private-thread-<threadId>`, or
 * `private-encrypted-…`: pusher-js authenticates and decrypts before we see anything).
 *
 * Listens with `bind_global`, ignores `pusher:` and `pusher_internal:` control events,
 * and requires the Pusher event name to equal the envelope type. pusher-js hands over
 * the parsed envelope; a JSON string is accepted too. `close()` unbinds only this
 * listener; it never unsubscribes the channel or disconnects the client.
 *
 * @param {PusherChannelLike} channel
 * @param {ChannelCallbacks} callbacks
 * @param {string} [streamId]
 * @param {ConsumerOptions} [options]
 * @returns {Subscription}
 */
export function subscribeToPusher(channel, callbacks, streamId, options) {
  return attach(callbacks, streamId, options, ({ feed, fail }) => {
    /** @param {string} name @param {unknown} data */
    const receive = (name, data) => {
      if (typeof name === 'string' && (name.startsWith('pusher:') || name.startsWith('pusher_internal:'))) return;
      const frame = typeof data === 'string' ? parseJson(data) : data;
      if (!isRecord(frame) || frame.type !== name) return fail('Invalid channel envelope');
      feed([frame]);
    };
    channel.bind_global(receive);
    return () => channel.unbind_global(receive);
  });
}

/**
 * Receive envelopes from an `EventSource` opened on the Mercure hub. Each update's
 * `data` is a JSON array of envelopes (the channel packs several per publish); anything
 * else is a gap. Updates replayed after a reconnect (`Last-Event-ID`) are ignored as
 * duplicates. `close()` removes only this listener; the application closes the source.
 *
 * @param {MessageSourceLike} source
 * @param {ChannelCallbacks} callbacks
 * @param {string} [streamId]
 * @param {ConsumerOptions} [options]
 * @returns {Subscription}
 */
export function subscribeToMercure(source, callbacks, streamId, options) {
  return attach(callbacks, streamId, options, ({ feed, fail }) => {
    /** @param {{data: unknown}} message */
    const receive = (message) => {
      const envelopes = typeof message?.data === 'string' ? parseJson(message.data) : undefined;
      if (!Array.isArray(envelopes)) return fail('Invalid channel envelope');
      feed(envelopes);
    };
    source.addEventListener('message', receive);
    return () => source.removeEventListener('message', receive);
  });
}

/**
 * Shared plumbing of the transport adapters: a consumer, one listener, and cleanup on
 * close, on a gap, or when the application's callback throws.
 *
 * @param {ChannelCallbacks} callbacks
 * @param {string | undefined} streamId
 * @param {ConsumerOptions | undefined} options
 * @param {(io: {feed(frames: unknown[]): void, fail(reason: string): void}) => () => void} listen
 *   binds the listener and returns the function that unbinds it
 * @returns {Subscription}
 */
function attach(callbacks, streamId, options, listen) {
  checkCallbacks(callbacks);
  let closed = false;
  let unbind = () => {};
  const consumer = createChannelConsumer({ onEvent: (event) => callbacks.onEvent(event), onGap: fail }, streamId, options);

  function close() {
    if (closed) return;
    closed = true;
    unbind();
    consumer.close();
  }

  /** @param {string} reason */
  function fail(reason) {
    if (closed) return;
    close();
    callbacks.onGap(reason);
  }

  /** @param {unknown[]} frames */
  function feed(frames) {
    try {
      for (const frame of frames) {
        if (closed) return;
        consumer.accept(frame);
      }
    } catch (error) {
      close();
      throw error;
    }
  }

  unbind = listen({ feed, fail });
  return { close };
}

/**
 * Bridge one segment into a WHATWG `ReadableStream` of parsed protocol objects
 * `{type, ...data}` (objects, not SSE text; see `toSSEStream` for text).
 *
 * - `subscribe(callbacks)` attaches a subscription (e.g. `cb => subscribeToPusher(ch, cb)`)
 *   and returns its `{close()}` handle synchronously; it may finish or fail during setup.
 * - The envelope `type` wins over any `data.type`; `data` must be an object, or `[]`
 *   (an empty PHP payload); anything else errors the stream.
 * - `stream.completed` / `stream.interrupted` close the stream, `stream.failed` errors it
 *   with "Backend stream failed" after every earlier event; none of them is emitted.
 *   The protocol's own frames (RUN_FINISHED, RUN_ERROR, Vercel `finish`/`error`, native
 *   `done`, always the last protocol event of a native segment) pass through.
 * - A second stream id, a gap, a throwing or rejecting `parse`, or a reader too slow for
 *   the 8 MiB queue (each event counted as at least 8 KiB) errors the stream and closes
 *   the subscription; cancelling the stream closes it too.
 * - `parse(event)` may validate or narrow each object (e.g. AG-UI `EventSchemas.parse`,
 *   the `ai` package's `uiMessageChunkSchema`); it may be async, order is kept.
 *
 * @template [T=ProtocolObject]
 * @param {(callbacks: ChannelCallbacks) => Subscription} subscribe
 * @param {(event: ProtocolObject) => T | Promise<T>} [parse]
 * @returns {ReadableStream<T>}
 */
export function createProtocolStream(subscribe, parse = (event) => /** @type {T} */ (/** @type {unknown} */ (event))) {
  /** @type {Subscription | undefined} */
  let subscription;
  let released = false;
  /** @type {string | undefined} */
  let segment;

  function release() {
    if (released) return;
    released = true;
    subscription?.close();
  }

  /** @type {ReadableStream<ChannelEvent>} */
  const events = new ReadableStream({
    start(controller) {
      /** @param {unknown} error */
      const fail = (error) => {
        if (released) return;
        release();
        controller.error(error);
      };
      /** @type {ChannelCallbacks} */
      const callbacks = {
        onEvent(event) {
          if (released) return;
          segment ??= event.streamId;
          if (event.streamId !== segment) return fail(new Error('Protocol streams require one execution segment'));
          if (queuedSize(event) > (controller.desiredSize ?? 0)) return fail(new Error('Protocol stream buffer limit exceeded'));
          controller.enqueue(event);
          if (TERMINALS.has(event.type)) {
            release();
            controller.close();
          }
        },
        onGap: (reason) => fail(new Error(reason)),
      };
      try {
        subscription = subscribe(callbacks);
        // The source may have finished (or failed) before it returned its handle.
        if (released) subscription?.close();
      } catch (error) {
        fail(error);
      }
    },
    cancel: release,
  }, { highWaterMark: PROTOCOL_QUEUE_BYTES, size: queuedSize });

  // pipeThrough cancels `events` (and so releases the subscription) when parse throws
  // or the reader cancels.
  return events.pipeThrough(new TransformStream({
    async transform(event, controller) {
      if (event.type === 'stream.failed') throw new Error('Backend stream failed');
      if (TERMINALS.has(event.type)) return;
      const { data } = event;
      if (!isRecord(data) && !(Array.isArray(data) && data.length === 0)) {
        throw new TypeError('Protocol event payload must be an object');
      }
      // `type` first, as on the SSE wire (§2.1), and the envelope's: a `data.type` is dropped.
      const { type: _payloadType, ...fields } = /** @type {Record<string, unknown>} */ (data);
      controller.enqueue(await parse({ type: event.type, ...fields }));
    },
  }));
}

/**
 * One SSE frame, exactly as relayline's relayed responses frame events (§2.1):
 * `data: <compact JSON>\n\n`, no `event:` or `id:` line.
 *
 * @param {{type: string}} event
 * @returns {string}
 */
export function encodeSSE(event) {
  return `data: ${JSON.stringify(event)}\n\n`;
}

/**
 * Encode a protocol stream as SSE bytes, for clients that only read
 * `text/event-stream` bodies: `new Response(toSSEStream(stream), {headers:
 * {'content-type': 'text/event-stream'}})` can stand in for the relayed HTTP response.
 *
 * @param {ReadableStream<{type: string}>} stream
 * @returns {ReadableStream<Uint8Array>}
 */
export function toSSEStream(stream) {
  const encoder = new TextEncoder();
  return stream.pipeThrough(new TransformStream({
    transform(event, controller) {
      controller.enqueue(encoder.encode(encodeSSE(event)));
    },
  }));
}

/** @param {ChannelEvent} event */
function queuedSize(event) {
  return Math.max(PROTOCOL_MIN_EVENT_BYTES, utf8Length(JSON.stringify(event)));
}

/**
 * UTF-8 byte length without allocating the encoded copy (lone surrogates count as the
 * 3-byte U+FFFD they would become).
 * @param {string} text
 */
function utf8Length(text) {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) bytes += 1;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length
      && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2; // a pair: 2 UTF-16 units, 4 bytes
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** @param {string} text */
function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** @param {ChannelCallbacks} callbacks */
function checkCallbacks(callbacks) {
  if (typeof callbacks?.onEvent !== 'function' || typeof callbacks?.onGap !== 'function') {
    throw new TypeError('callbacks must have onEvent and onGap functions');
  }
}

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isRecord(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * @param {unknown} value
 * @returns {value is string}
 */
function isStreamId(value) {
  return typeof value === 'string' && STREAM_ID.test(value);
}
