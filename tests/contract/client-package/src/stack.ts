// The running stack the pytest driver (tests/contract/test_client_package.py) started,
// and the plumbing both tests share. Node built-ins only: what is under test comes from
// the installed @relayline/client.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this suite through tests/contract/test_client_package.py`);
  return value;
}

export const BASE_URL = requireEnv('RELAYLINE_BASE_URL');
/** The scripted agent's answer to every message (tests/contract/push_agent.py). */
export const ANSWER = readFileSync(requireEnv('RELAYLINE_ANSWER_FILE'), 'utf8');
const PUBLISHER_KEY = requireEnv('RELAYLINE_MERCURE_PUBLISHER_KEY');

/** A generous bound for a loaded machine: running out of it is a failure. */
export const TIMEOUT_MS = 60_000;

export function newThreadId(prefix: string): string {
  return `${prefix}-${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

/** GET `path` of the web app, which must answer 200: its JSON body. */
export async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(new URL(path, BASE_URL), { signal: AbortSignal.timeout(TIMEOUT_MS) });
  const body: unknown = await response.json();
  assert.equal(response.status, 200, `GET ${path}: ${JSON.stringify(body)}`);
  return body as T;
}

export interface ThreadState {
  threadId: string;
  run: { runId: string; status: string } | null;
}

/**
 * Publish public probes on `topic` until one comes back on `source`: the hub registers
 * a subscriber before answering but may send no header before the first update, so
 * readiness is observed, not assumed. Probes are named events, which the consumer never
 * sees (it reads unnamed `message` events only).
 */
export async function awaitProbe(source: EventTarget, hubUrl: string, topic: string): Promise<void> {
  const probeEvent = 'relayline-probe';
  let arrived = false;
  const probed = new Promise<void>((resolve) => {
    source.addEventListener(probeEvent, () => {
      arrived = true;
      resolve();
    }, { once: true });
  });
  const deadline = Date.now() + TIMEOUT_MS;
  while (!arrived) {
    if (Date.now() > deadline) throw new Error(`the hub dispatched no probe within ${TIMEOUT_MS} ms`);
    const token = hs256({ mercure: { publish: [topic] } }, PUBLISHER_KEY);
    const response = await fetch(hubUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: new URLSearchParams({ topic, data: 'probe', type: probeEvent }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    assert.equal(response.status, 200, `publishing a probe: ${await response.text()}`);
    // This probe's round trip, bounded: a lost probe is followed by another.
    await Promise.race([probed, new Promise((resolve) => setTimeout(resolve, 200))]);
  }
}

function hs256(claims: object, key: string): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const unsigned = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(claims)}`;
  return `${unsigned}.${createHmac('sha256', key).update(unsigned).digest('base64url')}`;
}
