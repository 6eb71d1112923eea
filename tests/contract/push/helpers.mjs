// Shared plumbing of the push-client contract suite: the running stack (from the
// pytest driver, tests/contract/test_push_clients.py), the two push transports as a
// browser uses them, and the relayline consumer that reassembles what they deliver.
//
// Environment (set by the driver):
//   RELAYLINE_BASE_URL          the stack's web app
//   RELAYLINE_PUSH_DELIVERIES   comma-separated: pusher, pusher-encrypted, mercure
//   RELAYLINE_PUSHER            JSON {key, host, port} of the soketi server
//   RELAYLINE_MERCURE_PUBLISHER_KEY  to publish readiness probes (public updates)
//   RELAYLINE_PUSH_ANSWER_FILE  the agent's answer to every message (UTF-8)
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { EventSource } from 'eventsource';
import Pusher from 'pusher-js';

import {
  createProtocolStream,
  subscribeToMercure,
  subscribeToPusher,
} from '../../../web/static/relayline-consumer.js';
import { awaitProbe, probeTopic as newProbeTopic } from '../shared/mercure-probe.mjs';
import { Backend, requireEnv } from '../shared/stack.mjs';

const requiredEnv = (name) => requireEnv(name, 'test_push_clients.py');
export const BASE_URL = requiredEnv('RELAYLINE_BASE_URL');
export const DELIVERIES = requiredEnv('RELAYLINE_PUSH_DELIVERIES').split(',');
export const ANSWER = readFileSync(requiredEnv('RELAYLINE_PUSH_ANSWER_FILE'), 'utf8');
/** a generous bound for a loaded machine: running out of it is a failure */
const TIMEOUT_MS = 60_000;

export function newThreadId(prefix) {
  return `${prefix}-${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

// ---------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------

const backend = new Backend({ baseUrl: BASE_URL });

/** GET `path` of the web app, which must answer 200: its JSON body. */
export const getJson = (path) => backend.getOk(path);

/** POST a turn with `?delivery=<pusher|mercure>`: the 202 body says where it is pushed. */
export async function postPushed(path, delivery, body) {
  const response = await fetch(new URL(`${path}?delivery=${delivery}`, BASE_URL), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  const answer = await response.json();
  assert.equal(response.status, 202, `POST ${path}: ${JSON.stringify(answer)}`);
  assert.match(response.headers.get('content-type'), /^application\/json/);
  return answer;
}

// ---------------------------------------------------------------------------------------
// Listeners: subscribed (and ready) first, then the protocol stream of one segment
// ---------------------------------------------------------------------------------------

/**
 * @typedef {object} Listener
 * @property {string} transport   'pusher' or 'mercure': the `?delivery=` to ask for
 * @property {string[]} envelopeTypes  the type of every envelope the transport delivered
 * @property {(parse?: (event: object) => unknown) => ReadableStream} protocolStream
 * @property {() => void} close
 */

/**
 * Subscribe to the thread's channel or topic as a browser would, and resolve once the
 * subscription is live: only then may the turn be POSTed (push keeps nothing).
 * @param {string} delivery  'pusher', 'pusher-encrypted' or 'mercure'
 * @param {string} threadId
 * @returns {Promise<Listener>}
 */
export function listen(delivery, threadId) {
  if (delivery === 'mercure') return listenMercure(threadId);
  return listenPusher(threadId, delivery === 'pusher-encrypted');
}

/**
 * pusher-js 8 with `channelAuthorization` at the stack's /pusher/auth; on a
 * `private-encrypted-` channel pusher-js decrypts each event itself.
 */
async function listenPusher(threadId, encrypted) {
  const { key, host, port } = JSON.parse(requiredEnv('RELAYLINE_PUSHER'));
  const pusher = new Pusher(key, {
    wsHost: host,
    wsPort: port,
    forceTLS: false,
    enabledTransports: ['ws'],
    disableStats: true,
    cluster: 'mt1',
    channelAuthorization: { endpoint: new URL('/pusher/auth', BASE_URL).href, transport: 'ajax' },
  });
  const name = `${encrypted ? 'private-encrypted-' : 'private-'}thread-${threadId}`;
  const channel = pusher.subscribe(name);
  const envelopeTypes = [];
  channel.bind_global((event) => {
    if (!event.startsWith('pusher:')) envelopeTypes.push(event);
  });
  try {
    await withTimeout(new Promise((resolve, reject) => {
      channel.bind('pusher:subscription_succeeded', resolve);
      channel.bind('pusher:subscription_error', (error) => reject(new Error(`subscription refused: ${JSON.stringify(error)}`)));
      pusher.connection.bind('error', (error) => reject(new Error(`pusher-js connection error: ${JSON.stringify(error)}`)));
    }), `pusher-js subscribing to ${name}`);
  } catch (error) {
    pusher.disconnect();
    throw error;
  }
  return {
    transport: 'pusher',
    channel: name,
    envelopeTypes,
    protocolStream: (parse, { drop, ...options } = {}) => createProtocolStream(
      (callbacks) => subscribeToPusher(drop ? dropping(channel, drop) : channel, callbacks, undefined, options),
      parse,
    ),
    close: () => pusher.disconnect(),
  };
}

/**
 * Fault injection: `channel` as the consumer sees it when the events `drop(envelope)`
 * picks never reach it (lost on the way, or sent before the page subscribed).
 * @param {import('pusher-js').Channel} channel
 * @param {(envelope: {sequence: number}) => boolean} drop
 */
function dropping(channel, drop) {
  const bound = new Map();
  return {
    bind_global(callback) {
      const filtered = (name, data) => {
        if (!name.startsWith('pusher') && drop(typeof data === 'string' ? JSON.parse(data) : data)) return;
        callback(name, data);
      };
      bound.set(callback, filtered);
      channel.bind_global(filtered);
    },
    unbind_global(callback) {
      channel.unbind_global(bound.get(callback));
      bound.delete(callback);
    },
  };
}

/**
 * EventSource on the Mercure hub with the subscriber token of GET /mercure/token, given
 * as the `authorization` query parameter (EventSource cannot send headers), as the demo
 * page does. Ready once a probe on its own public topic came back (../shared/mercure-probe.mjs).
 */
async function listenMercure(threadId) {
  const grant = await getJson(`/mercure/token?threadId=${encodeURIComponent(threadId)}`);
  const probeTopic = newProbeTopic();
  const url = new URL(grant.hubUrl);
  url.searchParams.append('topic', grant.topic);
  url.searchParams.append('topic', probeTopic);
  url.searchParams.set('authorization', grant.token);
  const source = new EventSource(url);
  const envelopeTypes = [];
  source.addEventListener('message', (message) => {
    // Only a record for the transport checks: the consumer judges (and rejects) frames.
    try {
      for (const envelope of JSON.parse(message.data)) envelopeTypes.push(envelope?.type);
    } catch {
      envelopeTypes.push('<not a JSON array>');
    }
  });
  try {
    await awaitProbe(source, {
      hubUrl: grant.hubUrl,
      topic: probeTopic,
      publisherKey: requiredEnv('RELAYLINE_MERCURE_PUBLISHER_KEY'),
      timeoutMs: TIMEOUT_MS,
    });
  } catch (error) {
    source.close();
    throw error;
  }
  return {
    transport: 'mercure',
    topic: grant.topic,
    hubUrl: grant.hubUrl,
    envelopeTypes,
    protocolStream: (parse) => createProtocolStream((callbacks) => {
      const subscription = subscribeToMercure(source, callbacks);
      // EventSource reconnects by itself; a subscription it gives up on would never end.
      const closed = () => {
        if (source.readyState !== EventSource.CLOSED) return;
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
    }, parse),
    close: () => source.close(),
  };
}

function withTimeout(promise, what) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------------------------------
// Checks shared by both protocols
// ---------------------------------------------------------------------------------------

/** The 202 body of DESIGN section 3 for `listener`'s transport. */
export function assertAccepted(accepted, listener, threadId) {
  assert.equal(accepted.threadId, threadId);
  assert.equal(accepted.delivery, listener.transport);
  assert.match(accepted.runId, /^run_[0-9a-f]{32}$/);
  if (listener.transport === 'pusher') {
    assert.equal(accepted.channel, listener.channel);
    assert.equal(accepted.authEndpoint, '/pusher/auth');
  } else {
    assert.equal(accepted.topic, listener.topic);
    assert.equal(accepted.hubUrl, listener.hubUrl);
    assert.equal(accepted.tokenEndpoint, `/mercure/token?threadId=${threadId}`);
  }
}

/**
 * What the transport carried: on Pusher (10 kB events) the answer's text events went
 * through the fragment codec as `stream.fragment` envelopes; a Mercure update holds up
 * to 1 MiB, so there they arrive whole. Either way the segment ends `stream.completed`.
 */
export function assertTransported(listener) {
  const fragments = listener.envelopeTypes.filter((type) => type === 'stream.fragment').length;
  if (listener.transport === 'pusher') {
    assert.ok(fragments > 0, `no stream.fragment envelope among ${JSON.stringify(listener.envelopeTypes)}`);
  }
  assert.equal(listener.envelopeTypes.at(-1), 'stream.completed');
}

/** GET /api/threads/<id>: the durable run is the one the 202 named, and it completed. */
export async function assertRunCompleted(threadId, runId) {
  const { run } = await getJson(`/api/threads/${encodeURIComponent(threadId)}`);
  assert.equal(run.runId, runId);
  assert.equal(run.status, 'completed');
}
