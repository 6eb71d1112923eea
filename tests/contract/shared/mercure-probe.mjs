// Readiness of an EventSource on the Mercure hub, shared by the suites that subscribe
// to it: push/, and client-package/ (src/mercure-probe.mjs is a link to this file, which
// the driver copies into the scratch project). Node built-ins only, as stack.mjs.
//
// The hub registers a subscriber before answering but may send no response headers
// before the first update, so readiness is observed, not assumed: the EventSource also
// subscribes to a public probe topic, and probes (named events, which the relayline
// consumer never sees: it reads unnamed `message` events only) are published there
// until one comes back.
import { createHmac, randomUUID } from 'node:crypto';

const PROBE_EVENT = 'relayline-probe';
/** how long one probe may take to come back before another is published */
const PROBE_ROUND_TRIP_MS = 200;

/** A public topic of its own for one subscription's probes (add it to the hub URL). */
export function probeTopic() {
  return `urn:relayline:probe:${randomUUID()}`;
}

/**
 * Publish probes on `topic` until one arrives on `source`.
 * @param {EventTarget} source  the EventSource, subscribed to `topic` too
 * @param {{hubUrl: string, topic: string, publisherKey: string, timeoutMs: number}} hub
 * @returns {Promise<void>}
 */
export async function awaitProbe(source, { hubUrl, topic, publisherKey, timeoutMs }) {
  let arrived = false;
  const probed = new Promise((resolve) => {
    source.addEventListener(PROBE_EVENT, () => {
      arrived = true;
      resolve(undefined);
    }, { once: true });
  });
  const deadline = Date.now() + timeoutMs;
  while (!arrived) {
    if (Date.now() > deadline) throw new Error(`the hub dispatched no probe within ${timeoutMs} ms`);
    const response = await fetch(hubUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${hs256({ mercure: { publish: [topic] } }, publisherKey)}` },
      body: new URLSearchParams({ topic, data: 'probe', type: PROBE_EVENT }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (response.status !== 200) throw new Error(`publishing a probe: ${response.status} ${await response.text()}`);
    // This probe's round trip, bounded: a lost one is followed by another.
    await Promise.race([probed, new Promise((resolve) => setTimeout(resolve, PROBE_ROUND_TRIP_MS))]);
  }
}

/**
 * A compact HS256 JWT.
 * @param {object} claims
 * @param {string} key
 */
function hs256(claims, key) {
  const encode = (/** @type {object} */ value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const unsigned = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(claims)}`;
  return `${unsigned}.${createHmac('sha256', key).update(unsigned).digest('base64url')}`;
}
