// The running stack the pytest driver (tests/contract/test_client_package.py) started,
// and the plumbing both tests share. Node built-ins only: what is under test comes from
// the installed @relayline/client.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this suite through tests/contract/test_client_package.py`);
  return value;
}

export const BASE_URL = requireEnv('RELAYLINE_BASE_URL');
/** The scripted agent's answer to every message (tests/contract/push_agent.py). */
export const ANSWER = readFileSync(requireEnv('RELAYLINE_ANSWER_FILE'), 'utf8');
/** To publish the readiness probes of mercure-probe.mjs (public updates). */
export const PUBLISHER_KEY = requireEnv('RELAYLINE_MERCURE_PUBLISHER_KEY');

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
