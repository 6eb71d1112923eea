// A native turn pushed through the Mercure hub, read with the push consumer imported
// from the installed package: an EventSource on the hub (the token of GET
// /mercure/token), subscribeToMercure, createProtocolStream, and envelopesRecovery for
// holes. Subscribed (and ready) before the POST: push keeps nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  createProtocolStream,
  envelopesRecovery,
  subscribeToMercure,
  type ProtocolObject,
} from '@relayline/client';
import { EventSource } from 'eventsource';

import { awaitProbe, probeTopic as newProbeTopic } from './mercure-probe.mjs';
import { ANSWER, BASE_URL, PUBLISHER_KEY, TIMEOUT_MS, getJson, newThreadId, type ThreadState } from './stack.js';

interface MercureGrant {
  token: string;
  hubUrl: string;
  topic: string;
}

interface MercureAccepted {
  threadId: string;
  delivery: string;
  topic: string;
  hubUrl: string;
  runId: string;
  streamId: string;
  envelopesUrl: string;
}

test('the push consumer of @relayline/client reads a native turn pushed through Mercure', async () => {
  const threadId = newThreadId('mercure');
  const grant = await getJson<MercureGrant>(`/mercure/token?threadId=${encodeURIComponent(threadId)}`);
  const probeTopic = newProbeTopic();
  const url = new URL(grant.hubUrl);
  url.searchParams.append('topic', grant.topic);
  url.searchParams.append('topic', probeTopic);
  url.searchParams.set('authorization', grant.token);
  const source = new EventSource(url);
  // What the hub delivered on the thread's topic, for the transport check.
  const envelopeTypes: unknown[] = [];
  source.addEventListener('message', (message) => {
    for (const envelope of JSON.parse(message.data) as { type?: unknown }[]) envelopeTypes.push(envelope.type);
  });
  try {
    await awaitProbe(source, { hubUrl: grant.hubUrl, topic: probeTopic, publisherKey: PUBLISHER_KEY, timeoutMs: TIMEOUT_MS });
    const stream = createProtocolStream<ProtocolObject>((callbacks) => subscribeToMercure(source, callbacks, undefined, {
      recovery: envelopesRecovery(`${BASE_URL}/api/threads/${encodeURIComponent(threadId)}`),
    }));

    const response = await fetch(`${BASE_URL}/api/threads/${encodeURIComponent(threadId)}/messages?delivery=mercure`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Hello' }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const accepted = (await response.json()) as MercureAccepted;
    assert.equal(response.status, 202, JSON.stringify(accepted));
    assert.equal(accepted.delivery, 'mercure');
    assert.equal(accepted.topic, grant.topic);
    assert.equal(accepted.envelopesUrl, `/api/threads/${threadId}/segments/${accepted.streamId}/envelopes`);

    const events: ProtocolObject[] = [];
    const reader = stream.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) events.push(read.value);

    const types = events.map((event) => event.type);
    assert.deepEqual(events.at(-1), { type: 'done', status: 'completed', runId: accepted.runId }, JSON.stringify(types));
    // a native `text` event carries `{messageId, content}`
    const text = events.filter((event) => event.type === 'text').map((event) => event.content).join('');
    assert.equal(text, ANSWER);
    assert.equal(envelopeTypes.at(-1), 'stream.completed', JSON.stringify(envelopeTypes));
    const state = await getJson<ThreadState>(`/api/threads/${threadId}`);
    assert.equal(state.run?.runId, accepted.runId);
    assert.equal(state.run?.status, 'completed');
  } finally {
    source.close();
  }
});
