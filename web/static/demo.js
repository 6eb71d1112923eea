/**
 * relayline demo page: a chat that speaks the native protocol (docs/DESIGN.md section 5).
 *
 *   POST /api/threads/<id>/messages      {"content": "..."}            -> native SSE
 *   POST /api/threads/<id>/tool-results  {"<callId>": {"result": any}} -> native SSE
 *   POST /api/threads/<id>/approvals     {"<callId>": "approve" | ["reject", "why"]}
 *   GET  /api/chat/<id>                  Vercel UIMessage[] (used to redraw on reload)
 *   GET  /api/threads/<id>               {run: {runId, status, interrupt}} (what the run waits for)
 *   GET  /api/threads/<id>/stream        native SSE: the newest segment (from its start, or
 *                                        ?after=<streamId>:<sequence>), then live; 204: nothing more
 *   POST /api/threads/<id>/cancel        stop the running answer (or the open approval)
 *   GET  /api/threads                    this person's conversations, newest first
 *   DELETE /api/threads/<id>             erase a conversation
 *   GET  /demo/config                    the push deliveries this server offers, whether
 *                                        it wants a bearer token, the words for outcomes
 *   GET  /agent/default                  the agent's suggestions (the chips)
 *   POST /pusher/auth, GET /mercure/token?threadId=<id>   push subscriptions (docs/DESIGN.md section 3)
 *
 * Layout of this file: transports (how native events reach the page: relayed, or pushed
 * through Pusher or a Mercure hub), rendering (events and stored messages become DOM,
 * always through textContent), the conversation loop (send, answer frontend tools, ask
 * for approvals), and the page wiring.
 *
 * Safety: model output and tool data are only ever assigned with textContent or as
 * attribute values; the page never parses HTML it did not ship (see the templates in
 * demo.html), and the server's Content-Security-Policy allows no inline script.
 */

import {
  createProtocolStream,
  envelopesRecovery,
  subscribeToMercure,
  subscribeToPusher,
} from './relayline-consumer.js';

// Where relayline is mounted ('/', or e.g. '/ai/' inside a host application): this
// module is served at <mount>demo/static/demo.js, and every route is under the mount.
const MOUNT = new URL('../../', import.meta.url).pathname;

/** The URL path of relayline's route `path` (written from the mount, e.g. '/api/chat'). */
function route(path) {
  return MOUNT + path.replace(/^\//, '');
}

const THREAD_KEY = 'relayline.demo.threadId';
// How often an idle page asks whether its conversation moved on elsewhere (another tab
// started or continued the run): then it redraws and follows the running answer.
const WATCH_MS = 1500;
// A dropped stream is resumed from its last sequence; this many tries in a row may
// fail (each waits RESUME_PAUSE_MS longer) before the page gives up.
const RESUME_ATTEMPTS = 5;
const RESUME_PAUSE_MS = 300;
// The header naming the segment a stream carries (the log a cursor belongs to).
const STREAM_ID_HEADER = 'X-Relayline-Stream-Id';
// Native events after which a segment is over, when the server sends no `done`.
const SEGMENT_ENDINGS = new Set(['interrupt', 'cancelled', 'error', 'finish']);
// Error codes of a stream that ended while its run goes on: resume, do not report.
const STREAM_BROKEN = 'STREAM_INTERRUPTED';
const RUN_MOVED = 'RUN_CONTINUES_ELSEWHERE';

/**
 * Tools that run in this page when the agent calls them ("frontend tools"). Each gets
 * the call's inputs and returns the result that goes back through /tool-results.
 * @type {Record<string, (inputs: Record<string, unknown>) => unknown>}
 */
const FRONTEND_TOOLS = {
  read_title: () => document.title,
};

// ---------------------------------------------------------------------------------
// Transports
//
// A transport sends one request and calls onEvent with each native event
// ({type, ...payload}) of the segment it starts, in order; it resolves when the
// segment ends and rejects on an HTTP or network failure.
//
// - relay: the run's output comes back as the SSE body of the POST itself.
// - pusher / mercure: subscribe first (push keeps nothing for a late listener), POST
//   with ?delivery=..., get 202, and read the segment from the subscription through
//   createProtocolStream() of relayline-consumer.js, which orders, joins and
//   gap-checks the envelopes and yields the same {type, ...payload} objects. On
//   Pusher, a hole in what arrived is filled from the segment's log (recovery).
// ---------------------------------------------------------------------------------

/**
 * @typedef {{type: string, [key: string]: any}} NativeEvent
 * @typedef {{path: string, body: unknown, onEvent: (event: NativeEvent) => void,
 *            signal: AbortSignal}} TransportRequest
 * @typedef {(request: TransportRequest) => Promise<void>} Transport
 * @typedef {{stream: ReadableStream<NativeEvent>, close(): void}} Listener
 *   a subscription to the current thread's push channel, ready to receive
 */

/** An answer the server refused before streaming ({"error", "type"} JSON). */
class RequestError extends Error {}

/** The vendored pusher-js (MIT), loaded only when the server offers Pusher. */
const PUSHER_SCRIPT = route('/demo/static/vendor/pusher-with-encryption.min.js');
// Where the last Mercure update this page saw is kept: {threadId, eventId}.
const MERCURE_CURSOR_KEY = 'relayline.demo.mercureCursor';
// The consumer's error when a segment ends with stream.failed: the protocol's own
// `error` event, drawn just before, already says what went wrong.
const BACKEND_FAILED = 'Backend stream failed';

/** `path` with ?delivery=<delivery>, so the server's default never decides for us. */
function withDelivery(path, delivery) {
  return `${path}?delivery=${encodeURIComponent(delivery)}`;
}

// The bearer token the person typed (when the server wants one): kept for this tab only.
const TOKEN_KEY = 'relayline.demo.token';

/** `Authorization` for relayline's API when the person gave a token, else nothing. */
function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** fetch relayline's route `path`, with the person's token when there is one. */
function request(path, init = {}) {
  return fetch(route(path), { ...init, headers: { ...init.headers, ...authHeaders() } });
}

function postJSON(path, body, accept, signal) {
  return request(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: accept },
    body: JSON.stringify(body),
    signal,
  });
}

/**
 * Relay: the segment is the body of the POST. A body that closes before the segment's
 * end (a dropped connection) is resumed from its last sequence (followSegment).
 * @type {Transport}
 */
async function relayTransport({ path, body, onEvent, signal }) {
  const response = await postJSON(withDelivery(path, 'relay'), body, 'text/event-stream', signal);
  if (!response.ok) throw new RequestError(await errorMessage(response));
  if (!response.body) throw new Error('The server sent no stream.');
  const segment = new Segment(onEvent, response.headers.get(STREAM_ID_HEADER));
  try {
    await readEventStream(response.body, segment.frame);
  } catch (error) {
    if (signal.aborted) throw error; // the page left the conversation
    // the connection broke mid-answer: resumed below
  }
  if (!segment.ended) await followSegment(chat.threadId, segment, signal);
}

/**
 * What the page has read of one segment: its log cursor (the `id:` of the last frame)
 * and whether it is over. It is over at a `done` event (the server's explicit end),
 * else at an event that ends a segment (interrupt, cancelled, a failure, finish); a
 * stream that closes before either was dropped, or (a server without `done`) ended
 * after its last text: resuming from the cursor tells which (204: it ended).
 */
class Segment {
  /**
   * @param {(event: NativeEvent) => void} onEvent what to do with each event drawn
   * @param {string | null} streamId the segment's id, when the stream named it
   */
  constructor(onEvent, streamId = null) {
    this.onEvent = onEvent;
    this.streamId = streamId;
    this.after = -1;
    /** the `id:` of the last frame, `<streamId>:<sequence>`: what a resume sends back */
    this.cursor = null;
    this.ended = false;
    /** the run moved to a newer segment (RUN_CONTINUES_ELSEWHERE): follow that one */
    this.moved = false;
    /** @type {(event: NativeEvent, id?: string) => void} */
    this.frame = (event, id) => {
      const cursor = id === undefined ? null : /^(?:[0-9a-f]{32}:)?(\d+)$/.exec(id);
      if (cursor) {
        this.after = Number(cursor[1]);
        this.cursor = id;
      }
      if (event.type === 'done') this.ended = true; // passed on: the loop may check it
      if (event.type === 'error' && (event.code === STREAM_BROKEN || event.code === RUN_MOVED)) {
        this.moved = event.code === RUN_MOVED;
        return; // the run goes on: the page resumes instead of reporting it
      }
      if (SEGMENT_ENDINGS.has(event.type)) this.ended = true;
      this.onEvent(event);
    };
  }
}

/** The thread's stream could not be continued from the cursor (410): redraw instead. */
class SegmentGone extends Error {}

/**
 * Read `segment` through GET /api/threads/<id>/stream until it is over: from after its
 * cursor (?after=; from the start without one), again after every drop. Resolves when
 * the segment is over, or when the thread has nothing more for it (204, or only a
 * newer segment: someone else's turn, which the watcher picks up).
 * @param {string} threadId
 * @param {Segment} segment
 * @param {AbortSignal} signal
 */
async function followSegment(threadId, segment, signal) {
  const path = `/api/threads/${encodeURIComponent(threadId)}/stream`;
  let failures = 0;
  while (!segment.ended) {
    if (segment.moved) {
      // The run was recovered in a new segment: read that one from its start (it
      // redraws its steps in place, see clearSteps).
      Object.assign(segment, { moved: false, streamId: null, after: -1, cursor: null });
    }
    const query = segment.cursor ? `?after=${encodeURIComponent(segment.cursor)}` : '';
    const before = segment.after;
    try {
      const response = await request(path + query, {
        headers: { Accept: 'text/event-stream' },
        signal,
      });
      if (response.status === 204) return; // the cursor holds the end, or nothing is kept
      if (response.status === 410) throw new SegmentGone('The stream is no longer kept.');
      if (!response.ok) throw new RequestError(await errorMessage(response));
      if (!response.body) throw new Error('The server sent no stream.');
      const streamId = response.headers.get(STREAM_ID_HEADER);
      if (segment.streamId && streamId && streamId !== segment.streamId) {
        // The thread has a newer segment: the one read here is over.
        response.body.cancel().catch(() => {});
        return;
      }
      segment.streamId = streamId;
      await readEventStream(response.body, segment.frame);
    } catch (error) {
      if (signal.aborted || error instanceof RequestError || error instanceof SegmentGone) {
        throw error;
      }
      // a network failure: tried again below, like a drop
    }
    failures = segment.after > before ? 0 : failures + 1;
    if (failures >= RESUME_ATTEMPTS) throw new Error('The stream could not be resumed.');
    if (failures > 0) await pause(RESUME_PAUSE_MS * failures, signal);
  }
}

/** Resolve after `ms`, or at once when `signal` aborts. */
function pause(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

/**
 * A push transport: `listen` subscribes to the thread's channel and resolves once it
 * is ready; only then is the request sent.
 * @param {string} delivery
 * @param {(threadId: string, signal: AbortSignal) => Promise<Listener>} listen
 * @returns {Transport}
 */
function pushTransport(delivery, listen) {
  return async ({ path, body, onEvent, signal }) => {
    const listener = await listen(chat.threadId, signal);
    const reader = listener.stream.getReader();
    try {
      const response = await postJSON(withDelivery(path, delivery), body, 'application/json', signal);
      if (response.status !== 202) throw new RequestError(await errorMessage(response));
      await readSegment(reader, onEvent, signal);
    } finally {
      // Once the segment has ended this does nothing; otherwise (a refused request, an
      // abandoned conversation) it drops the page's listener from the subscription.
      reader.cancel().catch(() => {});
      listener.close();
    }
  };
}

/**
 * Hand each protocol object of one pushed segment to onEvent until the segment ends.
 * Abandoning the conversation cancels the read.
 * @param {ReadableStreamDefaultReader<NativeEvent>} reader
 * @param {(event: NativeEvent) => void} onEvent
 * @param {AbortSignal} signal
 */
async function readSegment(reader, onEvent, signal) {
  const cancel = () => reader.cancel().catch(() => {});
  signal.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onEvent(value);
    }
  } catch (error) {
    if (error instanceof Error && error.message === BACKEND_FAILED) return;
    throw error;
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}

/**
 * Mercure: an EventSource on the hub with the subscriber token of GET /mercure/token
 * (as a query parameter: EventSource cannot send headers). A hub may register a
 * subscriber without telling the browser when (some send no headers before the first
 * update), so the page does not wait for `open`: it asks the hub to replay what the
 * topic got after the last update this page saw (`lastEventID`, or `earliest` for a
 * topic it never read), and the consumer drops anything delivered twice.
 * @param {string} threadId
 * @param {AbortSignal} signal
 * @returns {Promise<Listener>}
 */
async function listenMercure(threadId, signal) {
  const grant = await getJSON(`/mercure/token?threadId=${encodeURIComponent(threadId)}`, signal);
  if (!grant) throw new RequestError('This conversation cannot be followed through Mercure.');
  const url = new URL(grant.hubUrl, window.location.href);
  url.searchParams.append('topic', grant.topic);
  url.searchParams.set('authorization', grant.token);
  url.searchParams.set('lastEventID', mercureCursor(threadId) ?? 'earliest');
  const source = new EventSource(url);
  source.addEventListener('message', (message) => {
    if (message.lastEventId) saveMercureCursor(threadId, message.lastEventId);
  });
  const stream = createProtocolStream((callbacks) => {
    const subscription = subscribeToMercure(source, callbacks);
    // A refused or lost subscription that EventSource gives up on would never end.
    const closed = () => {
      if (source.readyState !== EventSource.CLOSED) return; // reconnecting by itself
      subscription.close();
      callbacks.onGap('The Mercure hub closed the subscription.');
    };
    source.addEventListener('error', closed);
    return {
      close() {
        source.removeEventListener('error', closed);
        subscription.close();
      },
    };
  });
  return { stream, close: () => source.close() };
}

/** @returns {string | undefined} the id of the last update seen on the thread's topic */
function mercureCursor(threadId) {
  try {
    const cursor = JSON.parse(localStorage.getItem(MERCURE_CURSOR_KEY) || 'null');
    return cursor && cursor.threadId === threadId ? cursor.eventId : undefined;
  } catch {
    return undefined; // not ours, or not JSON: read the topic from its start
  }
}

function saveMercureCursor(threadId, eventId) {
  localStorage.setItem(MERCURE_CURSOR_KEY, JSON.stringify({ threadId, eventId }));
}

/**
 * Pusher: one pusher-js connection for the page and one subscription per conversation,
 * authorized by POST /pusher/auth (pusher-js decrypts private-encrypted channels
 * itself). Ready once pusher-js reports `pusher:subscription_succeeded`.
 */
const pusher = {
  /** @type {any} the `Pusher` class of the vendored pusher-js */
  Pusher: null,
  /** @type {any} the server's settings from GET /demo/config */
  config: null,
  /** @type {any} the pusher-js client, connected on first use */
  client: null,
};

/**
 * @param {string} threadId
 * @param {AbortSignal} signal
 * @returns {Promise<Listener>}
 */
async function listenPusher(threadId, signal) {
  const { config } = pusher;
  pusher.client ??= new pusher.Pusher(config.key, {
    wsHost: config.wsHost,
    wsPort: config.wsPort,
    wssPort: config.wssPort,
    forceTLS: config.forceTLS,
    enabledTransports: ['ws', 'wss'],
    disableStats: true,
    cluster: 'mt1', // required by pusher-js; wsHost decides where it connects
    channelAuthorization: { endpoint: route('/pusher/auth'), transport: 'ajax', headers: authHeaders() },
  });
  const prefix = config.encrypted ? 'private-encrypted-' : 'private-';
  const name = `${prefix}thread-${threadId}`;
  const channel = pusher.client.channel(name) || pusher.client.subscribe(name);
  if (!channel.subscribed) await subscribed(channel, signal);
  // Events Pusher lost (or sent before this page subscribed) come from the segment's log.
  const recovery = envelopesRecovery(route(`/api/threads/${encodeURIComponent(threadId)}`), {
    headers: authHeaders(),
  });
  const stream = createProtocolStream((callbacks) => subscribeToPusher(channel, callbacks, undefined, { recovery }));
  // The subscription stays for the conversation's next segment; newConversation ends it.
  return { stream, close() {} };
}

/** Resolve when pusher-js has subscribed `channel`; reject if it could not. */
function subscribed(channel, signal) {
  return new Promise((resolve, reject) => {
    const done = (settle) => (value) => {
      channel.unbind('pusher:subscription_succeeded', succeeded);
      channel.unbind('pusher:subscription_error', failed);
      signal.removeEventListener('abort', aborted);
      settle(value);
    };
    const succeeded = done(resolve);
    const failed = done((status) => {
      pusher.client.unsubscribe(channel.name); // the next request tries afresh
      reject(new RequestError(`Pusher refused the subscription (${show(status)}).`));
    });
    const aborted = done(() => reject(signal.reason));
    channel.bind('pusher:subscription_succeeded', succeeded);
    channel.bind('pusher:subscription_error', failed);
    signal.addEventListener('abort', aborted, { once: true });
  });
}

/** The thread's push subscriptions are no longer wanted (a new conversation). */
function leavePushChannels() {
  if (!pusher.client) return;
  for (const channel of pusher.client.allChannels()) pusher.client.unsubscribe(channel.name);
}

/** Load the vendored pusher-js; resolves with its `Pusher` class. */
function loadPusherLibrary() {
  return new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = PUSHER_SCRIPT;
    script.addEventListener('load', () => {
      if (typeof window.Pusher === 'function') resolve(window.Pusher);
      else reject(new Error('pusher-js did not define Pusher.'));
    });
    script.addEventListener('error', () => reject(new Error('pusher-js could not be loaded.')));
    document.head.append(script);
  });
}

/**
 * Transports by the value of the delivery radios; discoverDeliveries() adds the push
 * ones this server offers.
 * @type {Record<string, Transport>}
 */
const TRANSPORTS = { relay: relayTransport };

/** Names people read, for the note under the delivery choice. */
const DELIVERY_NAMES = { relay: 'Relay (SSE)', pusher: 'Pusher', mercure: 'Mercure' };

/**
 * Ask the server which push deliveries it offers (GET /demo/config) and enable those
 * choices. A server without that endpoint, or one that offers nothing, leaves relay.
 * @returns {Promise<any>} the configuration, or null without one
 */
async function discoverDeliveries() {
  let offered = null;
  try {
    offered = await getJSON('/demo/config');
  } catch {
    // unreachable or refused: relay still works
  }
  if (offered && offered.mercure) TRANSPORTS.mercure = pushTransport('mercure', listenMercure);
  if (offered && offered.pusher) {
    try {
      pusher.Pusher = await loadPusherLibrary();
      pusher.config = offered.pusher;
      TRANSPORTS.pusher = pushTransport('pusher', listenPusher);
    } catch (error) {
      console.warn('Pusher delivery is offered but pusher-js could not start:', error);
    }
  }
  for (const radio of document.querySelectorAll('input[name="delivery"]')) {
    radio.disabled = !(radio.value in TRANSPORTS);
  }
  const preferred = offered && offered.delivery;
  if (preferred && preferred in TRANSPORTS) {
    /** @type {HTMLInputElement} */ ($(`input[name="delivery"][value="${preferred}"]`)).checked = true;
  }
  const names = Object.keys(DELIVERY_NAMES)
    .filter((key) => key in TRANSPORTS)
    .map((key) => DELIVERY_NAMES[key]);
  $('#delivery-note').textContent = names.length > 1
    ? `This server offers ${names.join(', ')}.`
    : 'This server offers relay delivery only.';
  return offered;
}

/**
 * Whether `saved` is a thread id by the server's rule (`threadIdPattern` of
 * GET /demo/config, from shared/ids.py). An older server names no rule: the id was
 * minted by this page, and the server checks it again anyway.
 * @param {any} config
 * @param {string} saved
 */
function isThreadId(config, saved) {
  const pattern = config && config.threadIdPattern;
  return typeof pattern !== 'string' || new RegExp(`^(?:${pattern})$`).test(saved);
}

/**
 * Parse a text/event-stream body: frames end with a blank line, payload lines start
 * with "data:", an "id:" line carries the frame's log sequence, and lines starting
 * with ":" are the server's heartbeats. Frames are cut on blank lines *before*
 * decoding JSON, because one network chunk may hold half a frame or several frames.
 * @param {ReadableStream<Uint8Array>} body
 * @param {(event: NativeEvent, id?: string) => void} onEvent
 */
async function readEventStream(body, onEvent) {
  // The native stream declares no charset; it is UTF-8 JSON, so decode it as such.
  const reader = body.pipeThrough(new TextDecoderStream('utf-8')).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return; // a trailing frame without its blank line is incomplete: dropped
    buffer += value;
    let boundary;
    while ((boundary = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const lines = buffer.slice(0, boundary).split(/\r?\n/);
      buffer = buffer.slice(boundary).replace(/^\r?\n\r?\n/, '');
      const field = (name) => lines
        .filter((line) => line.startsWith(`${name}:`))
        .map((line) => line.slice(name.length + 1).replace(/^ /, ''));
      const data = field('data').join('\n');
      const [id] = field('id');
      if (data) onEvent(JSON.parse(data), id);
    }
  }
}

/** The server's error text for a refused request, whatever shape it came in. */
async function errorMessage(response) {
  const text = await response.text();
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed.error === 'string') return parsed.error;
  } catch {
    // not JSON: fall through to the status line
  }
  return `The server answered ${response.status} ${response.statusText}.`;
}

/** The server's words for a refused request; `fallback` for a network failure. */
function explain(error, fallback) {
  return error instanceof RequestError ? error.message : fallback;
}

/** GET JSON; null for 404 (a thread the server does not know yet). */
async function getJSON(path, signal) {
  const response = await request(path, { headers: { Accept: 'application/json' }, signal });
  if (response.status === 404) return null;
  if (!response.ok) throw new RequestError(await errorMessage(response));
  return response.json();
}

// ---------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------

const $ = (/** @type {string} */ selector) => document.querySelector(selector);
const log = $('#log');
const statusLine = $('#status');

/** Create an element with a class and optional text (always textContent). */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Tool inputs and results as one line of text: strings as they are, the rest as JSON. */
function show(value) {
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

function scrollToEnd() {
  log.scrollTop = log.scrollHeight;
}

/**
 * What is drawn for the current conversation. `turn` is the assistant bubble that live
 * events go to: a continuation (tool results, approvals) keeps writing into the bubble
 * of the turn it continues, as the run is still the same turn.
 */
const view = {
  /** @type {HTMLElement | null} */ turn: null,
  /** the block the next text/reasoning delta may extend: {kind, messageId, node} */
  last: null,
  /** @type {Map<string, ToolCard>} tool cards by call id, so later events update them */
  tools: new Map(),
  /** the run's model step (1, 2, ...) that new blocks and cards belong to; 0: none */
  step: 0,
};

function resetView() {
  log.replaceChildren();
  view.turn = null;
  view.last = null;
  view.tools.clear();
  view.step = 0;
}

/** Tag a block or card with the model step it draws (see clearSteps). */
function tagStep(node) {
  if (view.step > 0) node.dataset.step = String(view.step);
}

/**
 * A stream (re)starts model step `step` of the turn: whatever is drawn of that step or
 * a later one (from history after a reload, or by a stream this one replays from its
 * start) is about to be drawn again by the stream, so it goes first. This is what
 * keeps a resumed answer from showing any text twice.
 */
function clearSteps(step) {
  view.step = step;
  view.last = null;
  if (!view.turn) return;
  for (const node of view.turn.querySelectorAll(':scope > [data-step]')) {
    if (Number(/** @type {HTMLElement} */ (node).dataset.step) >= step) node.remove();
  }
  for (const [callId, card] of view.tools) {
    if (!card.node.isConnected) view.tools.delete(callId);
  }
}

function addBubble(role) {
  const bubble = el('article', `msg ${role}`);
  bubble.append(el('h2', 'who', role === 'user' ? 'You' : 'Assistant'));
  log.append(bubble);
  return bubble;
}

function addUserMessage(text) {
  addBubble('user').append(el('p', 'text', text));
  view.turn = null; // the reply opens a new assistant bubble
  view.last = null;
  view.step = 0;
  scrollToEnd();
}

function currentTurn() {
  if (!view.turn) view.turn = addBubble('assistant');
  return view.turn;
}

/**
 * Append a streamed delta. Consecutive deltas of one message and kind extend one
 * block; anything else in between (a tool card, another message) starts a new block,
 * so the page shows things in the order the model produced them.
 */
function appendDelta(kind, messageId, content) {
  const last = view.last;
  if (last && last.kind === kind && last.messageId === messageId) {
    last.node.textContent += content;
  } else {
    const node = addBlock(kind, content);
    view.last = { kind, messageId, node };
  }
  scrollToEnd();
}

/** A text or reasoning block; returns the node whose text grows with later deltas. */
function addBlock(kind, content) {
  const turn = currentTurn();
  if (kind === 'text') {
    const node = el('p', 'text', content);
    tagStep(node);
    turn.append(node);
    return node;
  }
  // Reasoning is secondary: collapsed by default, one click (or Enter) to read it.
  const details = el('details', 'reasoning');
  details.append(el('summary', '', 'Reasoning'));
  const body = el('p', 'reasoning-text', content);
  details.append(body);
  tagStep(details);
  turn.append(details);
  return body;
}

function addError(message) {
  const node = el('p', 'error', message);
  node.setAttribute('role', 'alert');
  currentTurn().append(node);
  view.last = null;
  scrollToEnd();
}

/**
 * What a person reads about a decided or unfinished call: the server's words
 * (`outcomeTexts` of GET /demo/config, from shared/texts.py), never the text the model
 * reads for it ("TOOL NOT EXECUTED: ..."). An older server sends none: the short words.
 * @type {{approved: string, rejected: string, rejectedBecause: string, stopped: string,
 *         interrupted: string}}
 */
const OUTCOMES = {
  approved: 'approved',
  rejected: 'rejected',
  rejectedBecause: 'rejected:',
  stopped: 'stopped',
  interrupted: 'interrupted',
};

/** What a person reads for a rejection, with the reason they gave. */
function rejectedText(reason) {
  return reason ? `${OUTCOMES.rejectedBecause} ${reason}` : OUTCOMES.rejected;
}

/**
 * One tool call: its name, status (running / ok / error …), inputs and result. A call
 * a person decided on, or one that never finished, is `decided`: one line, its name and
 * its outcome (and the result, when it ran).
 */
class ToolCard {
  constructor(callId, name) {
    this.node = el('div', 'tool');
    this.node.dataset.callId = callId;
    this.node.dataset.tool = name;
    const head = el('div', 'tool-head');
    head.append(el('span', 'tool-label', 'Tool '), el('strong', 'tool-name', name), ' ');
    /** the person's decision, or why the call never finished (see decide) */
    this.decision = el('span', 'tool-decision');
    this.status = el('span', 'tool-status');
    head.append(this.decision, this.status);
    this.inputs = el('code', 'tool-inputs');
    this.result = el('div', 'tool-result');
    this.result.hidden = true;
    this.arguments = '';
    /** the call has its outcome: a result, an error, or it will never run */
    this.settled = false;
    this.node.append(head, this.inputs, this.result);
    tagStep(this.node);
    currentTurn().append(this.node);
    view.last = null;
  }

  /**
   * @param {string} status a short machine word (styling, tests)
   * @param {string} label what people read
   */
  setStatus(status, label = status) {
    this.status.dataset.status = status;
    this.status.textContent = label;
  }

  setInputs(inputs) {
    this.inputs.textContent = show(inputs);
  }

  /** The model streams arguments as raw JSON fragments: show them as they come. */
  addArgumentDelta(delta) {
    this.arguments += delta;
    this.inputs.textContent = this.arguments;
  }

  setResult(text) {
    this.result.hidden = false;
    this.result.textContent = text;
    this.settled = true;
  }

  /**
   * Collapse the card to one line with its outcome: `approved` (it runs next; its
   * status and result follow on the same line), or `rejected`, `stopped`,
   * `interrupted` (it never ran to its end: nothing more comes).
   * @param {'approved' | 'rejected' | 'stopped' | 'interrupted'} outcome
   * @param {string} text what people read
   */
  decide(outcome, text) {
    this.node.classList.add('decided');
    this.decision.dataset.outcome = outcome;
    this.decision.textContent = text;
    if (outcome !== 'approved') {
      this.status.textContent = '';
      delete this.status.dataset.status;
      this.result.hidden = true;
      this.settled = true;
    }
  }
}

/**
 * The run ended (`outcome`: stopped by the person, or interrupted by a failure) with
 * calls of this turn still open: they never finish, and say so.
 * @param {'stopped' | 'interrupted'} outcome
 */
function endOpenCalls(outcome) {
  for (const card of view.tools.values()) {
    if (!card.settled && card.node.isConnected) card.decide(outcome, OUTCOMES[outcome]);
  }
}

function toolCard(callId, name) {
  let card = view.tools.get(callId);
  if (!card) {
    card = new ToolCard(callId, name);
    view.tools.set(callId, card);
  }
  return card;
}

/** Draw one live native event. Interrupts are acted on by the conversation loop. */
function renderEvent(event) {
  switch (event.type) {
    case 'text':
    case 'reasoning':
      appendDelta(event.type, event.messageId, event.content);
      break;
    case 'tool-argument': {
      const card = toolCard(event.toolCallId, event.toolName);
      if (!card.status.textContent) card.setStatus('preparing', 'preparing…');
      card.addArgumentDelta(event.delta);
      break;
    }
    case 'tool-call': {
      const { tool } = event;
      const card = toolCard(tool.callId, tool.name);
      card.setInputs(tool.inputs);
      if (tool.approval === 'pending') card.setStatus('approval', 'awaiting approval');
      else if (tool.deferred) card.setStatus('page', 'waiting for the page');
      else card.setStatus('queued');
      break;
    }
    case 'activity':
      // Backend tools report running, then ok or error with how long they took.
      if (event.activityType === 'tool') {
        const { callId, toolName, status, durationMs } = event.data;
        const label = status === 'running' ? 'running…' : `${status} · ${durationMs} ms`;
        toolCard(callId, toolName).setStatus(status, label);
      }
      break;
    case 'tool-result':
      renderSettledCall(event.tool);
      break;
    case 'error':
      endOpenCalls('interrupted');
      addError(event.message);
      break;
    case 'cancelled':
      endOpenCalls('stopped');
      markStopped(currentTurn());
      break;
    case 'step-started':
      if (event.name === 'model' && Number.isInteger(event.metadata?.step)) {
        clearSteps(event.metadata.step);
      }
      break;
    default:
      // step-finished / custom / interrupt / queued / finish / done: nothing to draw.
      break;
  }
  scrollToEnd();
}

/** A settled call (native ToolCall JSON): rejected, failed, or its result. */
function renderSettledCall(tool) {
  const card = toolCard(tool.callId, tool.name);
  card.setInputs(tool.inputs);
  if (tool.approval === 'rejected') {
    card.decide('rejected', rejectedText(tool.rejectReason));
    return;
  }
  if (tool.approval === 'approved') card.decide('approved', OUTCOMES.approved);
  const failed = tool.result !== null && typeof tool.result === 'object' && 'error' in tool.result;
  if (failed) {
    // A backend failure already shows "error · N ms" from its activity; keep that label.
    if (card.status.dataset.status !== 'error') card.setStatus('error');
    card.setResult(show(tool.result.error));
    return;
  }
  // Backend tools already show "ok · N ms" from their activity; keep that label.
  if (card.status.dataset.status !== 'ok') card.setStatus('ok', 'done');
  card.setResult(show(tool.result));
}

/** Draw one stored UIMessage (GET /api/chat/<id>) after a reload. */
function renderStoredMessage(message) {
  if (message.role === 'user') {
    const text = message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    addUserMessage(text);
    return;
  }
  if (message.role !== 'assistant') return;
  view.turn = addBubble('assistant');
  view.step = 1; // one UIMessage is one turn: its steps are the run's model calls
  for (const part of message.parts) {
    if (part.type === 'step-start') {
      view.step += 1;
    } else if (part.type === 'text' || part.type === 'reasoning') {
      addBlock(part.type, part.text);
      view.last = null;
    } else if (part.type.startsWith('tool-')) {
      renderStoredToolPart(part, message.metadata?.unfinishedCalls?.[part.toolCallId]);
    }
  }
  if (message.metadata && message.metadata.stopped) markStopped(view.turn);
}

/**
 * Vercel tool part states mapped onto the same card a live stream draws. `unfinished`
 * (the message's `metadata.unfinishedCalls`): the call was stopped by the person or cut
 * short by the run's end; its error text is the model's, so the card says it instead.
 * @param {any} part
 * @param {'stopped' | 'interrupted' | undefined} unfinished
 */
function renderStoredToolPart(part, unfinished) {
  const card = toolCard(part.toolCallId, part.type.slice('tool-'.length));
  card.setInputs(part.input);
  const approval = part.approval || {};
  if (unfinished === 'stopped' || unfinished === 'interrupted') {
    card.decide(unfinished, OUTCOMES[unfinished]);
    return;
  }
  if (approval.approved === true) card.decide('approved', OUTCOMES.approved);
  switch (part.state) {
    case 'input-streaming':
      card.setStatus('preparing', 'preparing…');
      break;
    case 'input-available':
      card.setStatus('page', 'waiting for the page');
      break;
    case 'approval-requested':
      card.setStatus('approval', 'awaiting approval');
      break;
    case 'approval-responded':
      if (!approval.approved) card.decide('rejected', rejectedText(approval.reason));
      break;
    case 'output-available':
      card.setStatus('ok', 'done');
      card.setResult(show(part.output));
      break;
    case 'output-error':
      card.setStatus('error');
      card.setResult(part.errorText);
      break;
    case 'output-denied':
      card.decide('rejected', rejectedText(approval.reason));
      break;
    default:
      card.setStatus(part.state);
  }
}

// ---------------------------------------------------------------------------------
// The conversation
// ---------------------------------------------------------------------------------

const composer = $('#composer');
const prompt = $('#prompt');
const sendButton = $('#send');
const stopButton = $('#stop');
const suggestionList = $('#suggestions');

const chat = {
  threadId: '',
  busy: false,
  /** true while an approval card waits: a new turn would be refused (409) until then */
  awaitingApproval: false,
  /** aborted by "New conversation" so a stream of the old thread stops drawing */
  controller: new AbortController(),
  /** the server knows this thread (it was sent to, or found on reload): watch it */
  known: false,
  /** "<runId>:<status>" of the run as this page last drew it; another is news */
  seen: '',
};

function api(action) {
  return `/api/threads/${encodeURIComponent(chat.threadId)}/${action}`;
}

function setBusy(busy) {
  chat.busy = busy;
  const blocked = busy || chat.awaitingApproval;
  prompt.disabled = blocked;
  sendButton.disabled = blocked;
  // Stop ends a running answer, or an approval nobody wants to give any more.
  stopButton.hidden = !blocked;
  stopButton.disabled = !blocked;
  for (const chip of suggestionList.querySelectorAll('button')) chip.disabled = blocked;
  if (busy) statusLine.textContent = 'Working…';
  else if (chat.awaitingApproval) statusLine.textContent = 'Waiting for your decision.';
  else statusLine.textContent = '';
  if (!blocked) prompt.focus();
}

/**
 * Ask the server to stop this conversation's run. A running answer ends on its own
 * stream (a `cancelled` event); an open approval is settled by the server at once, so
 * its card is closed here.
 */
async function stopRun() {
  stopButton.disabled = true;
  statusLine.textContent = 'Stopping…';
  try {
    const response = await request(api('cancel'), { method: 'POST' });
    if (!response.ok) throw new RequestError(await errorMessage(response));
    const outcome = await response.json();
    if (!chat.busy && chat.awaitingApproval) {
      noteRun(outcome);
      chat.awaitingApproval = false;
      // The server settled every open call as stopped: drawn as a reload draws it.
      for (const card of log.querySelectorAll('.approval')) card.remove();
      if (outcome.stopped) {
        endOpenCalls('stopped');
        markStopped(currentTurn());
      }
      setBusy(false);
      loadThreads();
    }
  } catch (error) {
    addError(explain(error, 'Could not stop the run.'));
    stopButton.disabled = false;
  }
}

/** Mark an answer as stopped by the person (live, or from history after a reload). */
function markStopped(bubble) {
  bubble.classList.add('stopped');
  if (!bubble.querySelector('.stopped-note')) bubble.append(el('p', 'stopped-note', 'Stopped'));
  view.last = null;
}

function selectedTransport() {
  const choice = /** @type {HTMLInputElement} */ ($('input[name="delivery"]:checked'));
  const transport = TRANSPORTS[choice.value];
  if (!transport) throw new RequestError(`This server does not offer ${DELIVERY_NAMES[choice.value]} delivery.`);
  return transport;
}

/**
 * Send one request and stream its segment; then, as long as the run stops for
 * something the page can answer by itself (frontend tools), answer and stream the
 * continuation. An approval stops the loop: the person answers through the card.
 */
async function converse(path, body) {
  const { signal } = chat.controller;
  setBusy(true);
  try {
    let next = { path, body };
    while (next) {
      let interrupt = null;
      let ended = false;
      await selectedTransport()({
        path: next.path,
        body: next.body,
        signal,
        onEvent(event) {
          if (event.type === 'interrupt') interrupt = event.request;
          if (event.type === 'done') ended = true;
          renderEvent(event);
        },
      });
      // Every segment of a run ends with `done`; a stream that closed without it was
      // cut off (the run may go on), so it is not taken for the end of the reply.
      if (!ended && !signal.aborted) throw new Error('The stream ended before the run did.');
      // Act on the interrupt only once the segment has ended: the run is suspended
      // (and its interrupt persisted) by then, so the continuation cannot race it.
      next = interrupt ? settle(interrupt) : null;
    }
  } catch (error) {
    const lost = 'The connection was lost; reload the page to see the rest.';
    if (!signal.aborted) addError(explain(error, lost));
  } finally {
    await noteThread(chat.threadId, signal); // what this page drew: not news to its watcher
    if (!signal.aborted) setBusy(false);
    loadThreads();
  }
}

/**
 * What to send for a suspended run: frontend tool results right away, or nothing
 * (after showing the approval card) when a person has to decide.
 * @returns {{path: string, body: unknown} | null}
 */
function settle(interrupt) {
  if (interrupt.eventName === 'tool_results') {
    return { path: api('tool-results'), body: runFrontendTools(interrupt.toolCalls) };
  }
  if (interrupt.eventName === 'approval') {
    showApproval(interrupt);
    return null;
  }
  addError(`The run waits for "${interrupt.eventName}", which this page cannot answer.`);
  return null;
}

/** Run each frontend call in the page; a failure is reported to the agent, not thrown. */
function runFrontendTools(toolCalls) {
  const results = {};
  for (const call of toolCalls) {
    const card = toolCard(call.callId, call.name);
    const run = FRONTEND_TOOLS[call.name];
    try {
      if (!run) throw new Error(`This page has no tool named "${call.name}".`);
      results[call.callId] = { result: run(call.inputs || {}) };
      card.setStatus('ok', 'answered by the page');
      card.setResult(show(results[call.callId].result));
    } catch (error) {
      results[call.callId] = { error: String(error && error.message ? error.message : error) };
      card.setStatus('error', 'failed in the page');
      card.setResult(results[call.callId].error);
    }
  }
  return results;
}

/**
 * The approval card: one row per action with Approve, and Reject with an optional
 * reason. Decisions are sent together once every action has one, because the run
 * continues only when its whole batch is decided.
 */
function showApproval(interrupt) {
  const card = /** @type {HTMLElement} */ (
    $('#approval-template').content.firstElementChild.cloneNode(true)
  );
  card.querySelector('.approval-message').textContent = interrupt.message;
  const list = card.querySelector('.approval-actions');
  const decisions = {};
  const undecided = new Set(interrupt.actions.map((action) => action.id));

  for (const action of interrupt.actions) {
    const row = /** @type {HTMLElement} */ (
      $('#action-template').content.firstElementChild.cloneNode(true)
    );
    row.dataset.callId = action.id;
    row.querySelector('.action-name').textContent = action.name;
    row.querySelector('.action-inputs').textContent = show(action.inputs);
    const reason = row.querySelector('.reason');
    const buttons = row.querySelectorAll('button');

    // Once every action has its decision the card goes: each call's own card says,
    // in one line, what was decided (as after a reload).
    const outcomes = {};
    const decide = (decision, outcome, label) => {
      buttons.forEach((button) => { button.disabled = true; });
      reason.disabled = true;
      row.append(el('p', 'decision', label));
      decisions[action.id] = decision;
      outcomes[action.id] = { outcome, label, name: action.name, inputs: action.inputs };
      undecided.delete(action.id);
      if (undecided.size === 0) {
        chat.awaitingApproval = false;
        card.remove();
        for (const [callId, decided] of Object.entries(outcomes)) {
          const tool = toolCard(callId, decided.name);
          tool.setInputs(decided.inputs);
          tool.decide(decided.outcome, decided.label);
        }
        converse(api('approvals'), decisions);
      }
    };
    row.querySelector('.approve').addEventListener('click', () => {
      decide('approve', 'approved', OUTCOMES.approved);
    });
    row.querySelector('.reject').addEventListener('click', () => {
      const why = reason.value.trim();
      decide(why ? ['reject', why] : 'reject', 'rejected', rejectedText(why));
    });
    list.append(row);
  }

  chat.awaitingApproval = true;
  currentTurn().append(card);
  view.last = null;
  scrollToEnd();
  setBusy(chat.busy);
  card.querySelector('.approve').focus(); // keyboard users land on the decision
}

async function sendMessage(content) {
  // Persist the id only once the thread exists on the server, so a reload never asks
  // for a conversation that was never started.
  localStorage.setItem(THREAD_KEY, chat.threadId);
  chat.known = true;
  addUserMessage(content);
  await converse(api('messages'), { content });
}

/**
 * Redraw a stored conversation (after a reload, or when another tab moved it on), then
 * pick up where its run is: a running answer is followed live from its segment's
 * start (GET /api/threads/<id>/stream), replacing what history shows of it; an
 * approval card comes back, a pending frontend call is answered (unless `watching`:
 * the tab that started the run answers its own calls).
 * @param {string} threadId
 * @param {{watching?: boolean}} [options]
 */
async function restore(threadId, { watching = false } = {}) {
  const { signal } = chat.controller;
  let next = null;
  setBusy(true);
  try {
    let run = await redraw(threadId, signal);
    if (run && (run.status === 'running' || run.status === 'recovering')) {
      run = await follow(threadId, signal);
    }
    // Still running (its segment not started yet, or a newer one took over): the
    // watcher looks again at its next tick.
    const running = run && (run.status === 'running' || run.status === 'recovering');
    noteRun(running ? null : run);
    if (run && run.status === 'suspended' && run.interrupt) {
      if (!watching || run.interrupt.eventName !== 'tool_results') next = settle(run.interrupt);
    }
  } catch (error) {
    if (!signal.aborted) addError(explain(error, 'Could not load the conversation.'));
  } finally {
    if (!signal.aborted) setBusy(false);
  }
  if (next && !signal.aborted) await converse(next.path, next.body);
}

/**
 * Follow the thread's running segment from its start to its end, drawing it over what
 * history shows of it; returns the run as it is afterwards. A stream the server no
 * longer keeps (410) is replaced by history again.
 */
async function follow(threadId, signal) {
  statusLine.textContent = 'The reply is still being written…';
  let interrupt = null;
  const segment = new Segment((event) => {
    if (event.type === 'interrupt') interrupt = event.request;
    renderEvent(event);
  });
  try {
    await followSegment(threadId, segment, signal);
  } catch (error) {
    if (!(error instanceof SegmentGone)) throw error;
    resetView();
    return redraw(threadId, signal);
  }
  const thread = await getJSON(`/api/threads/${encodeURIComponent(threadId)}`, signal);
  const run = thread && thread.run;
  // The stream's interrupt is the one the run waits for (history has it too).
  if (run && interrupt && !run.interrupt) run.interrupt = interrupt;
  return run;
}

/** Draw the stored messages of a thread; returns its run (or null). */
async function redraw(threadId, signal) {
  const id = encodeURIComponent(threadId);
  const stored = await getJSON(`/api/chat/${id}`, signal);
  if (!stored) return null; // unknown to the server (e.g. a wiped database): start empty
  chat.known = true;
  for (const message of stored.messages) renderStoredMessage(message);
  scrollToEnd(); // the newest turn in view, as it was before the reload
  const thread = await getJSON(`/api/threads/${id}`, signal);
  return thread && thread.run;
}

/** Remember the run as this page drew it ({runId, status}, or null). */
function noteRun(run) {
  chat.seen = run ? `${run.runId}:${run.status}` : '';
}

/** Remember the thread's run as it is now (after this page's own turn). */
async function noteThread(threadId, signal) {
  if (signal.aborted) return;
  try {
    const thread = await getJSON(`/api/threads/${encodeURIComponent(threadId)}`, signal);
    if (thread && threadId === chat.threadId) noteRun(thread.run);
  } catch {
    // the watcher will look again
  }
}

/**
 * While the page is idle, look at its conversation every WATCH_MS: when its run is not
 * the one drawn any more (another tab sent a message, or decided an approval), redraw
 * it and follow the running answer live. Runs for the page's lifetime.
 */
async function watch() {
  for (;;) {
    await pause(WATCH_MS);
    const { threadId } = chat;
    if (chat.busy || !chat.known) continue;
    let thread;
    try {
      thread = await getJSON(`/api/threads/${encodeURIComponent(threadId)}`, chat.controller.signal);
    } catch {
      continue; // tried again at the next tick
    }
    if (chat.busy || threadId !== chat.threadId) continue; // the page moved on meanwhile
    if (!thread) {
      chat.known = false; // deleted elsewhere
      continue;
    }
    const run = thread.run;
    if ((run ? `${run.runId}:${run.status}` : '') === chat.seen) continue;
    chat.awaitingApproval = false; // the redraw brings back a card still open
    resetView();
    await restore(threadId, { watching: true });
    loadThreads();
  }
}

/** Thread ids from the browser's CSPRNG; works on plain http too (randomUUID does not). */
function newThreadId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `demo-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

function useThread(threadId) {
  chat.threadId = threadId;
  $('#thread-id').textContent = threadId;
}

/** Leave the conversation on screen (its streams stop drawing; its run goes on). */
function leaveConversation() {
  chat.controller.abort(); // an open stream of the old thread stops drawing
  chat.controller = new AbortController();
  chat.awaitingApproval = false;
  chat.known = false;
  chat.seen = '';
  localStorage.removeItem(MERCURE_CURSOR_KEY);
  leavePushChannels();
  resetView();
}

function newConversation() {
  leaveConversation();
  localStorage.removeItem(THREAD_KEY);
  useThread(newThreadId());
  setBusy(false);
  loadThreads();
}

/** Switch to an earlier conversation from the list, as a reload would show it. */
function openConversation(threadId) {
  leaveConversation();
  localStorage.setItem(THREAD_KEY, threadId);
  useThread(threadId);
  restore(threadId).then(loadThreads);
}

/**
 * Ask before erasing a conversation (a modal <dialog>; Escape or Cancel keep it).
 * @param {string} title what the list shows for it
 * @returns {Promise<boolean>} whether the person confirmed
 */
function confirmDelete(title) {
  const dialog = /** @type {HTMLDialogElement} */ ($('#confirm-delete'));
  $('#confirm-delete-name').textContent = title;
  return new Promise((resolve) => {
    const answer = (confirmed) => () => {
      dialog.removeEventListener('close', closed);
      confirm.removeEventListener('click', yes);
      cancel.removeEventListener('click', no);
      if (dialog.open) dialog.close();
      resolve(confirmed);
    };
    const confirm = $('#confirm-delete-ok');
    const cancel = $('#confirm-delete-cancel');
    const yes = answer(true);
    const no = answer(false);
    const closed = answer(false); // Escape
    dialog.addEventListener('close', closed);
    confirm.addEventListener('click', yes);
    cancel.addEventListener('click', no);
    dialog.showModal();
    cancel.focus(); // the safe choice is the default one
  });
}

async function deleteConversation(threadId, title) {
  if (!(await confirmDelete(title))) return;
  try {
    const path = `/api/threads/${encodeURIComponent(threadId)}`;
    const response = await request(path, { method: 'DELETE' });
    if (!response.ok && response.status !== 404) {
      throw new RequestError(await errorMessage(response));
    }
  } catch (error) {
    addError(explain(error, 'Could not delete the conversation.'));
    return;
  }
  if (threadId === chat.threadId) newConversation();
  else loadThreads();
}

/** Redraw the list of this person's conversations (GET /api/threads). */
async function loadThreads() {
  let listed;
  try {
    listed = await getJSON('/api/threads?limit=20');
  } catch {
    return; // the list is a convenience: the conversation itself goes on
  }
  const list = $('#threads');
  const items = (listed ? listed.threads : []).map((thread) => {
    const item = /** @type {HTMLElement} */ (
      $('#thread-template').content.firstElementChild.cloneNode(true)
    );
    item.dataset.threadId = thread.threadId;
    const title = thread.title || thread.threadId;
    item.querySelector('.thread-title').textContent = title;
    item.querySelector('.thread-status').textContent = thread.status || '';
    if (thread.threadId === chat.threadId) item.setAttribute('aria-current', 'true');
    const open = item.querySelector('.open');
    open.setAttribute('aria-label', `Open conversation: ${title}`);
    open.addEventListener('click', () => openConversation(thread.threadId));
    const remove = item.querySelector('.delete');
    remove.setAttribute('aria-label', `Delete conversation: ${title}`);
    remove.addEventListener('click', () => deleteConversation(thread.threadId, title));
    return item;
  });
  list.replaceChildren(...items);
  $('#no-threads').hidden = items.length > 0;
}

/**
 * The agent's suggestions (GET /agent/default) as chips under the composer: one click
 * sends it. The demo agent's "Tell me a long story" answers slowly, to try Stop.
 */
async function showSuggestions() {
  let agent = null;
  try {
    agent = await getJSON('/agent/default');
  } catch {
    return; // the chips are a convenience
  }
  const chips = ((agent && agent.suggestions) || []).map(({ suggestion }) => {
    const chip = el('button', 'chip', suggestion);
    chip.type = 'button';
    chip.addEventListener('click', () => {
      if (chat.busy || chat.awaitingApproval || tokenMissing()) return;
      sendMessage(suggestion);
    });
    return chip;
  });
  suggestionList.replaceChildren(...chips);
  suggestionList.hidden = chips.length === 0;
  setBusy(chat.busy);
}

/** The server wants a bearer token and the person has not given one yet. */
function tokenMissing() {
  return Boolean(pageConfig && pageConfig.tokenRequired) && !sessionStorage.getItem(TOKEN_KEY);
}

/**
 * When the server wants a bearer token (RELAYLINE_AUTH=token or jwt), a field for it:
 * every request then carries `Authorization: Bearer <token>`. Resolves once there is a
 * token (at once when the tab has one, or none is needed).
 */
function askForToken() {
  const form = $('#token-form');
  form.hidden = !(pageConfig && pageConfig.tokenRequired);
  if (!tokenMissing()) return Promise.resolve();
  prompt.disabled = true;
  sendButton.disabled = true;
  statusLine.textContent = 'This server wants an access token: enter it above.';
  $('#token').focus();
  return new Promise((resolve) => { tokenWaiter = resolve; });
}

/** Resolves askForToken() once the first token is given; null afterwards. */
let tokenWaiter = null;

composer.addEventListener('submit', (event) => {
  event.preventDefault();
  const content = prompt.value.trim();
  if (!content || chat.busy || chat.awaitingApproval) return;
  prompt.value = '';
  sendMessage(content);
});
$('#new-conversation').addEventListener('click', newConversation);
stopButton.addEventListener('click', stopRun);
// The first token lets the page start; one typed later (a new one, after a 401) is
// used from the next request on.
$('#token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = /** @type {HTMLInputElement} */ ($('#token')).value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  if (tokenWaiter) {
    tokenWaiter();
    tokenWaiter = null;
  } else {
    loadThreads();
  }
});

const pageConfig = await discoverDeliveries();
if (pageConfig && pageConfig.outcomeTexts) Object.assign(OUTCOMES, pageConfig.outcomeTexts);
await askForToken();
showSuggestions();
const saved = localStorage.getItem(THREAD_KEY);
if (saved && isThreadId(pageConfig, saved)) {
  useThread(saved);
  restore(saved);
} else {
  useThread(newThreadId());
  setBusy(false);
}
loadThreads();
watch();
