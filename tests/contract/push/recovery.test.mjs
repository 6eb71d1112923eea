// A Pusher client with deliberately dropped events recovers them (issue 10, "Push").
// pusher-js subscribes as in push.test.mjs; fault injection between pusher-js and
// web/static/relayline-consumer.js drops envelopes (sequences 3 and 5 and one part of
// the fragmented 4, or everything before 4 as a page that subscribed late sees it),
// and the consumer, given `envelopesRecovery('<base>/api/threads/<id>')`, fills
// the hole from the segment's log (GET .../segments/<streamId>/envelopes). The
// protocol stream must be the whole segment, in order, once each: exactly what the log
// stored, and the answer history holds. A hole the server cannot supply (a thread that
// is not the caller's: 404) is a gap, as before. Runs for each Pusher delivery the
// driver names.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { EventSchemas } from '@ag-ui/core/schemas';

import { envelopesRecovery } from '../../../web/static/relayline-consumer.js';
import { ANSWER, BASE_URL, DELIVERIES, getJson, listen, newThreadId, postPushed } from './helpers.mjs';

const QUESTION = 'Tell me a long story in every script, please.';

function aguiTurn(threadId) {
  return {
    threadId,
    runId: 'client-run-1',
    state: {},
    messages: [{ id: 'u-1', role: 'user', content: QUESTION }],
    tools: [],
    context: [],
    forwardedProps: {},
  };
}

function vercelTurn(threadId) {
  return { id: threadId, trigger: 'submit-message', messages: [{ id: 'u-1', role: 'user', parts: [{ type: 'text', text: QUESTION }] }] };
}

/** Read a protocol stream to its end: the objects, or the error that ended it. */
async function readAll(stream) {
  const events = [];
  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { events };
      events.push(value);
    }
  } catch (error) {
    return { events, error };
  }
}

/** What the log stored for the segment, as the protocol stream yields it (the terminal ends it). */
async function storedEvents(accepted) {
  const { envelopes, ended } = await getJson(accepted.envelopesUrl);
  assert.equal(ended, true);
  assert.equal(envelopes.at(-1).type, 'stream.completed');
  return envelopes.slice(0, -1).map(({ type, data }) => ({ type, ...data }));
}

const recoveryFor = (threadId) => envelopesRecovery(new URL(`/api/threads/${threadId}`, BASE_URL).href);

for (const delivery of DELIVERIES.filter((name) => name.startsWith('pusher'))) {
  describe(`${delivery} recovery from the segment log`, () => {
    const listeners = [];
    after(() => listeners.forEach((listener) => listener.close()));

    test('events 3-5 dropped (4 in part) from an AG-UI turn are recovered, in order, once each', async () => {
      const threadId = newThreadId(`drop-${delivery}`);
      const listener = await listen(delivery, threadId);
      listeners.push(listener);
      // 3-5 are the answer's text events (3 and 4 ~13 kB, so fragmented on Pusher): 3
      // and 5 are lost whole, 4 loses one part (the log's whole event replaces the parts that
      // did arrive).
      const lost = [];
      const drop = (envelope) => {
        const { sequence } = envelope;
        const gone = sequence === 3 || sequence === 5 || (sequence === 4 && envelope.data?.index === 1);
        if (gone) lost.push(`${sequence}:${envelope.type}`);
        return gone;
      };
      const stream = listener.protocolStream((event) => EventSchemas.parse(event), {
        drop,
        recovery: recoveryFor(threadId),
      });
      const accepted = await postPushed('/agui', listener.transport, aguiTurn(threadId));
      assert.equal(accepted.envelopesUrl, `/api/threads/${threadId}/segments/${accepted.streamId}/envelopes`);
      const { events, error } = await readAll(stream);

      assert.equal(error, undefined, String(error?.stack ?? error));
      const lostOf = (sequence) => lost.filter((item) => item.startsWith(`${sequence}:`));
      assert.ok(lostOf(3).length > 0 && lostOf(5).length > 0, JSON.stringify(lost));
      assert.deepEqual(lostOf(4), ['4:stream.fragment'], JSON.stringify(lost));
      assert.deepEqual(events, (await storedEvents(accepted)).map((event) => EventSchemas.parse(event)));
      const text = events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta).join('');
      assert.ok(text === ANSWER, 'the recovered answer differs from the answer');
      const history = await getJson(`/agui/threads/${encodeURIComponent(threadId)}`);
      assert.deepEqual(history.messages.map(({ role, content }) => ({ role, content })), [
        { role: 'user', content: QUESTION },
        { role: 'assistant', content: text },
      ]);
    });

    test('a late subscriber (first envelope seen: 4) catches up on a Vercel turn', async () => {
      const threadId = newThreadId(`late-${delivery}`);
      const listener = await listen(delivery, threadId);
      listeners.push(listener);
      const stream = listener.protocolStream(undefined, {
        drop: (envelope) => envelope.sequence < 4,
        recovery: recoveryFor(threadId),
      });
      const accepted = await postPushed('/api/chat', listener.transport, vercelTurn(threadId));
      const { events, error } = await readAll(stream);

      assert.equal(error, undefined, String(error?.stack ?? error));
      assert.deepEqual(events, await storedEvents(accepted));
      const text = events.filter((e) => e.type === 'text-delta').map((e) => e.delta).join('');
      assert.ok(text === ANSWER, 'the recovered answer differs from the answer');
    });

    test('a hole the server cannot supply is still the gap error', async () => {
      const threadId = newThreadId(`gone-${delivery}`);
      const listener = await listen(delivery, threadId);
      listeners.push(listener);
      const stream = listener.protocolStream(undefined, {
        drop: (envelope) => [3, 4, 5].includes(envelope.sequence),
        // A thread nobody owns: its segments are a 404, as an expired log is a 410.
        recovery: recoveryFor(newThreadId('nobody')),
      });
      await postPushed('/api/chat', listener.transport, vercelTurn(threadId));
      const { events, error } = await readAll(stream);

      assert.equal(error?.message, 'Missing channel events');
      assert.ok(events.length <= 3, `events after the hole were delivered: ${events.length}`);
    });
  });
}
